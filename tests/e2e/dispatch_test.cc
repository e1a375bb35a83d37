// Target dispatch end to end: a hand-written tensor program attached with
// --tir-library replaces the generated concat, and cpu-blas sends a large dense
// layer to OpenBLAS; both executables must match numpy (scripts/gen_fixtures.py).
#include <gtest/gtest.h>

#include "compiler/driver/compile.h"
#include "compiler/ir/printer.h"
#include "tests/e2e/e2e_test_util.h"
#include "vm/virtual_machine.h"

namespace strata::testing {
namespace {

struct Compiled {
  std::string lowered;  // the module after the pipeline, as text
  std::shared_ptr<const vm::Executable> executable;
};

Compiled CompileWith(const std::string& example, const driver::CompileOptions& options) {
  Compiled out;
  auto module = driver::LoadModuleFile(SourcePath(example));
  EXPECT_TRUE(module.ok()) << module.status().message();
  if (!module.ok()) return out;
  auto lowered = driver::Lower(*module, options);
  EXPECT_TRUE(lowered.ok()) << lowered.status().message();
  if (lowered.ok()) out.lowered = ir::PrintModule(*lowered);
  auto bytes = driver::Compile(std::move(module).value(), options);
  EXPECT_TRUE(bytes.ok()) << bytes.status().message();
  if (!bytes.ok()) return out;
  auto exe = vm::Executable::LoadFromBytes(*bytes);
  EXPECT_TRUE(exe.ok()) << exe.status().message();
  if (exe.ok()) out.executable = *exe;
  return out;
}

bool Contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(Dispatch, HandWrittenConcatFromATirLibraryReplacesTheGeneratedOne) {
  driver::CompileOptions with_library;
  with_library.tir_library_paths = {SourcePath("examples/custom_concat/concat_kernel.sir")};
  Compiled custom = CompileWith("examples/custom_concat/model.sir", with_library);
  Compiled generated = CompileWith("examples/custom_concat/model.sir", {});
  ASSERT_NE(custom.executable, nullptr);
  ASSERT_NE(generated.executable, nullptr);
  EXPECT_TRUE(Contains(custom.lowered, "@concat_rows(")) << custom.lowered;
  EXPECT_FALSE(Contains(custom.lowered, "prim_func @concat(")) << custom.lowered;
  // The generated concat fuses with the relu after it; the hand-written one
  // declares no op_pattern, so it is opaque and the relu stays its own kernel.
  EXPECT_TRUE(Contains(generated.lowered, "prim_func @fused_concat_relu(")) << generated.lowered;
  EXPECT_FALSE(Contains(custom.lowered, "fused_")) << custom.lowered;

  for (const auto& compiled : {custom, generated}) {
    vm::VirtualMachine machine(compiled.executable);
    for (int n : {1, 3, 17}) {
      SCOPED_TRACE("n = " + std::to_string(n));
      const std::string tag = std::to_string(n);
      std::vector<vm::Value> args = {LoadFixture("custom_concat/x_" + tag + ".npy"),
                                     LoadFixture("custom_concat/y_" + tag + ".npy")};
      auto result = machine.Invoke("main", args);
      ASSERT_TRUE(result.ok()) << result.status().message();
      ExpectTensorNear(*result, LoadFixture("custom_concat/z_" + tag + ".npy"), 0.0f, 0.0f);
    }
  }
}

TEST(Dispatch, CpuBlasTakesTheLargeDenseLayerAndLegalizeOpsTheRest) {
  driver::CompileOptions blas;
  blas.passes_before.emplace_back("LegalizeOps", "cpu-blas");
  Compiled compiled = CompileWith("examples/mlp.sir", blas);
  ASSERT_NE(compiled.executable, nullptr);
  EXPECT_TRUE(Contains(compiled.lowered, "call_packed(\"strata.blas.dense_bias\", x, w1, b1,")) << compiled.lowered;
  EXPECT_TRUE(Contains(compiled.lowered, "prim_func @dense(")) << compiled.lowered;  // the small layer
  EXPECT_TRUE(Contains(compiled.lowered, "prim_func @gelu(")) << compiled.lowered;

  vm::VirtualMachine machine(compiled.executable);
  for (int n : {1, 5, 33}) {
    SCOPED_TRACE("batch = " + std::to_string(n));
    std::vector<vm::Value> args = {LoadFixture("mlp/x_" + std::to_string(n) + ".npy"), LoadFixture("mlp/w1.npy"),
                                   LoadFixture("mlp/b1.npy"), LoadFixture("mlp/w2.npy"), LoadFixture("mlp/b2.npy")};
    auto result = machine.Invoke("main", args);
    ASSERT_TRUE(result.ok()) << result.status().message();
    ExpectTensorNear(*result, LoadFixture("mlp/y_" + std::to_string(n) + ".npy"), 1e-4f, 1e-5f);
  }
}

TEST(Dispatch, UnknownDispatchPassListsTheRegisteredOnes) {
  driver::CompileOptions options;
  options.passes_before.emplace_back("LegalizeOps", "gpu-magic");
  auto module = driver::LoadModuleFile(SourcePath("examples/mlp.sir"));
  ASSERT_TRUE(module.ok());
  auto bytes = driver::Compile(std::move(module).value(), options);
  ASSERT_FALSE(bytes.ok());
  EXPECT_EQ(bytes.status().message().rfind("unknown pass 'gpu-magic' (registered: ", 0), 0u)
      << bytes.status().message();
  EXPECT_TRUE(Contains(bytes.status().message(), "cpu-blas")) << bytes.status().message();
}

}  // namespace
}  // namespace strata::testing
