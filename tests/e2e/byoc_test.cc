// BYOC end to end: zoo models compiled with --byoc (oneDNN and the C-source
// tutorial backend) against onnxruntime's outputs at every exported shape, what
// `strata inspect` reports, and the errors of a failing codegen and of an
// external function the runtime lacks.
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "compiler/byoc/backend.h"
#include "compiler/driver/compile.h"
#include "compiler/frontend/onnx/onnx_importer.h"
#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"
#include "compiler/pattern/dataflow_pattern.h"
#include "tests/e2e/e2e_test_util.h"
#include "vm/tensor_io/npy.h"
#include "vm/virtual_machine.h"

namespace strata {
namespace {

namespace fs = std::filesystem;
using testing::ExpectTensorNear;
using testing::RunCommand;
using testing::SourcePath;

StatusOr<std::vector<uint8_t>> CompileZoo(const std::string& model, const std::string& backend) {
  STRATA_ASSIGN_OR_RETURN(ir::IRModule module,
                          frontend::ImportOnnxFile(SourcePath("tests/fixtures/onnx/" + model + "/model.onnx")));
  driver::CompileOptions options;
  options.byoc_backends = {backend};
  return driver::Compile(std::move(module), options);
}

std::vector<std::string> OffloadedFunctions(const vm::Executable& exe, const std::string& backend) {
  std::vector<std::string> names;
  for (const vm::VMFunction& f : exe.functions()) {
    if (f.backend == backend) names.push_back(f.name);
  }
  return names;
}

// Runs every exported shape of `model` (run_0, run_1, ...) and compares with onnxruntime.
void ExpectMatchesReferences(const std::string& model, const std::vector<uint8_t>& bytes) {
  auto exe = vm::Executable::LoadFromBytes(bytes);
  ASSERT_TRUE(exe.ok()) << exe.status().message();
  vm::VirtualMachine machine(exe.value());
  const fs::path dir = SourcePath("tests/fixtures/onnx/" + model);
  int runs = 0;
  for (; fs::exists(dir / ("run_" + std::to_string(runs))); ++runs) {
    const fs::path run = dir / ("run_" + std::to_string(runs));
    std::vector<vm::Value> inputs;
    for (int i = 0; fs::exists(run / ("in" + std::to_string(i) + ".npy")); ++i) {
      inputs.push_back(
          vm::Value::FromTensor(vm::ReadNpyFile((run / ("in" + std::to_string(i) + ".npy")).string()).value()));
    }
    auto result = machine.Invoke("main", inputs);
    ASSERT_TRUE(result.ok()) << model << " " << run << ": " << result.status().message();
    SCOPED_TRACE(model + " " + run.string());
    ExpectTensorNear(result.value(), vm::Value::FromTensor(vm::ReadNpyFile((run / "out0.npy").string()).value()), 1e-4f,
                     1e-5f);
  }
  EXPECT_GE(runs, 3) << "every zoo model is exported at three shapes";
}

TEST(ByocDnnl, MlpMatchesOnnxRuntimeAtEveryBatchSize) {
  auto bytes = CompileZoo("mlp", "dnnl");
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  ExpectMatchesReferences("mlp", bytes.value());
  auto exe = vm::Executable::LoadFromBytes(bytes.value());
  ASSERT_TRUE(exe.ok());
  // fc1 + bias (GELU follows, not offloadable), fc2 + bias + relu, fc3 + bias.
  EXPECT_EQ(OffloadedFunctions(*exe.value(), "dnnl"),
            (std::vector<std::string>{"strata.dnnl.dense_bias", "strata.dnnl.dense_bias_relu"}));
}

TEST(ByocDnnl, CnnMatchesOnnxRuntimeAtEveryShape) {
  auto bytes = CompileZoo("cnn", "dnnl");
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  ExpectMatchesReferences("cnn", bytes.value());
  auto exe = vm::Executable::LoadFromBytes(bytes.value());
  ASSERT_TRUE(exe.ok());
  // The stem's batch_norm is folded into its conv (FoldBatchNorm), so the stem
  // is conv2d + bias + relu, the first offloaded function.
  EXPECT_EQ(
      OffloadedFunctions(*exe.value(), "dnnl"),
      (std::vector<std::string>{"strata.dnnl.conv2d_bias_relu", "strata.dnnl.conv2d_bias", "strata.dnnl.dense_bias"}));
}

TEST(ByocCCodegen, MlpRunsTheGeneratedCodeAndMatchesOnnxRuntime) {
  auto bytes = CompileZoo("mlp", "ccodegen");
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  ExpectMatchesReferences("mlp", bytes.value());
  auto exe = vm::Executable::LoadFromBytes(bytes.value());
  ASSERT_TRUE(exe.ok());
  std::vector<std::string> offloaded = OffloadedFunctions(*exe.value(), "ccodegen");
  EXPECT_EQ(offloaded,
            (std::vector<std::string>{"ccodegen_dense_bias_0", "ccodegen_dense_bias_relu_0", "ccodegen_dense_bias_1"}));
  // The code generated for each offloaded function (fc1; fc2 + fc3) travels as
  // a native module of its own, after the tensor programs'.
  ASSERT_EQ(exe.value()->native_modules().size(), 3u);
  EXPECT_EQ(exe.value()->native_modules()[0].backend, "");
  EXPECT_EQ(exe.value()->native_modules()[1].backend, "ccodegen");
  EXPECT_EQ(exe.value()->native_modules()[2].backend, "ccodegen");
  EXPECT_EQ(exe.value()->native_modules()[2].symbols,
            (std::vector<std::string>{"ccodegen_dense_bias_relu_0", "ccodegen_dense_bias_1"}));
}

TEST(ByocCli, InspectListsWhatWasOffloadedToWhichBackend) {
  const std::string stx = (fs::temp_directory_path() / "strata_byoc_cli_test.stx").string();
  std::string output;
  ASSERT_EQ(RunCommand(std::string(STRATA_BINARY) + " compile " + SourcePath("tests/fixtures/onnx/mlp/model.onnx") +
                           " --byoc ccodegen -o " + stx,
                       &output),
            0)
      << output;
  ASSERT_EQ(RunCommand(std::string(STRATA_BINARY) + " inspect " + stx, &output), 0) << output;
  EXPECT_NE(output.find("offloaded to BYOC backends (3):"), std::string::npos) << output;
  EXPECT_NE(output.find("ccodegen  ccodegen_dense_bias_relu_0  generated code in native_modules[2]"), std::string::npos)
      << output;
  EXPECT_NE(output.find("generated by BYOC backend ccodegen"), std::string::npos) << output;
  ASSERT_EQ(RunCommand(std::string(STRATA_BINARY) + " compile " + SourcePath("tests/fixtures/onnx/mlp/model.onnx") +
                           " --byoc nosuch -o " + stx,
                       &output),
            1);
  EXPECT_NE(output.find("unknown BYOC backend 'nosuch' (registered: ccodegen, dnnl"), std::string::npos) << output;
  fs::remove(stx);
}

// Backends registered by the tests: relu offloaded to a codegen that fails, or
// to a library function no runtime has.
void RegisterTestBackends() {
  static const bool registered = [] {
    auto relu_pattern = [](const std::string& backend) {
      return pattern::FusionPattern{backend + ".relu", pattern::IsOp("relu", {pattern::Wildcard()}), {}, nullptr};
    };
    Status failing =
        byoc::RegisterBackend(byoc::Backend{"failing",
                                            {relu_pattern("failing")},
                                            [](const byoc::OffloadedFunction&) -> StatusOr<byoc::CodegenResult> {
                                              return Status::Error("the device cannot run relu on this shape");
                                            },
                                            "test"});
    Status missing =
        byoc::RegisterBackend(byoc::Backend{"absent",
                                            {relu_pattern("absent")},
                                            [](const byoc::OffloadedFunction& f) -> StatusOr<byoc::CodegenResult> {
                                              byoc::CodegenResult result;
                                              for (const byoc::CompositeCall& c : f.composites)
                                                result.composite_calls[c.function_name] = {"absent.relu", {}};
                                              return result;
                                            },
                                            "test"});
    EXPECT_TRUE(failing.ok()) << failing.message();
    EXPECT_TRUE(missing.ok()) << missing.message();
    return true;
  }();
  (void)registered;
}

constexpr const char* kReluModule = R"(
func @main(x: Tensor[(n, 4), f32]) -> Tensor[(n, 4), f32] {
  y = relu(x)
  return y
}
)";

TEST(ByocRegion, ABackendMayTakeAWholeOffloadedFunctionAsOneCall) {
  // Two composites (relu -> relu) merged into one offloaded function, which the
  // backend implements as one external function: one call for the region.
  static const bool registered = [] {
    Status status = byoc::RegisterBackend(byoc::Backend{
        "region",
        {pattern::FusionPattern{"region.relu", pattern::IsOp("relu", {pattern::Wildcard()}), {}, nullptr}},
        [](const byoc::OffloadedFunction& f) -> StatusOr<byoc::CodegenResult> {
          byoc::CodegenResult result;
          EXPECT_EQ(f.composites.size(), 2u);
          result.function_call = byoc::ExternalCall{"region.relu_relu", {}};
          return result;
        },
        "test"});
    EXPECT_TRUE(status.ok()) << status.message();
    return true;
  }();
  (void)registered;
  auto module = ir::ParseModule(R"(
func @main(x: Tensor[(n, 4), f32]) -> Tensor[(n, 4), f32] {
  y = relu(x)
  z = relu(y)
  return z
}
)",
                                "relu2.sir");
  ASSERT_TRUE(module.ok());
  driver::CompileOptions options;
  options.byoc_backends = {"region"};
  auto lowered = driver::Lower(std::move(module).value(), options);
  ASSERT_TRUE(lowered.ok()) << lowered.status().message();
  const std::string text = ir::PrintModule(lowered.value());
  EXPECT_NE(text.find("call_packed(\"region.relu_relu\", x, out)"), std::string::npos) << text;
  EXPECT_EQ(text.find("relu("), std::string::npos) << "nothing is left for LegalizeOps:\n" << text;
  ASSERT_EQ(lowered.value().external_modules().size(), 1u);
  EXPECT_EQ(lowered.value().external_modules()[0].symbols, std::vector<std::string>{"region.relu_relu"});
}

