// Bad input through the whole stack: each case is a clear error, never a crash,
// and the VM stays usable afterwards.
#include <gtest/gtest.h>

#include "compiler/driver/compile.h"
#include "compiler/ir/parser.h"
#include "tests/e2e/e2e_test_util.h"
#include "vm/tensor_io/npy.h"
#include "vm/virtual_machine.h"

namespace strata::testing {
namespace {

vm::Value Inline(const std::string& text) {
  auto tensor = vm::ParseInlineTensor(text);
  EXPECT_TRUE(tensor.ok()) << tensor.status().message();
  return tensor.ok() ? vm::Value::FromTensor(std::move(tensor).value()) : vm::Value();
}

class MatmulReluBadInput : public ::testing::Test {
 protected:
  void SetUp() override {
    executable_ = CompileExample("examples/matmul_relu.sir");
    ASSERT_NE(executable_, nullptr);
    machine_ = std::make_unique<vm::VirtualMachine>(executable_);
  }
  std::string InvokeError(std::vector<vm::Value> args, const std::string& function = "main") {
    auto result = machine_->Invoke(function, args);
    EXPECT_FALSE(result.ok()) << "expected an error";
    return result.ok() ? "" : result.status().message();
  }
  void ExpectGoodCallStillWorks() {
    std::vector<vm::Value> args = {Inline("2x3xf32=1,2,3,4,5,6"), Inline("3x2xf32=1,-1,1,-1,1,-1")};
    auto result = machine_->Invoke("main", args);
    ASSERT_TRUE(result.ok()) << result.status().message();
    auto values = result->tensor()->ToVector<float>();
    ASSERT_TRUE(values.ok());
    // [[1,2,3],[4,5,6]] @ [[1,-1],[1,-1],[1,-1]] = [[6,-6],[15,-15]], relu -> [[6,0],[15,0]]
    EXPECT_EQ(*values, (std::vector<float>{6, 0, 15, 0}));
  }
  std::shared_ptr<const vm::Executable> executable_;
  std::unique_ptr<vm::VirtualMachine> machine_;
};

TEST_F(MatmulReluBadInput, ContradictingShapeNamesFunctionParameterDimensionVariableAndValues) {
  // x is 3x4 binds m = 3, n = 4; w is 5x2 but its dimension 0 must be n.
  std::string error =
      InvokeError({Inline("3x4xf32=1,2,3,4,5,6,7,8,9,10,11,12"), Inline("5x2xf32=1,2,3,4,5,6,7,8,9,10")});
  EXPECT_NE(error.find("main"), std::string::npos) << error;
  EXPECT_NE(error.find("'w'"), std::string::npos) << error;
  EXPECT_NE(error.find("dimension 0"), std::string::npos) << error;
  EXPECT_NE(error.find("n = 4"), std::string::npos) << error;
  EXPECT_NE(error.find("got 5"), std::string::npos) << error;
  ExpectGoodCallStillWorks();
}

TEST_F(MatmulReluBadInput, WrongDtypeIsReported) {
  std::string error = InvokeError({Inline("2x3xi32=1,2,3,4,5,6"), Inline("3x2xf32=1,-1,1,-1,1,-1")});
  EXPECT_NE(error.find("'x'"), std::string::npos) << error;
  EXPECT_NE(error.find("f32"), std::string::npos) << error;
  EXPECT_NE(error.find("i32"), std::string::npos) << error;
  ExpectGoodCallStillWorks();
}

TEST_F(MatmulReluBadInput, WrongRankIsReported) {
  std::string error = InvokeError({Inline("6xf32=1,2,3,4,5,6"), Inline("3x2xf32=1,-1,1,-1,1,-1")});
  EXPECT_NE(error.find("'x'"), std::string::npos) << error;
  EXPECT_NE(error.find("2"), std::string::npos) << error;
  ExpectGoodCallStillWorks();
}

TEST_F(MatmulReluBadInput, MissingInputNamesTheParameters) {
  std::string error = InvokeError({Inline("2x3xf32=1,2,3,4,5,6")});
  EXPECT_NE(error.find("main"), std::string::npos) << error;
  EXPECT_NE(error.find("w"), std::string::npos) << error;
  EXPECT_NE(error.find("2"), std::string::npos) << error;
  ExpectGoodCallStillWorks();
}

TEST_F(MatmulReluBadInput, UnknownFunctionListsEntryPoints) {
  std::string error = InvokeError({}, "mian");
  EXPECT_NE(error.find("mian"), std::string::npos) << error;
  EXPECT_NE(error.find("main"), std::string::npos) << error;
  ExpectGoodCallStillWorks();
}

// Every byte of a compiled executable (tables, bytecode, constants and the native
// code) flipped in turn, then loaded and run in this process: each load either
// fails with a one-line error or the call runs or fails cleanly. A crash here is
// a crash in a service that loads a damaged file. Loaded without verifying the
// checksums (which refuse every flip, tests/serialization/checksum_test.cc), so
// that the damage reaches the verifiers and the interpreter.
TEST(DamagedExecutable, EveryFlippedByteOfACompiledModelFailsCleanlyOrRuns) {
  auto source = driver::LoadModuleFile(SourcePath("examples/matmul_relu.sir"));
  ASSERT_TRUE(source.ok()) << source.status().message();
  auto bytes = driver::Compile(std::move(source).value(), {});
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  std::vector<vm::Value> args = {Inline("2x3xf32=1,2,3,4,5,6"), Inline("3x2xf32=1,-1,1,-1,1,-1")};
  int refused = 0, ran = 0, failed_at_run_time = 0;
  vm::LoadOptions unchecked;
  unchecked.verify_checksums = false;
  for (size_t n = 0; n < 3 * bytes->size(); ++n) {
    const size_t i = n % bytes->size();
    std::vector<uint8_t> damaged = *bytes;
    damaged[i] ^= n < bytes->size() ? 0xFF : n < 2 * bytes->size() ? 0x01 : 0x80;
    auto exe = vm::Executable::LoadFromBytes(damaged, unchecked);
    if (!exe.ok()) {
      ++refused;
      EXPECT_EQ(exe.status().message().find('\n'), std::string::npos) << exe.status().message();
      continue;
    }
    vm::VirtualMachine machine(*exe);
    machine.SetStepBudget(1000);
    auto result = machine.Invoke("main", args);
    ++(result.ok() ? ran : failed_at_run_time);
    if (!result.ok()) {
      EXPECT_EQ(result.status().message().find('\n'), std::string::npos) << result.status().message();
    }
  }
  // The native code is most of the file and its checksum, checked in any case,
  // refuses every flip there.
  EXPECT_GT(refused, static_cast<int>(3 * bytes->size() * 3 / 4));
  EXPECT_GT(ran + failed_at_run_time, 0);
}

TEST(CompileErrors, SyntaxErrorGivesFileLineColumnAndWhatWasExpected) {
  const char* text =
      "func @main(x: Tensor[(n,), f32]) -> Tensor[(n,), f32] {\n"
      "  y = call_tir(@f, (x,) Tensor[(n,), f32])\n"
      "  return y\n"
      "}\n";
  auto module = ir::ParseModule(text, "bad.sir");
  ASSERT_FALSE(module.ok());
  EXPECT_EQ(module.status().message().rfind("bad.sir:2:", 0), 0u) << module.status().message();
  EXPECT_NE(module.status().message().find("expected"), std::string::npos) << module.status().message();
}

TEST(CompileErrors, TypeErrorInTensorProgramGivesLocation) {
  const char* text =
      "prim_func @f(A: Buffer[(n,), f32], B: Buffer[(n,), i32]) {\n"
      "  for i in range(0, n) {\n"
      "    B[i] = A[i] + 1.0\n"
      "  }\n"
      "}\n";
  auto module = ir::ParseModule(text, "types.sir");
  // Storing an f32 value into an i32 buffer is a type error at line 3.
  ASSERT_FALSE(module.ok());
  EXPECT_EQ(module.status().message().rfind("types.sir:3:", 0), 0u) << module.status().message();
}

TEST(CompileErrors, CallTirToMissingFunctionIsACompileError) {
  const char* text =
      "func @main(x: Tensor[(n,), f32]) -> Tensor[(n,), f32] {\n"
      "  y: Tensor[(n,), f32] = call_tir(@nope, (x,), Tensor[(n,), f32])\n"
      "  return y\n"
      "}\n";
  auto module = ir::ParseModule(text, "missing.sir");
  ASSERT_FALSE(module.ok());
  EXPECT_NE(module.status().message().find("nope"), std::string::npos) << module.status().message();
}

TEST(CompileErrors, CallTirArityMismatchNamesTheFunction) {
  const char* text =
      "prim_func @copy(A: Buffer[(n,), f32], B: Buffer[(n,), f32]) {\n"
      "  for i in range(0, n) {\n"
      "    B[i] = A[i]\n"
      "  }\n"
      "}\n"
      "func @main(x: Tensor[(n,), f32]) -> Tensor[(n,), f32] {\n"
      "  y: Tensor[(n,), f32] = call_tir(@copy, (x, x), Tensor[(n,), f32])\n"
      "  return y\n"
      "}\n";
  auto module = ir::ParseModule(text, "arity.sir");
  ASSERT_TRUE(module.ok()) << module.status().message();
  auto bytes = driver::Compile(std::move(module).value(), {});
  ASSERT_FALSE(bytes.ok());
  EXPECT_NE(bytes.status().message().find("copy"), std::string::npos) << bytes.status().message();
}

}  // namespace
}  // namespace strata::testing
