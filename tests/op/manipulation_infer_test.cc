// Shape and dtype inference of the data movement and creation operators over
// symbolic shapes, their compile-time errors, the kernels' run-time checks and
// the loop nests of the kernels that matter for speed.
#include <gtest/gtest.h>

#include "compiler/driver/compile.h"
#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"
#include "compiler/op/kernel_builder.h"
#include "compiler/op/op_registry.h"
#include "compiler/transform/pass.h"
#include "tests/op/op_test_util.h"
#include "vm/tensor_io/npy.h"
#include "vm/virtual_machine.h"

namespace strata::op::testing {
namespace {

// Compiles the one-call program and runs it on inline tensors: the result as
// inline text (a tuple as "(field field ...)"), or "error: <message>".
std::string RunOnce(const std::string& params, const std::string& call, const std::vector<std::string>& inputs) {
  StatusOr<vm::Value> result = RunMain(OneCallProgram(params, call), inputs);
  if (!result.ok()) return "error: " + result.status().message();
  if (result->is_tensor()) return vm::FormatInlineTensor(*result->tensor());
  std::string fields;
  for (const vm::Value& field : result->tuple()->fields()) {
    fields += (fields.empty() ? "" : " ") + vm::FormatInlineTensor(*field.tensor());
  }
  return "(" + fields + ")";
}

// ---- reshape, flatten ----------------------------------------------------------

TEST(ManipulationInfer, ReshapeOfBT64ToBT4x16IsProvenForEveryBAndT) {
  EXPECT_EQ(Infer("x: Tensor[(b, t, 64), f32]", "reshape(x, shape(b, t, 4, 16))"), "Tensor[(b, t, 4, 16), f32]");
  // Proven: the kernel is a plain copy with no element-count check, and indexes
  // the input without divisions per element (the parallel loop over b * t is
  // split back once per 64 elements).
  EXPECT_EQ(
      Kernel("x: Tensor[(b, t, 64), f32]", "reshape(x, shape(b, t, 4, 16))", "reshape"),
      R"(prim_func @reshape(A: Buffer[(b, t, 64), f32], Out: Buffer[(b, t, 4, 16), f32]) attrs {op = "reshape", op_pattern = "injective"} {
  for i_fused in parallel(0, b * t) {
    let i0: i64 = i_fused // t
    let i1: i64 = i_fused % t
    for i2 in range(0, 4) {
      for i3 in vectorized(0, 16) {
        Out[i0, i1, i2, i3] = A[i0, i1, i2 * 16 + i3]
      }
    }
  }
}
)");
}

// Attention's (batch * heads, seq, 64) -> (batch, heads, seq, 64) with the
// first dimension a variable of its own: no prefix product is provable, the
// suffixes are, so only the first dimension is split (i0 * 3 + i1), with no
// division per element; the counts are checked at run time.
TEST(ManipulationInfer, ReshapeSplitsTheUnprovenLeadingDimensionWithoutDivisions) {
  EXPECT_EQ(
      Kernel("x: Tensor[(d, s, 4), f32], y: Tensor[(b, 3), f32]", "reshape(x, shape(b, 3, s, 4))", "reshape"),
      R"(prim_func @reshape(A: Buffer[(d, s, 4), f32], Out: Buffer[(b, 3, s, 4), f32], b: i64) attrs {op = "reshape", op_pattern = "injective"} {
  assert d * s * 4 == b * s * 12, "argument 'x' of shape (d, s, 4) has d * s * 4 elements, the result of shape (b, 3, s, 4) has b * s * 12"
  for i_fused in parallel(0, b * 3) {
    let i0: i64 = i_fused // 3
    let i1: i64 = i_fused % 3
    for i2 in range(0, s) {
      for i3 in vectorized(0, 4) {
        Out[i0, i1, i2, i3] = A[i0 * 3 + i1, i2, i3]
      }
    }
  }
}
)");
  const std::string params = "x: Tensor[(d, s, 2), f32], y: Tensor[(b, 3), f32]";
  EXPECT_EQ(
      RunOnce(params, "reshape(x, shape(b, 3, s, 2))", {"6x1x2xf32=0,1,2,3,4,5,6,7,8,9,10,11", "2x3xf32=0,0,0,0,0,0"}),
      "2x3x1x2xf32=0,1,2,3,4,5,6,7,8,9,10,11");
  EXPECT_EQ(RunOnce(params, "reshape(x, shape(b, 3, s, 2))", {"4x1x2xf32=0,1,2,3,4,5,6,7", "2x3xf32=0,0,0,0,0,0"}),
            "error: compiled kernel 'reshape' failed: reshape: argument 'x' of shape (d, s, 2) has d * s * 2 elements, "
            "the result of shape (b, 3, s, 2) has b * s * 6");
}