TEST(ByocErrors, ACodegenFailureNamesTheFunctionAndTheBackend) {
  RegisterTestBackends();
  auto module = ir::ParseModule(kReluModule, "relu.sir");
  ASSERT_TRUE(module.ok());
  driver::CompileOptions options;
  options.byoc_backends = {"failing"};
  auto bytes = driver::Compile(std::move(module).value(), options);
  ASSERT_FALSE(bytes.ok());
  EXPECT_EQ(bytes.status().message(),
            "RunCodegen: backend 'failing' failed to generate code for offloaded function 'failing_main_0': the device "
            "cannot run relu on this shape");
}

TEST(ByocErrors, AMissingExternalFunctionAtLoadNamesTheFunctionAndTheBackend) {
  RegisterTestBackends();
  auto module = ir::ParseModule(kReluModule, "relu.sir");
  ASSERT_TRUE(module.ok());
  driver::CompileOptions options;
  options.byoc_backends = {"absent"};
  auto bytes = driver::Compile(std::move(module).value(), options);
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  auto exe = vm::Executable::LoadFromBytes(bytes.value());
  ASSERT_FALSE(exe.ok());
  EXPECT_NE(
      exe.status().message().find(
          "library function 'absent.relu' (offloaded to BYOC backend 'absent') is not registered in this runtime"),
      std::string::npos)
      << exe.status().message();
}

}  // namespace
}  // namespace strata
