// Shape inference, errors and run-time index checks of the indexing ops
// (gather_elements, gather_nd) and cumsum over symbolic shapes.
#include <gtest/gtest.h>

#include "tests/op/op_test_util.h"
#include "vm/tensor_io/npy.h"
#include "vm/virtual_machine.h"

namespace strata::op::testing {
namespace {

TEST(IndexingInfer, GathersTakeTheIndicesShape) {
  EXPECT_EQ(Infer("x: Tensor[(n, 5), f32], i: Tensor[(n, k), i64]", "gather_elements(x, i, axis=1)"),
            "Tensor[(n, k), f32]");
  EXPECT_EQ(Infer("x: Tensor[(n, h, 3), f32], i: Tensor[(k, 2), i64]", "gather_nd(x, i)"), "Tensor[(k, 3), f32]");
  EXPECT_EQ(Infer("x: Tensor[(4, 5), f32], i: Tensor[(n, 3, 2), i32]", "gather_nd(x, i)"), "Tensor[(n, 3), f32]");
  EXPECT_EQ(Infer("x: Tensor[(n, h), i64]", "cumsum(x, axis=-1, reverse=true)"), "Tensor[(n, h), i64]");
}

TEST(IndexingInfer, BadCallsNameTheArgument) {
  EXPECT_EQ(Infer("x: Tensor[(n, 5), f32], i: Tensor[(n,), i64]", "gather_elements(x, i, axis=1)"),
            "error: function 'main', binding 'y': gather_elements: indices: Tensor[(n,), i64] must have the rank of x: "
            "Tensor[(n, 5), f32]");
  EXPECT_EQ(Infer("x: Tensor[(n, 5), f32], i: Tensor[(n, 5), f32]", "gather_elements(x, i)"),
            "error: function 'main', binding 'y': gather_elements: indices: Tensor[(n, 5), f32] must be a signed "
            "integer tensor");
  EXPECT_EQ(Infer("x: Tensor[(n, 5), f32], i: Tensor[(k, t), i64]", "gather_nd(x, i)"),
            "error: function 'main', binding 'y': gather_nd: the last dimension of indices: Tensor[(k, t), i64] (the "
            "index tuple length) must be known at compile time");
  EXPECT_EQ(Infer("x: Tensor[(n, 5), f32], i: Tensor[(k, 3), i64]", "gather_nd(x, i)"),
            "error: function 'main', binding 'y': gather_nd: index tuples of length 3 cannot address x: Tensor[(n, "
            "5), f32] (rank 2)");
  EXPECT_EQ(Infer("x: Tensor[(n, 5), bool]", "cumsum(x, axis=0)"),
            "error: function 'main', binding 'y': cumsum: x: Tensor[(n, 5), bool] must be a numeric tensor");
  EXPECT_EQ(Infer("x: Tensor[(n, 5), f32]", "cumsum(x)"),
            "error: function 'main', binding 'y': cumsum: missing attribute 'axis' (an int)");
}

TEST(IndexingRuntime, GathersRejectAnOutOfRangeIndexBeforeReadingAnything) {
  const std::string params = "x: Tensor[(v, 2), f32], i: Tensor[(k, 1), i64]";
  EXPECT_EQ(RunTensorOnce(params, "gather_nd(x, i)", {"3x2xf32=1,2,3,4,5,6", "2x1xi64=-1,0"}), "2x2xf32=5,6,1,2");
  EXPECT_EQ(RunTensorOnce(params, "gather_nd(x, i)", {"3x2xf32=1,2,3,4,5,6", "1x1xi64=3"}),
            "error: compiled kernel 'gather_nd' failed: gather_nd: argument 'indices' holds an index out of range for "
            "dimension 0 of x (extent v)");
  const std::string same_rank = "x: Tensor[(v, 2), f32], i: Tensor[(k, 2), i64]";
  EXPECT_EQ(RunTensorOnce(same_rank, "gather_elements(x, i, axis=0)", {"3x2xf32=1,2,3,4,5,6", "1x2xi64=2,-3"}),
            "1x2xf32=5,2");
  EXPECT_EQ(
      RunTensorOnce(same_rank, "gather_elements(x, i, axis=0)", {"3x2xf32=1,2,3,4,5,6", "1x2xi64=0,-4"}),
      "error: compiled kernel 'gather_elements' failed: gather_elements: argument 'indices' holds an index out of "
      "range for axis 0 of x (extent v); indices must lie in [-v, v)");
  // Along the gathered axis indices may be longer than x; along the others not.
  EXPECT_EQ(
      RunTensorOnce(same_rank, "gather_elements(x, i, axis=0)", {"3x2xf32=1,2,3,4,5,6", "4x2xi64=0,1,2,0,1,2,0,1"}),
      "4x2xf32=1,4,5,2,3,6,1,4");
  EXPECT_EQ(RunTensorOnce("x: Tensor[(v, 2), f32], i: Tensor[(k, m), i64]", "gather_elements(x, i, axis=0)",
                          {"3x2xf32=1,2,3,4,5,6", "1x3xi64=0,0,0"}),
            "error: compiled kernel 'gather_elements' failed: gather_elements: argument 'indices' dimension 1 (m) "
            "must not exceed dimension 1 of x (2)");
}

TEST(IndexingInfer, ArgReductionsGiveI64) {
  EXPECT_EQ(Infer("x: Tensor[(n, h, 4), f32]", "argmax(x, axis=1)"), "Tensor[(n, 1, 4), i64]");
  EXPECT_EQ(Infer("x: Tensor[(n, h, 4), i32]", "argmin(x, axis=-1, keepdims=false)"), "Tensor[(n, h), i64]");
  EXPECT_EQ(Infer("x: Tensor[(n, 0), f32]", "argmax(x, axis=1)"),
            "error: function 'main', binding 'y': argmax: axis 1 of x: Tensor[(n, 0), f32] is empty");
  EXPECT_EQ(Infer("x: Tensor[(n, h), f32]", "prod(x, axes=[1])"), "Tensor[(n,), f32]");
}

TEST(IndexingRuntime, ArgReductionsBreakTiesByIndexAndRefuseAnEmptyAxis) {
  const std::string params = "x: Tensor[(n, h), f32]";
  EXPECT_EQ(RunTensorOnce(params, "argmax(x, axis=1, keepdims=false)", {"2x3xf32=1,3,3,2,2,0"}), "2xi64=1,0");
  EXPECT_EQ(RunTensorOnce(params, "argmax(x, axis=1, keepdims=false, select_last_index=true)", {"2x3xf32=1,3,3,2,2,0"}),
            "2xi64=2,1");
  EXPECT_EQ(RunTensorOnce(params, "argmin(x, axis=0)", {"2x3xf32=1,3,3,2,2,0"}), "1x3xi64=0,1,1");
  EXPECT_EQ(RunTensorOnce(params, "argmax(x, axis=1)", {"2x0xf32="}),
            "error: compiled kernel 'argmax' failed: argmax: argument 'x' dimension 1 (h) must not be empty");
}

TEST(IndexingInfer, ScattersCheckUpdatesAndReduction) {
  EXPECT_EQ(Infer("x: Tensor[(n, 5), f32], i: Tensor[(n, 2), i64], u: Tensor[(n, 2), f32]",
                  "scatter_elements(x, i, u, axis=1, reduction=\"add\")"),
            "Tensor[(n, 5), f32]");
  EXPECT_EQ(Infer("x: Tensor[(6, h), f32], i: Tensor[(k, 1), i64], u: Tensor[(k, h), f32]", "scatter_nd(x, i, u)"),
            "Tensor[(6, h), f32]");
  EXPECT_EQ(Infer("x: Tensor[(6, 4), f32], i: Tensor[(k, 1), i64], u: Tensor[(k, 3), f32]", "scatter_nd(x, i, u)"),
            "error: function 'main', binding 'y': scatter_nd: updates: Tensor[(k, 3), f32] must have shape (k, 4) "
            "(indices' leading dims, then x's from dim 1)");
  EXPECT_EQ(Infer("x: Tensor[(n, 5), f32], i: Tensor[(n, 2), i64], u: Tensor[(n, 2), f32]",
                  "scatter_elements(x, i, u, reduction=\"mean\")"),
            "error: function 'main', binding 'y': scatter_elements: reduction must be \"none\", \"add\", \"mul\", "
            "\"max\" or \"min\", got \"mean\"");
  // Found by onnx_import_fuzzer: a rank-0 updates passed inference (an empty loop over
  // dimensions compared nothing) and legalization then read past its shape.
  EXPECT_EQ(
      Infer("x: Tensor[(n, 5), f32], i: Tensor[(n, 2), i64], u: Tensor[(), f32]", "scatter_elements(x, i, u, axis=1)"),
      "error: function 'main', binding 'y': scatter_elements: updates: Tensor[(), f32] must have the shape of "
      "indices: Tensor[(n, 2), i64]");
  EXPECT_EQ(Infer("x: Tensor[(n, 5), f32], i: Tensor[(n, 2), i64], u: Tensor[ndim=1, f32]",
                  "scatter_elements(x, i, u, axis=1)"),
            "error: function 'main', binding 'y': scatter_elements: updates: Tensor[ndim=1, f32] must have the shape "
            "of indices: Tensor[(n, 2), i64]");
}

TEST(IndexingRuntime, ScatterRefusesAnOutOfRangeIndexBeforeWriting) {
  const std::string params = "x: Tensor[(v, 2), f32], i: Tensor[(k, 1), i64], u: Tensor[(k, 2), f32]";
  EXPECT_EQ(RunTensorOnce(params, "scatter_nd(x, i, u)", {"3x2xf32=1,2,3,4,5,6", "1x1xi64=-1", "1x2xf32=7,8"}),
            "3x2xf32=1,2,3,4,7,8");
  EXPECT_EQ(RunTensorOnce(params, "scatter_nd(x, i, u)", {"3x2xf32=1,2,3,4,5,6", "1x1xi64=3", "1x2xf32=7,8"}),
            "error: compiled kernel 'scatter_nd' failed: scatter_nd: argument 'indices' holds an index out of range "
            "for dimension 0 of x (extent v)");
  // A symbolic updates shape that turns out wrong is caught before any read.
  EXPECT_EQ(RunTensorOnce("x: Tensor[(v, h), f32], i: Tensor[(k, 1), i64], u: Tensor[(k, m), f32]",
                          "scatter_nd(x, i, u)", {"3x2xf32=1,2,3,4,5,6", "1x1xi64=0", "1x3xf32=7,8,9"}),
            "error: compiled kernel 'scatter_nd' failed: scatter_nd: argument 'updates' dimension 1 (m) must equal h");
}

TEST(IndexingInfer, TopKAndOneHotCarrySymbolicExtents) {
  EXPECT_EQ(Infer("x: Tensor[(n, h, 6), f32]", "topk(x, k=[3])"),
            "Tuple[Tensor[(n, h, 3), f32], Tensor[(n, h, 3), i64]]");
  EXPECT_EQ(Infer("x: Tensor[(n, h), f32]", "topk(x, k=[h], axis=1, largest=false)"),
            "Tuple[Tensor[(n, h), f32], Tensor[(n, h), i64]]");
  EXPECT_EQ(Infer("x: Tensor[(n, 4), f32]", "topk(x, k=[5])"),
            "error: function 'main', binding 'y': topk: k 5 exceeds dimension 1 of x: Tensor[(n, 4), f32]");
  EXPECT_EQ(Infer("i: Tensor[(n, h), i64]", "one_hot(i, depth=[h], axis=0, dtype=i64)"), "Tensor[(h, n, h), i64]");
  EXPECT_EQ(Infer("i: Tensor[(n, h), f32]", "one_hot(i, depth=[4])"),
            "error: function 'main', binding 'y': one_hot: indices: Tensor[(n, h), f32] must be a signed integer "
            "tensor");
}

TEST(IndexingRuntime, TopKPicksInValueThenIndexOrder) {
  StatusOr<vm::Value> result = RunMain(OneCallProgram("x: Tensor[(h,), f32]", "topk(x, k=[3])"), {"5xf32=1,3,2,3,0"});
  ASSERT_TRUE(result.ok()) << result.status().message();
  EXPECT_EQ(vm::FormatInlineTensor(*result->tuple()->fields()[0].tensor()), "3xf32=3,3,2");
  EXPECT_EQ(vm::FormatInlineTensor(*result->tuple()->fields()[1].tensor()), "3xi64=1,3,2");
  StatusOr<vm::Value> too_many = RunMain(OneCallProgram("x: Tensor[(h,), f32], s: Tensor[(k,), f32]", "topk(x, k=[k])"),
                                         {"2xf32=1,2", "3xf32=0,0,0"});
  ASSERT_FALSE(too_many.ok());
  EXPECT_EQ(too_many.status().message(),
            "compiled kernel 'topk' failed: topk: k (k) must not exceed argument 'x' dimension 0 (h)");
}

TEST(IndexingRuntime, CumsumForwardReverseAndExclusive) {
  const std::string params = "x: Tensor[(n, h), f32]";
  EXPECT_EQ(RunTensorOnce(params, "cumsum(x, axis=1)", {"2x3xf32=1,2,3,4,5,6"}), "2x3xf32=1,3,6,4,9,15");
  EXPECT_EQ(RunTensorOnce(params, "cumsum(x, axis=0, exclusive=true)", {"2x3xf32=1,2,3,4,5,6"}), "2x3xf32=0,0,0,1,2,3");
  EXPECT_EQ(RunTensorOnce(params, "cumsum(x, axis=1, reverse=true)", {"2x3xf32=1,2,3,4,5,6"}), "2x3xf32=6,5,3,15,11,6");
  EXPECT_EQ(RunTensorOnce(params, "cumsum(x, axis=1, reverse=true, exclusive=true)", {"2x3xf32=1,2,3,4,5,6"}),
            "2x3xf32=5,3,0,11,6,0");
  EXPECT_EQ(RunTensorOnce(params, "cumsum(x, axis=1)", {"2x0xf32="}), "2x0xf32=");
}

}  // namespace
}  // namespace strata::op::testing