TEST(ManipulationInfer, ReshapeInfersMinusOneSymbolicallyAndCopiesZeros) {
  EXPECT_EQ(Infer("x: Tensor[(b, t, 64), f32]", "reshape(x, shape(b, -1))"), "Tensor[(b, t * 64), f32]");
  EXPECT_EQ(Infer("x: Tensor[(b, t, 64), f32]", "reshape(x, shape(-1, 16))"), "Tensor[(b * t * 4, 16), f32]");
  EXPECT_EQ(Infer("x: Tensor[(b, t * 2, 6), i8]", "reshape(x, shape(0, t, -1))"), "Tensor[(b, t, 12), i8]");
  EXPECT_EQ(Infer("x: Tensor[(n * m, 4), f32]", "reshape(x, shape(n, -1, 2))"), "Tensor[(n, m * 2, 2), f32]");
  // Neither provable nor refutable: allowed, the kernel checks the element count.
  EXPECT_EQ(Infer("x: Tensor[(n,), f32]", "reshape(x, shape(2, -1))"), "Tensor[(2, n // 2), f32]");
  EXPECT_EQ(Infer("x: Tensor[(n,), f32], z: Tensor[(m,), f32]", "reshape(x, shape(m, 2))"), "Tensor[(m, 2), f32]");
  // Refuted only by a constant difference: (n, 4) -> (n, 5) holds for n = 0.
  EXPECT_EQ(Infer("x: Tensor[(n, 4), f32]", "reshape(x, shape(n, 5))"), "Tensor[(n, 5), f32]");
  // Unknown input dims: the target's rank, and its dims where they do not depend on x.
  EXPECT_EQ(Infer("x: Tensor[ndim=2, f32]", "reshape(x, shape(3, 4))"), "Tensor[(3, 4), f32]");
  EXPECT_EQ(Infer("x: Tensor[f32]", "reshape(x, shape(3, -1))"), "Tensor[ndim=2, f32]");
  EXPECT_EQ(Infer("x: Tensor[(n,), f32], s: Shape[ndim=3]", "reshape(x, s)"), "Tensor[ndim=3, f32]");
}

TEST(ManipulationInfer, ReshapeErrorsNameTheOperatorArgumentAndBothShapes) {
  EXPECT_EQ(Infer("x: Tensor[(2, 3), f32]", "reshape(x, shape(4))"),
            "error: function 'main', binding 'y': reshape: cannot reshape x: Tensor[(2, 3), f32] (6 elements) to (4,) "
            "(4 elements)");
  EXPECT_EQ(
      Infer("x: Tensor[(n, 4), f32]", "reshape(x, shape(n + 1, 4))"),
      "error: function 'main', binding 'y': reshape: cannot reshape x: Tensor[(n, 4), f32] (n * 4 elements) to (n + 1, "
      "4) (n * 4 + 4 elements)");
  EXPECT_EQ(
      Infer("x: Tensor[(7,), f32]", "reshape(x, shape(2, -1))"),
      "error: function 'main', binding 'y': reshape: cannot reshape x: Tensor[(7,), f32] (7 elements) to (2, -1): 7 "
      "is not a multiple of 2");
  EXPECT_EQ(Infer("x: Tensor[(n, 4), f32]", "reshape(x, shape(-1, -1))"),
            "error: function 'main', binding 'y': reshape: target shape (-1, -1) has more than one -1");
  EXPECT_EQ(
      Infer("x: Tensor[(n, 4), f32]", "reshape(x, shape(2, -3))"),
      "error: function 'main', binding 'y': reshape: dimension 1 of target shape (2, -3) is -3 (expected a size, 0 "
      "to copy the input's or -1 to infer it)");
  EXPECT_EQ(
      Infer("x: Tensor[(n,), f32]", "reshape(x, shape(2, 0))"),
      "error: function 'main', binding 'y': reshape: dimension 1 of target shape (2, 0) is 0 (copy the input's), but "
      "x: Tensor[(n,), f32] has rank 1");
  EXPECT_EQ(Infer("x: Tensor[(0, 4), f32]", "reshape(x, shape(0, -1))"),
            "error: function 'main', binding 'y': reshape: cannot infer the -1 of target shape (0, -1) for x: "
            "Tensor[(0, 4), f32]: the other dimensions hold no elements");
  EXPECT_EQ(Infer("x: Tensor[(n,), f32], y: Tensor[(n,), f32]", "reshape(x, y)"),
            "error: function 'main', binding 'y': reshape: argument 'shape' must be a shape, got Tensor[(n,), f32]");
}

TEST(ManipulationInfer, StridedSliceTakesSymbolicBounds) {
  // pos[:, :t]: the end is the length of another input; the extent clamps to
  // the table's 64 rows, kept as min() because t is unbounded.
  EXPECT_EQ(
      Infer("pos: Tensor[(1, 64, d), f32], x: Tensor[(t,), f32]", "strided_slice(pos, axes=[1], begin=[0], end=[t])"),
      "Tensor[(1, min(64, t), d), f32]");
  // A bound of unknown sign (t - 4 may be negative, counting from the end).
  EXPECT_EQ(Infer("x: Tensor[(n, 8), f32], y: Tensor[(t,), f32]", "strided_slice(x, axes=[1], begin=[t - 4], end=[8])"),
            "Tensor[(n, max(0, 8 - select(t - 4 < 0, t + 4, min(8, t - 4)))), f32]");
}

TEST(ManipulationRuntime, StridedSliceWithSymbolicBoundsRunsAtEveryShape) {
  const std::string params = "x: Tensor[(n, 6), f32], y: Tensor[(t,), f32]";
  const std::string slice = "strided_slice(x, axes=[1], begin=[0], end=[t])";
  EXPECT_EQ(RunOnce(params, slice, {"2x6xf32=0,1,2,3,4,5,6,7,8,9,10,11", "2xf32=0,0"}), "2x2xf32=0,1,6,7");
  EXPECT_EQ(RunOnce(params, slice, {"1x6xf32=0,1,2,3,4,5", "9xf32=0,0,0,0,0,0,0,0,0"}), "1x6xf32=0,1,2,3,4,5");
  // begin = -t counts from the end: the last t columns.
  const std::string tail = "strided_slice(x, axes=[1], begin=[0 - t], end=[6])";
  EXPECT_EQ(RunOnce(params, tail, {"1x6xf32=0,1,2,3,4,5", "2xf32=0,0"}), "1x2xf32=4,5");
  // t = 0: begin is -0 = 0, so the whole row, as in Python and ONNX; the sign
  // of -t is decided at run time (select), not guessed at compile time.
  EXPECT_EQ(RunOnce(params, tail, {"1x6xf32=0,1,2,3,4,5", "0xf32="}), "1x6xf32=0,1,2,3,4,5");
}

