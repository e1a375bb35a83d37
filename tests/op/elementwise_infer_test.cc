// Shape and dtype inference of the elementwise operators over symbolic shapes,
// and the compile-time errors for bad calls.
#include <gtest/gtest.h>

#include "compiler/driver/compile.h"
#include "compiler/ir/parser.h"
#include "tests/op/op_test_util.h"
#include "vm/tensor_io/npy.h"
#include "vm/virtual_machine.h"

namespace strata::op::testing {
namespace {

TEST(ElementwiseInfer, BroadcastingKeepsSymbolicDims) {
  EXPECT_EQ(Infer("x: Tensor[(n, 4), f32], b: Tensor[(4,), f32]", "add(x, b)"), "Tensor[(n, 4), f32]");
  EXPECT_EQ(Infer("x: Tensor[(b, 1, c), f32], y: Tensor[(t, 1), f32]", "multiply(x, y)"), "Tensor[(b, t, c), f32]");
  EXPECT_EQ(Infer("x: Tensor[(n * 2,), f32], y: Tensor[(n + n,), f32]", "subtract(x, y)"), "Tensor[(n * 2,), f32]");
  // A symbolic dimension against a constant broadcasts to the constant (checked at run time).
  EXPECT_EQ(Infer("x: Tensor[(n, k), f32], y: Tensor[(n, 8), f32]", "maximum(x, y)"), "Tensor[(n, 8), f32]");
  // Two symbolic dimensions that cannot be proven equal: the result is y's when
  // x's is 1 and x's otherwise, exact for every broadcast the kernel accepts.
  EXPECT_EQ(Infer("x: Tensor[(n,), f32], y: Tensor[(m,), f32]", "add(x, y)"), "Tensor[(select(n == 1, m, n),), f32]");
  EXPECT_EQ(Infer("x: Tensor[ndim=2, f32], y: Tensor[(4,), f32]", "add(x, y)"), "Tensor[ndim=2, f32]");
  EXPECT_EQ(Infer("x: Tensor[f32], y: Tensor[(4,), f32]", "add(x, y)"), "Tensor[f32]");
}

TEST(ElementwiseInfer, ComparisonsAndWhere) {
  EXPECT_EQ(Infer("x: Tensor[(n, 4), f32], y: Tensor[(4,), f32]", "less(x, y)"), "Tensor[(n, 4), bool]");
  EXPECT_EQ(Infer("c: Tensor[(n, 1), bool], x: Tensor[(n, m), f32], y: Tensor[(m,), f32]", "where(c, x, y)"),
            "Tensor[(n, m), f32]");
  EXPECT_EQ(Infer("x: Tensor[(n, 3), f32]", "cast(x, dtype=i64)"), "Tensor[(n, 3), i64]");
  EXPECT_EQ(Infer("x: Tensor[(n, 3), f32]", "gelu(x)"), "Tensor[(n, 3), f32]");
}

TEST(ElementwiseInfer, LogicalPredicatesAndModulo) {
  EXPECT_EQ(Infer("x: Tensor[(n, 4), bool], y: Tensor[(4,), bool]", "logical_xor(x, y)"), "Tensor[(n, 4), bool]");
  EXPECT_EQ(Infer("x: Tensor[(n, h), bool]", "logical_not(x)"), "Tensor[(n, h), bool]");
  EXPECT_EQ(Infer("x: Tensor[(n, 3), f32]", "isnan(x)"), "Tensor[(n, 3), bool]");
  EXPECT_EQ(Infer("x: Tensor[(n, 3), f32]", "isinf(x, detect_positive=false)"), "Tensor[(n, 3), bool]");
  EXPECT_EQ(Infer("x: Tensor[(n, 3), i64], y: Tensor[(3,), i64]", "mod(x, y)"), "Tensor[(n, 3), i64]");
  EXPECT_EQ(Infer("x: Tensor[(n, 3), f32], y: Tensor[(3,), f32]", "mod(x, y, fmod=true)"), "Tensor[(n, 3), f32]");
  EXPECT_EQ(Infer("x: Tensor[(n, c, h, w), f32], s: Tensor[(c, 1, 1), f32]", "prelu(x, s)"),
            "Tensor[(n, c, h, w), f32]");
  EXPECT_EQ(Infer("x: Tensor[(n, 3), f32]", "hard_sigmoid(x, alpha=0.25)"), "Tensor[(n, 3), f32]");
}

TEST(ElementwiseInfer, LogicalAndModuloRefuseWrongDtypes) {
  EXPECT_EQ(Infer("x: Tensor[(n, 4), f32], y: Tensor[(4,), bool]", "logical_and(x, y)"),
            "error: function 'main', binding 'y': logical_and: x: Tensor[(n, 4), f32] must be a bool tensor");
  EXPECT_EQ(Infer("x: Tensor[(n, 3), f32], y: Tensor[(3,), f32]", "mod(x, y)"),
            "error: function 'main', binding 'y': mod: fmod=false (floor modulo) is defined for integer tensors "
            "only; x: Tensor[(n, 3), f32] is f32");
  EXPECT_EQ(Infer("x: Tensor[(n, 3), i32]", "isnan(x)"),
            "error: function 'main', binding 'y': isnan: x: Tensor[(n, 3), i32] must be a float tensor");
}

TEST(ElementwiseInfer, IncompatibleShapesNameTheOperatorArgumentsAndShapes) {
  EXPECT_EQ(
      Infer("x: Tensor[(n, 4), f32], y: Tensor[(3,), f32]", "add(x, y)"),
      "error: function 'main', binding 'y': add: cannot broadcast x: Tensor[(n, 4), f32] with y: Tensor[(3,), f32]: "
      "dimension 1 of the result would be both 4 and 3");
  EXPECT_EQ(
      Infer("x: Tensor[(n, 4), f32], y: Tensor[(4,), i32]", "add(x, y)"),
      "error: function 'main', binding 'y': add: x: Tensor[(n, 4), f32] and y: Tensor[(4,), i32] have different dtypes "
      "(f32 vs i32); cast one of them");
  EXPECT_EQ(Infer("x: Tensor[(n, 4), f32], s: Shape[(n, 4)]", "add(x, s)"),
            "error: function 'main', binding 'y': add: argument 'y' must be a tensor, got Shape[(n, 4)]");
}

TEST(ElementwiseInfer, BadAttributesAndArity) {
  EXPECT_EQ(Infer("x: Tensor[(n, 4), f32]", "gelu(x, approximate=1)"),
            "error: function 'main', binding 'y': gelu: attribute 'approximate' must be a string, got an int");
  EXPECT_EQ(
      Infer("x: Tensor[(n, 4), f32]", "gelu(x, approximate=\"fast\")"),
      "error: function 'main', binding 'y': gelu: attribute 'approximate' must be \"none\" or \"tanh\", got \"fast\"");
  EXPECT_EQ(Infer("x: Tensor[(n, 4), f32]", "relu(x, alpha=0.1)"),
            "error: function 'main', binding 'y': relu: unknown attribute 'alpha' (it takes none)");
  EXPECT_EQ(Infer("x: Tensor[(n, 4), f32]", "cast(x)"),
            "error: function 'main', binding 'y': cast: missing attribute 'dtype' (a dtype)");
  EXPECT_EQ(Infer("x: Tensor[(n, 4), f32]", "add(x)"),
            "error: function 'main', binding 'y': add: expected 2 arguments (x, y), got 1");
  EXPECT_EQ(Infer("x: Tensor[(n, 4), i32]", "exp(x)"),
            "error: function 'main', binding 'y': exp: x: Tensor[(n, 4), i32] must be a float tensor");
  EXPECT_EQ(Infer("x: Tensor[(n, 4), f32]", "clip(x, min=2.0, max=1)"),
            "error: function 'main', binding 'y': clip: min 2 is greater than max 1");
}

// Found by onnx_import_fuzzer (Relu on a BOOL input): arithmetic on bool tensors
// passed inference and then aborted kernel generation.
TEST(ElementwiseInfer, ArithmeticOnBoolTensorsIsRefused) {
  EXPECT_EQ(Infer("x: Tensor[(n, 4), bool]", "relu(x)"),
            "error: function 'main', binding 'y': relu: x: Tensor[(n, 4), bool] must be an integer or float tensor, "
            "not bool");
  EXPECT_EQ(Infer("x: Tensor[(n, 4), bool], z: Tensor[(n, 4), bool]", "add(x, z)"),
            "error: function 'main', binding 'y': add: the operands are bool tensors; it needs integers or floats");
  EXPECT_EQ(Infer("x: Tensor[(n, 4), bool], z: Tensor[(n, 4), bool]", "equal(x, z)"), "Tensor[(n, 4), bool]");
}

TEST(ElementwiseLegalize, UnknownShapesAreACompileErrorThatSuggestsMatchCast) {
  EXPECT_EQ(CompileError(OneCallProgram("x: Tensor[f32], y: Tensor[(m,), f32]", "add(x, y)")),
            "LegalizeOps: function 'main', binding 'y': add: cannot generate a kernel: x: Tensor[f32] has no known "
            "rank and dtype; give it a shape with match_cast");
}

TEST(ElementwiseRuntime, TwoSymbolicDimsBroadcastEitherWayAtRunTime) {
  // n against m: one compiled kernel for n == m, n == 1 and m == 1; anything
  // else is refused by the kernel.
  const std::string program = OneCallProgram("x: Tensor[(n,), f32], y: Tensor[(m,), f32]", "add(x, y)");
  StatusOr<vm::Value> y = RunMain(program, {"3xf32=1,2,3", "3xf32=10,20,30"});
  ASSERT_TRUE(y.ok()) << y.status().message();
  EXPECT_EQ(vm::FormatInlineTensor(*y->tensor()), "3xf32=11,22,33");
  y = RunMain(program, {"1xf32=1", "3xf32=10,20,30"});
  ASSERT_TRUE(y.ok()) << y.status().message();
  EXPECT_EQ(vm::FormatInlineTensor(*y->tensor()), "3xf32=11,21,31");
  y = RunMain(program, {"3xf32=1,2,3", "1xf32=10"});
  ASSERT_TRUE(y.ok()) << y.status().message();
  EXPECT_EQ(vm::FormatInlineTensor(*y->tensor()), "3xf32=11,12,13");
  y = RunMain(program, {"3xf32=1,2,3", "2xf32=10,20"});
  ASSERT_FALSE(y.ok());
  EXPECT_NE(y.status().message().find("compiled kernel 'add' failed: add: argument 'y' dimension 0 must be 1 or "),
            std::string::npos)
      << y.status().message();
}

TEST(ElementwiseRuntime, UnknownDimsAreBoundAtRunTime) {
  const std::string program = OneCallProgram("x: Tensor[ndim=2, f32], b: Tensor[(4,), f32]", "add(x, b)");
  StatusOr<vm::Value> y = RunMain(program, {"2x4xf32=1,-2,3,-4,5,6,7,8", "4xf32=1,1,1,10"});
  ASSERT_TRUE(y.ok()) << y.status().message();
  EXPECT_EQ(vm::FormatInlineTensor(*y->tensor()), "2x4xf32=2,-1,4,6,6,7,8,18");
  y = RunMain(program, {"3x1xf32=1,2,3", "4xf32=0,1,2,3"});
  ASSERT_TRUE(y.ok()) << y.status().message();
  EXPECT_EQ(vm::FormatInlineTensor(*y->tensor()), "3x4xf32=1,2,3,4,2,3,4,5,3,4,5,6");
  y = RunMain(program, {"2x3xf32=1,2,3,4,5,6", "4xf32=0,1,2,3"});
  ASSERT_FALSE(y.ok());
  EXPECT_EQ(y.status().message(),
            "compiled kernel 'add' failed: add: argument 'x' dimension 1 must be 1 or 4 to broadcast");
}

TEST(ElementwiseRuntime, ABroadcastThatFailsAtRunTimeNamesTheArgumentAndDimension) {
  auto module =
      ir::ParseModule(OneCallProgram("x: Tensor[(n, k), f32], y: Tensor[(n, 8), f32]", "maximum(x, y)"), "t.sir");
  ASSERT_TRUE(module.ok()) << module.status().message();
  auto bytes = driver::Compile(std::move(module).value(), {});
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  auto exe = vm::Executable::LoadFromBytes(*bytes);
  ASSERT_TRUE(exe.ok()) << exe.status().message();
  vm::VirtualMachine machine(*exe);
  auto x = vm::ParseInlineTensor("2x3xf32=1,2,3,4,5,6");
  auto y = vm::ParseInlineTensor("2x8xf32=0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0");
  ASSERT_TRUE(x.ok() && y.ok());
  std::vector<vm::Value> args = {vm::Value::FromTensor(*x), vm::Value::FromTensor(*y)};
  auto result = machine.Invoke("main", args);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().message(),
            "functions[0] 'main': instruction at word 73 (call): compiled kernel 'maximum' failed: maximum: argument "
            "'x' dimension 1 must be 1 or 8 to broadcast");
  // k = 1 broadcasts.
  auto x1 = vm::ParseInlineTensor("2x1xf32=1,-1");
  ASSERT_TRUE(x1.ok());
  args[0] = vm::Value::FromTensor(*x1);
  result = machine.Invoke("main", args);
  ASSERT_TRUE(result.ok()) << result.status().message();
  EXPECT_EQ(vm::FormatInlineTensor(*result->tensor()), "2x8xf32=1,1,1,1,1,1,1,1,0,0,0,0,0,0,0,0");
}

}  // namespace
}  // namespace strata::op::testing