TEST(ManipulationRuntime, AReshapeWhoseCountsDifferAtRunTimeFails) {
  EXPECT_EQ(RunOnce("x: Tensor[(n,), f32]", "reshape(x, shape(2, -1))", {"4xf32=1,2,3,4"}), "2x2xf32=1,2,3,4");
  EXPECT_EQ(RunOnce("x: Tensor[(n,), f32]", "reshape(x, shape(2, -1))", {"3xf32=1,2,3"}),
            "error: compiled kernel 'reshape' failed: reshape: argument 'x' of shape (n,) has n elements, the result "
            "of shape (2, n "
            "// 2) has n // 2 * 2");
}

TEST(ManipulationInfer, Flatten) {
  EXPECT_EQ(Infer("x: Tensor[(a, b, c), f32]", "flatten(x)"), "Tensor[(a, b * c), f32]");
  EXPECT_EQ(Infer("x: Tensor[(a, b, c), f32]", "flatten(x, axis=0)"), "Tensor[(1, a * b * c), f32]");
  EXPECT_EQ(Infer("x: Tensor[(a, b, c), f32]", "flatten(x, axis=3)"), "Tensor[(a * b * c, 1), f32]");
  EXPECT_EQ(Infer("x: Tensor[(a, b, c), f32]", "flatten(x, axis=-1)"), "Tensor[(a * b, c), f32]");
  EXPECT_EQ(Infer("x: Tensor[f32]", "flatten(x)"), "Tensor[ndim=2, f32]");
  EXPECT_EQ(
      Infer("x: Tensor[(a, b), f32]", "flatten(x, axis=3)"),
      "error: function 'main', binding 'y': flatten: axis 3 is out of range for a tensor of rank 2 (expected -2 <= "
      "axis <= 2)");
}

// ---- transpose -----------------------------------------------------------------

TEST(ManipulationInfer, Transpose) {
  EXPECT_EQ(Infer("x: Tensor[(a, b, c), f32]", "transpose(x)"), "Tensor[(c, b, a), f32]");
  EXPECT_EQ(Infer("x: Tensor[(a, b, c), f32]", "transpose(x, axes=[0, -1, 1])"), "Tensor[(a, c, b), f32]");
  EXPECT_EQ(Infer("x: Tensor[f32]", "transpose(x, axes=[1, 0])"), "Tensor[ndim=2, f32]");
  EXPECT_EQ(Infer("x: Tensor[ndim=3, f32]", "transpose(x)"), "Tensor[ndim=3, f32]");
  EXPECT_EQ(
      Infer("x: Tensor[(a, b, c), f32]", "transpose(x, axes=[0, 1])"),
      "error: function 'main', binding 'y': transpose: attribute 'axes' [0, 1] must list each of the 3 axes of x: "
      "Tensor[(a, b, c), f32] once");
  EXPECT_EQ(Infer("x: Tensor[(a, b), f32]", "transpose(x, axes=[1, -1])"),
            "error: function 'main', binding 'y': transpose: axis 1 appears twice in attribute 'axes'");
}

TEST(ManipulationLegalize, TransposeTilesTheTwoAxesThatSwapContiguity) {
  EXPECT_EQ(
      Kernel("x: Tensor[(b, n, m), f32]", "transpose(x, axes=[0, 2, 1])", "transpose"),
      R"(prim_func @transpose(A: Buffer[(b, n, m), f32], Out: Buffer[(b, m, n), f32]) attrs {op = "transpose", op_pattern = "injective"} {
  for i0 in parallel(0, b) {
    for i1_outer in range(0, (m + 63) // 64) {
      for i2_outer in range(0, (n + 63) // 64) {
        for i1_inner in range(0, min(64, m - i1_outer * 64)) {
          for i2_inner in vectorized(0, min(64, n - i2_outer * 64)) {
            Out[i0, i1_inner + i1_outer * 64, i2_inner + i2_outer * 64] = A[i0, i2_inner + i2_outer * 64, i1_inner + i1_outer * 64]
          }
        }
      }
    }
  }
}
)");
}

// ---- concat --------------------------------------------------------------------

TEST(ManipulationInfer, ConcatOfNBy4AndMBy4OnAxis0HasShapeNPlusMBy4) {
  // The simplifier orders the terms by name: n + m prints as m + n.
  EXPECT_EQ(Infer("x: Tensor[(n, 4), f32], z: Tensor[(m, 4), f32]", "concat((x, z), axis=0)"),
            "Tensor[(m + n, 4), f32]");
  EXPECT_EQ(CompileError("func @main(x: Tensor[(n, 4), f32], z: Tensor[(m, 4), f32]) -> Tensor[(n + m, 4), f32] {\n"
                         "  y: Tensor[(n + m, 4), f32] = concat((x, z), axis=0)\n  return y\n}\n"),
            "");
  EXPECT_EQ(Infer("x: Tensor[(n, a), f32], z: Tensor[(n, b), f32]", "concat((x, z, x), axis=-1)"),
            "Tensor[(n, a * 2 + b), f32]");
  // A constant wins over a symbolic dim (checked at run time); two symbolic
  // dims keep the first (checked at run time).
  EXPECT_EQ(Infer("x: Tensor[(n, k), f32], z: Tensor[(m, 4), f32]", "concat((x, z))"), "Tensor[(m + n, 4), f32]");
  EXPECT_EQ(Infer("x: Tensor[(n, k), f32], z: Tensor[(m, j), f32]", "concat((x, z))"), "Tensor[(m + n, k), f32]");
  EXPECT_EQ(Infer("x: Tensor[(n, 4), f32], z: Tensor[ndim=2, f32]", "concat((x, z))"), "Tensor[ndim=2, f32]");
  EXPECT_EQ(Infer("x: Tensor[f32], z: Tensor[f32]", "concat((x, z))"), "Tensor[f32]");
}

TEST(ManipulationInfer, ConcatErrors) {
  EXPECT_EQ(
      Infer("x: Tensor[(n, 4), f32], z: Tensor[(m, 3), f32]", "concat((x, z), axis=0)"),
      "error: function 'main', binding 'y': concat: field 0 of inputs: Tensor[(n, 4), f32] and field 1 of inputs: "
      "Tensor[(m, 3), f32] differ in dimension 1 (4 vs 3); only axis 0 may differ");
  EXPECT_EQ(
      Infer("x: Tensor[(n, 4), f32], z: Tensor[(m, 4), i32]", "concat((x, z))"),
      "error: function 'main', binding 'y': concat: field 0 of inputs: Tensor[(n, 4), f32] and field 1 of inputs: "
      "Tensor[(m, 4), i32] have different dtypes (f32 vs i32); cast one of them");
  EXPECT_EQ(
      Infer("x: Tensor[(n, 4), f32], z: Tensor[(4,), f32]", "concat((x, z))"),
      "error: function 'main', binding 'y': concat: field 0 of inputs: Tensor[(n, 4), f32] and field 1 of inputs: "
      "Tensor[(4,), f32] have different ranks");
  EXPECT_EQ(
      Infer("x: Tensor[(n, 4), f32]", "concat((x,), axis=2)"),
      "error: function 'main', binding 'y': concat: axis 2 is out of range for a tensor of rank 2 (expected -2 <= "
      "axis < 2)");
  EXPECT_EQ(
      Infer("x: Tensor[(n, 4), f32]", "concat(x)"),
      "error: function 'main', binding 'y': concat: argument 'inputs' must be a tuple of tensors, got Tensor[(n, 4), "
      "f32]");
  EXPECT_EQ(Infer("x: Tensor[(n, 4), f32]", "concat(())"),
            "error: function 'main', binding 'y': concat: argument 'inputs' must hold at least one tensor");
}

TEST(ManipulationRuntime, ConcatChecksDimsItCouldNotProve) {
  const std::string params = "x: Tensor[(n, k), f32], z: Tensor[(m, j), f32]";
  EXPECT_EQ(RunOnce(params, "concat((x, z))", {"1x2xf32=1,2", "2x2xf32=3,4,5,6"}), "3x2xf32=1,2,3,4,5,6");
  EXPECT_EQ(RunOnce(params, "concat((x, z))", {"1x2xf32=1,2", "1x3xf32=3,4,5"}),
            "error: compiled kernel 'concat' failed: concat: field 1 of inputs dimension 1 must be k to match the "
            "other inputs");
}

// ---- split ---------------------------------------------------------------------

TEST(ManipulationInfer, SplitAtIndices) {
  EXPECT_EQ(Infer("x: Tensor[(n, 6), f32]", "split(x, indices_or_sections=[1, 4], axis=1)"),
            "Tuple[Tensor[(n, 1), f32], Tensor[(n, 3), f32], Tensor[(n, 2), f32]]");
  EXPECT_EQ(Infer("x: Tensor[(n, 3), f32]", "split(x, indices_or_sections=[2, 2, 5])"),
            "Tuple[Tensor[(2, 3), f32], Tensor[(0, 3), f32], Tensor[(3, 3), f32], Tensor[(n - 5, 3), f32]]");
  EXPECT_EQ(Infer("x: Tensor[ndim=2, f32]", "split(x, indices_or_sections=[2])"),
            "Tuple[Tensor[ndim=2, f32], Tensor[ndim=2, f32]]");
  EXPECT_EQ(
      Infer("x: Tensor[(n, 6), f32]", "split(x, indices_or_sections=[4, 1], axis=1)"),
      "error: function 'main', binding 'y': split: indices_or_sections [4, 1] must be non-negative and in increasing "
      "order");
  EXPECT_EQ(
      Infer("x: Tensor[(n, 6), f32]", "split(x, indices_or_sections=[2, 7], axis=-1)"),
      "error: function 'main', binding 'y': split: cannot split x: Tensor[(n, 6), f32] at indices [2, 7] along axis 1 "
      "(its extent is 6)");
  EXPECT_EQ(
      Infer("x: Tensor[(n, 6), f32]", "split(x, indices_or_sections=[])"),
      "error: function 'main', binding 'y': split: indices_or_sections [] gives one part; split needs at least two");
}

TEST(ManipulationRuntime, SplitOfASymbolicExtentShorterThanTheLastIndexFailsToAllocate) {
  EXPECT_EQ(RunOnce("x: Tensor[(n,), f32]", "split(x, indices_or_sections=[1, 3])", {"4xf32=1,2,3,4"}),
            "(1xf32=1 2xf32=2,3 1xf32=4)");
  // The last part, of extent n - 3, cannot be allocated.
  EXPECT_EQ(RunOnce("x: Tensor[(n,), f32]", "split(x, indices_or_sections=[1, 3])", {"2xf32=1,2"}),
            "error: vm.builtin.alloc_tensor: dimension 0 is negative (-1)");
}

// The single-int form of an int-or-list attribute ("indices_or_sections=3",
// "axis=1"), given to the operator's inference and legalization directly: the
// inferred struct info, then the kernel (or the error).
std::string CallWithIntAttr(const std::string& op, const graph::StructInfo& x, const std::string& attr, int64_t value) {
  const OpDef* def = FindOp(op);
  graph::Expr arg = graph::Var("x", x);
  graph::Expr call = graph::CallNode::make(graph::OpNode::Get(op), {arg}, {{attr, ir::AttrValue(value)}});
  const auto* node = call.as<graph::CallNode>();
  StatusOr<graph::StructInfo> inferred = def->infer(OpCall(*def, *node));
  if (!inferred.ok()) return "error: " + inferred.status().message();
  graph::Expr typed(std::make_shared<const graph::CallNode>(node->op, node->args, node->attrs,
                                                            std::vector<graph::StructInfo>{}, *inferred));
  KernelBuilder builder(op);
  StatusOr<tir::Stmt> body = def->legalize(OpCall(*def, *typed.as<graph::CallNode>()), builder);
  if (!body.ok()) return "error: " + body.status().message();
  return ir::PrintStructInfo(*inferred) + "\n" + ir::PrintPrimFunc(op, builder.Finish(*body, {}));
}

TEST(ManipulationInfer, SplitIntoEqualSections) {
  const tir::Var n("n");
  const DataType f32 = DataType::F32();
  EXPECT_EQ(CallWithIntAttr("split", graph::TensorStructInfoNode::make({n, 4}, f32), "indices_or_sections", 2),
            R"(Tuple[Tensor[(n // 2, 4), f32], Tensor[(n // 2, 4), f32]]
prim_func @split(A: Buffer[(n, 4), f32], Out0: Buffer[(n // 2, 4), f32], Out1: Buffer[(n // 2, 4), f32]) {
  assert n // 2 * 2 == n, "argument 'x' dimension 0 (n) must be a multiple of 2 to split it into equal sections"
  for i0 in parallel(0, n // 2) {
    for i1 in vectorized(0, 4) {
      Out0[i0, i1] = A[i0, i1]
    }
  }
  for i0 in parallel(0, n // 2) {
    for i1 in vectorized(0, 4) {
      Out1[i0, i1] = A[i0 + n // 2, i1]
    }
  }
}
)");
  // n * 3 divides into sections of n. The kernel binds the input's extent as d0
  // and takes n as a scalar, so it checks that the two agree.
  EXPECT_EQ(CallWithIntAttr("split", graph::TensorStructInfoNode::make({n * 3, 2}, f32), "indices_or_sections", 3),
            R"(Tuple[Tensor[(n, 2), f32], Tensor[(n, 2), f32], Tensor[(n, 2), f32]]
prim_func @split(A: Buffer[(d0, 2), f32], Out0: Buffer[(n, 2), f32], Out1: Buffer[(n, 2), f32], Out2: Buffer[(n, 2), f32], n: i64) {
  assert n * 3 == d0, "argument 'x' dimension 0 (d0) must be a multiple of 3 to split it into equal sections"
  for i0 in parallel(0, n) {
    for i1 in vectorized(0, 2) {
      Out0[i0, i1] = A[i0, i1]
    }
  }
  for i0 in parallel(0, n) {
    for i1 in vectorized(0, 2) {
      Out1[i0, i1] = A[i0 + n, i1]
    }
  }
  for i0 in parallel(0, n) {
    for i1 in vectorized(0, 2) {
      Out2[i0, i1] = A[i0 + n * 2, i1]
    }
  }
}
)");
  EXPECT_EQ(
      CallWithIntAttr("split", graph::TensorStructInfoNode::make({7, 4}, f32), "indices_or_sections", 2),
      "error: split: cannot split x: Tensor[(7, 4), f32] into 2 equal sections along axis 0 (7 is not a multiple of "
      "2)");
  EXPECT_EQ(CallWithIntAttr("split", graph::TensorStructInfoNode::make({7, 4}, f32), "indices_or_sections", 0),
            "error: split: indices_or_sections 0 must be a positive number of sections");
  EXPECT_EQ(CallWithIntAttr("split", graph::TensorStructInfoNode::make({7, 4}, f32), "indices_or_sections", 1),
            "error: split: indices_or_sections 1 gives one part; split needs at least two");
}

TEST(ManipulationInfer, ExpandDimsAndSqueezeTakeASingleAxis) {
  const tir::Var n("n");
  EXPECT_EQ(CallWithIntAttr("expand_dims", graph::TensorStructInfoNode::make({n, 4}, DataType::F32()), "axis", -1),
            R"(Tensor[(n, 4, 1), f32]
prim_func @expand_dims(A: Buffer[(n, 4), f32], Out: Buffer[(n, 4, 1), f32]) {
  for i0 in parallel(0, n) {
    for i1 in vectorized(0, 4) {
      Out[i0, i1, 0] = A[i0, i1]
    }
  }
}
)");
  EXPECT_EQ(CallWithIntAttr("squeeze", graph::TensorStructInfoNode::make({n, 1}, DataType::I32()), "axis", 1),
            R"(Tensor[(n,), i32]
prim_func @squeeze(A: Buffer[(n, 1), i32], Out: Buffer[(n,), i32]) {
  for i0_outer in parallel(0, (n + 16383) // 16384) {
    for i0_inner in vectorized(0, min(16384, n - i0_outer * 16384)) {
      Out[i0_inner + i0_outer * 16384] = A[i0_inner + i0_outer * 16384, 0]
    }
  }
}
)");
}

TEST(ManipulationInfer, IntFormsOfListAttributesInTextIR) {
  EXPECT_EQ(Infer("x: Tensor[(n, 4), f32]", "split(x, indices_or_sections=2)"),
            "Tuple[Tensor[(n // 2, 4), f32], Tensor[(n // 2, 4), f32]]");
  EXPECT_EQ(Infer("x: Tensor[(n, 4), f32]", "expand_dims(x, axis=1)"), "Tensor[(n, 1, 4), f32]");
  EXPECT_EQ(Infer("x: Tensor[(n, 1), f32]", "squeeze(x, axis=1)"), "Tensor[(n,), f32]");
  EXPECT_EQ(Infer("x: Tensor[(n, 4), f32]", "expand_dims(x, axis=\"one\")"),
            "error: function 'main', binding 'y': expand_dims: attribute 'axis' must be a list of ints, got a string");
}

// ---- strided_slice -------------------------------------------------------------

TEST(ManipulationInfer, StridedSliceFollowsPythonSlicing) {
  EXPECT_EQ(Infer("x: Tensor[(10, 8), f32]", "strided_slice(x, begin=[2, -3], end=[-1, 100], strides=[3, 1])"),
            "Tensor[(3, 3), f32]");
  EXPECT_EQ(Infer("x: Tensor[(10,), f32]", "strided_slice(x, begin=[-1], end=[-9223372036854775807], strides=[-1])"),
            "Tensor[(10,), f32]");
  EXPECT_EQ(Infer("x: Tensor[(10,), f32]", "strided_slice(x, begin=[8], end=[1], strides=[-3])"), "Tensor[(3,), f32]");
  EXPECT_EQ(Infer("x: Tensor[(10,), f32]", "strided_slice(x, begin=[12], end=[20])"), "Tensor[(0,), f32]");
  EXPECT_EQ(Infer("x: Tensor[(10,), f32]", "strided_slice(x, begin=[-20], end=[3])"), "Tensor[(3,), f32]");
  // Symbolic extents: min/max keep the result exact for every n, including n = 0.
  EXPECT_EQ(Infer("x: Tensor[(n, m), f32]", "strided_slice(x, begin=[0], end=[9223372036854775807], axes=[1])"),
            "Tensor[(n, m), f32]");
  EXPECT_EQ(Infer("x: Tensor[(n, m), f32]", "strided_slice(x, begin=[1], end=[9223372036854775807])"),
            "Tensor[(max(0, n - 1), m), f32]");
  EXPECT_EQ(Infer("x: Tensor[(n, m), f32]", "strided_slice(x, begin=[0], end=[3], axes=[-1])"),
            "Tensor[(n, min(3, m)), f32]");
  EXPECT_EQ(Infer("x: Tensor[(n,), f32]", "strided_slice(x, begin=[-1], end=[-9223372036854775807], strides=[-2])"),
            "Tensor[((n + 1) // 2,), f32]");
  EXPECT_EQ(Infer("x: Tensor[ndim=2, f32]", "strided_slice(x, begin=[1], end=[2])"), "Tensor[ndim=2, f32]");
}

TEST(ManipulationInfer, StridedSliceErrors) {
  EXPECT_EQ(
      Infer("x: Tensor[(n, m), f32]", "strided_slice(x, begin=[1, 2], end=[3])"),
      "error: function 'main', binding 'y': strided_slice: begin [1, 2], end [3], strides [1, 1] and axes [0, 1] must "
      "have the same length");
  EXPECT_EQ(Infer("x: Tensor[(n, m), f32]", "strided_slice(x, begin=[1], end=[3], strides=[0])"),
            "error: function 'main', binding 'y': strided_slice: strides [0] contain 0");
  EXPECT_EQ(
      Infer("x: Tensor[(n, m), f32]", "strided_slice(x, begin=[1], end=[3], axes=[2])"),
      "error: function 'main', binding 'y': strided_slice: axis 2 is out of range for a tensor of rank 2 (expected -2 "
      "<= axis < 2)");
  EXPECT_EQ(
      Infer("x: Tensor[(n, m), f32]", "strided_slice(x, begin=[1])"),
      "error: function 'main', binding 'y': strided_slice: missing attribute 'end' (a list of integer expressions)");
}

// ---- take ----------------------------------------------------------------------

TEST(ManipulationInfer, Take) {
  EXPECT_EQ(Infer("x: Tensor[(v, d), f32], i: Tensor[(b, t), i64]", "take(x, i, axis=0)"), "Tensor[(b, t, d), f32]");
  EXPECT_EQ(Infer("x: Tensor[(a, v, d), f32], i: Tensor[(k,), i32]", "take(x, i, axis=-2)"), "Tensor[(a, k, d), f32]");
  EXPECT_EQ(Infer("x: Tensor[(a, v), f32], i: Tensor[(), i32]", "take(x, i, axis=1)"), "Tensor[(a,), f32]");
  EXPECT_EQ(Infer("x: Tensor[(a, v), f32], i: Tensor[(k, 2), i64]", "take(x, i)"), "Tensor[(k, 2), f32]");
  EXPECT_EQ(Infer("x: Tensor[ndim=2, f32], i: Tensor[(k,), i64]", "take(x, i, axis=0)"), "Tensor[ndim=2, f32]");
  EXPECT_EQ(Infer("x: Tensor[f32], i: Tensor[(k,), i64]", "take(x, i, axis=0)"), "Tensor[f32]");
  EXPECT_EQ(Infer("x: Tensor[(a, v), f32], i: Tensor[(k,), f32]", "take(x, i, axis=0)"),
            "error: function 'main', binding 'y': take: indices: Tensor[(k,), f32] must be an integer tensor");
  EXPECT_EQ(
      Infer("x: Tensor[(a, v), f32], i: Tensor[(k,), i64]", "take(x, i, axis=2)"),
      "error: function 'main', binding 'y': take: axis 2 is out of range for a tensor of rank 2 (expected -2 <= axis "
      "< 2)");
}

TEST(ManipulationRuntime, TakeRejectsAnOutOfRangeIndexBeforeReadingAnything) {
  const std::string params = "x: Tensor[(v, 2), f32], i: Tensor[(k,), i64]";
  EXPECT_EQ(RunOnce(params, "take(x, i, axis=0)", {"3x2xf32=1,2,3,4,5,6", "2xi64=-1,0"}), "2x2xf32=5,6,1,2");
  EXPECT_EQ(RunOnce(params, "take(x, i, axis=0)", {"3x2xf32=1,2,3,4,5,6", "2xi64=0,3"}),
            "error: compiled kernel 'take' failed: take: argument 'indices' holds an index out of range for axis 0 of "
            "x (extent v); "
            "indices must lie in [-v, v)");
  EXPECT_EQ(RunOnce(params, "take(x, i, axis=0)", {"3x2xf32=1,2,3,4,5,6", "1xi64=-4"}),
            "error: compiled kernel 'take' failed: take: argument 'indices' holds an index out of range for axis 0 of "
            "x (extent v); "
            "indices must lie in [-v, v)");
}

// ---- expand_dims, squeeze ------------------------------------------------------

TEST(ManipulationInfer, ExpandDimsAndSqueeze) {
  EXPECT_EQ(Infer("x: Tensor[(n, m), f32]", "expand_dims(x, axis=[0])"), "Tensor[(1, n, m), f32]");
  EXPECT_EQ(Infer("x: Tensor[(n, m), f32]", "expand_dims(x, axis=[-1, 1])"), "Tensor[(n, 1, m, 1), f32]");
  EXPECT_EQ(Infer("x: Tensor[ndim=2, f32]", "expand_dims(x, axis=[0])"), "Tensor[ndim=3, f32]");
  EXPECT_EQ(
      Infer("x: Tensor[(n, m), f32]", "expand_dims(x, axis=[3])"),
      "error: function 'main', binding 'y': expand_dims: axis 3 is out of range for a tensor of rank 3 (expected -3 "
      "<= axis < 3)");
  EXPECT_EQ(Infer("x: Tensor[(n, m), f32]", "expand_dims(x, axis=[0, -4])"),
            "error: function 'main', binding 'y': expand_dims: axis 0 appears twice in attribute 'axis'");

  EXPECT_EQ(Infer("x: Tensor[(1, n, 1, 4), f32]", "squeeze(x)"), "Tensor[(n, 4), f32]");
  EXPECT_EQ(Infer("x: Tensor[(1, n, 1, 4), f32]", "squeeze(x, axis=[-2])"), "Tensor[(1, n, 4), f32]");
  // A symbolic dim is squeezed only when listed; the kernel checks that it is 1.
  EXPECT_EQ(Infer("x: Tensor[(n, k), f32]", "squeeze(x)"), "Tensor[(n, k), f32]");
  EXPECT_EQ(Infer("x: Tensor[(n, k), f32]", "squeeze(x, axis=[1])"), "Tensor[(n,), f32]");
  EXPECT_EQ(Infer("x: Tensor[ndim=3, f32]", "squeeze(x, axis=[1])"), "Tensor[ndim=2, f32]");
  EXPECT_EQ(Infer("x: Tensor[ndim=3, f32]", "squeeze(x)"), "Tensor[f32]");
  EXPECT_EQ(
      Infer("x: Tensor[(n, 4), f32]", "squeeze(x, axis=[1])"),
      "error: function 'main', binding 'y': squeeze: cannot squeeze axis 1 of x: Tensor[(n, 4), f32]: its extent is "
      "4, not 1");
}

TEST(ManipulationRuntime, SqueezeChecksASymbolicDimIsOne) {
  EXPECT_EQ(RunOnce("x: Tensor[(n, k), f32]", "squeeze(x, axis=[1])", {"2x1xf32=1,2"}), "2xf32=1,2");
  EXPECT_EQ(RunOnce("x: Tensor[(n, k), f32]", "squeeze(x, axis=[1])", {"1x2xf32=1,2"}),
            "error: compiled kernel 'squeeze' failed: squeeze: argument 'x' dimension 1 (k) must be 1 to be squeezed");
}

// ---- broadcast_to --------------------------------------------------------------

TEST(ManipulationInfer, BroadcastTo) {
  EXPECT_EQ(Infer("x: Tensor[(m, 1), f32]", "broadcast_to(x, shape(3, m, 5))"), "Tensor[(3, m, 5), f32]");
  EXPECT_EQ(Infer("x: Tensor[(k,), f32], z: Tensor[(n,), f32]", "broadcast_to(x, shape(n, 8))"), "Tensor[(n, 8), f32]");
  EXPECT_EQ(Infer("x: Tensor[f32], z: Tensor[(n,), f32]", "broadcast_to(x, shape(n, 8))"), "Tensor[(n, 8), f32]");
  EXPECT_EQ(Infer("x: Tensor[(3, 4), f32]", "broadcast_to(x, shape(3, 5))"),
            "error: function 'main', binding 'y': broadcast_to: cannot broadcast x: Tensor[(3, 4), f32] to (3, 5): "
            "dimension 1 of x is 4, not 1 or 5");
  EXPECT_EQ(
      Infer("x: Tensor[(n, 4), f32]", "broadcast_to(x, shape(4))"),
      "error: function 'main', binding 'y': broadcast_to: cannot broadcast x: Tensor[(n, 4), f32] to a shape of rank "
      "1: the target has fewer dimensions");
}

TEST(ManipulationRuntime, BroadcastToChecksSymbolicDims) {
  const std::string params = "x: Tensor[(k,), f32], like: Tensor[(n, 2), f32]";
  EXPECT_EQ(RunOnce(params, "broadcast_to(x, shape(n, 2))", {"1xf32=7", "2x2xf32=0,0,0,0"}), "2x2xf32=7,7,7,7");
  EXPECT_EQ(RunOnce(params, "broadcast_to(x, shape(n, 2))", {"3xf32=1,2,3", "2x2xf32=0,0,0,0"}),
            "error: compiled kernel 'broadcast_to' failed: broadcast_to: argument 'x' dimension 0 must be 1 or 2 to "
            "broadcast");
}

// ---- zeros, ones, full ---------------------------------------------------------

TEST(ManipulationInfer, Creation) {
  EXPECT_EQ(Infer("x: Tensor[(n, m), f32]", "zeros(shape(n, m * 2))"), "Tensor[(n, m * 2), f32]");
  EXPECT_EQ(Infer("x: Tensor[(n, m), f32]", "ones(shape(3), dtype=i64)"), "Tensor[(3,), i64]");
  EXPECT_EQ(Infer("x: Tensor[(n, m), f32]", "full(shape(n), fill_value=2, dtype=u8)"), "Tensor[(n,), u8]");
  EXPECT_EQ(Infer("s: Shape[ndim=2]", "zeros(s)"), "Tensor[ndim=2, f32]");
  EXPECT_EQ(Infer("x: Tensor[(n, m), f32]", "full(shape(n), fill_value=2.5, dtype=i32)"),
            "error: function 'main', binding 'y': full: fill value 2.5 is not representable in dtype i32");
  EXPECT_EQ(Infer("x: Tensor[(n, m), f32]", "full(shape(n), fill_value=300, dtype=i8)"),
            "error: function 'main', binding 'y': full: fill value 300 is not representable in dtype i8");
  // The top of each integer range: 2^63 - 1 and 2^64 - 1 round up to doubles
  // out of range, which must be refused rather than wrap or overflow the cast.
  EXPECT_EQ(Infer("x: Tensor[(n, m), f32]", "full(shape(n), fill_value=127, dtype=i8)"), "Tensor[(n,), i8]");
  EXPECT_EQ(Infer("x: Tensor[(n, m), f32]", "full(shape(n), fill_value=128, dtype=i8)"),
            "error: function 'main', binding 'y': full: fill value 128 is not representable in dtype i8");
  EXPECT_EQ(Infer("x: Tensor[(n, m), f32]", "full(shape(n), fill_value=9.3e18, dtype=i64)"),
            "error: function 'main', binding 'y': full: fill value 9.3e+18 is not representable in dtype i64");
  EXPECT_EQ(Infer("x: Tensor[(n, m), f32]", "full(shape(n), fill_value=1.9e19, dtype=u64)"),
            "error: function 'main', binding 'y': full: fill value 1.9e+19 is not representable in dtype u64");
  EXPECT_EQ(Infer("x: Tensor[(n, m), f32]", "full(shape(n), dtype=i8)"),
            "error: function 'main', binding 'y': full: missing attribute 'fill_value' (a float)");
  EXPECT_EQ(Infer("x: Tensor[(n, m), f32]", "zeros(x)"),
            "error: function 'main', binding 'y': zeros: argument 'shape' must be a shape, got Tensor[(n, m), f32]");
}

TEST(ManipulationInfer, ArangeOffsetAndShapeToTensor) {
  EXPECT_EQ(Infer("x: Tensor[(n, m), f32]", "arange(shape(m), offset=[n])"), "Tensor[(m,), i64]");
  EXPECT_EQ(Infer("x: Tensor[(n, m), f32]", "arange(shape(m), offset=[n], dtype=f32)"),
            "error: function 'main', binding 'y': arange: a symbolic offset needs an integer dtype, got f32");
  EXPECT_EQ(Infer("x: Tensor[(n, m), f32]", "arange(shape(m), offset=[n, m])"),
            "error: function 'main', binding 'y': arange: offset must hold one integer expression, got 2");
  EXPECT_EQ(Infer("x: Tensor[(n, m), f32]", "shape_to_tensor(shape(n, m * 2))"), "Tensor[(2,), i64]");
  EXPECT_EQ(Infer("x: Tensor[(n, m), f32]", "shape_to_tensor(shape(n), scalar=true)"), "Tensor[(), i64]");
  EXPECT_EQ(Infer("x: Tensor[(n, m), f32]", "shape_to_tensor(shape(n, m), scalar=true)"),
            "error: function 'main', binding 'y': shape_to_tensor: scalar=true needs a shape of one value, got 2");
}

TEST(ManipulationLegalize, ShapeToTensorReadsTheShapeVariablesAsScalarParameters) {
  EXPECT_EQ(
      Kernel("x: Tensor[(n, m), f32]", "shape_to_tensor(shape(n, m * 2))", "shape_to_tensor"),
      R"(prim_func @shape_to_tensor(Out: Buffer[(2,), i64], n: i64, m: i64) attrs {op = "shape_to_tensor", op_pattern = "opaque"} {
  Out[0] = n
  Out[1] = m * 2
}
)");
}

TEST(ManipulationLegalize, CreationTakesDimsNoInputBindsAsScalarParameters) {
  EXPECT_EQ(
      Kernel("x: Tensor[(n, m), f32]", "full(shape(n, m * 2), fill_value=-1, dtype=i32)", "full"),
      R"(prim_func @full(Out: Buffer[(n, m * 2), i32], n: i64, m: i64) attrs {op = "full", op_pattern = "injective"} {
  for i0 in parallel(0, n) {
    for i1 in vectorized(0, m * 2) {
      Out[i0, i1] = -1i32
    }
  }
}
)");
}

}  // namespace
}  // namespace strata::op::testing
