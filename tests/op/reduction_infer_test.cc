// Shape and dtype inference of the reductions over symbolic shapes, the
// compile-time errors for bad calls, and the schedules of their kernels.
#include <gtest/gtest.h>

#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"
#include "compiler/transform/pass.h"
#include "tests/op/op_test_util.h"

namespace strata::op::testing {
namespace {

TEST(ReductionInfer, AxesAndKeepdims) {
  EXPECT_EQ(Infer("x: Tensor[(b, t, c), f32]", "sum(x, axes=[1])"), "Tensor[(b, c), f32]");
  EXPECT_EQ(Infer("x: Tensor[(b, t, c), f32]", "mean(x, axes=[-1, 1], keepdims=true)"), "Tensor[(b, 1, 1), f32]");
  EXPECT_EQ(Infer("x: Tensor[(b, t, c), i32]", "max(x)"), "Tensor[(), i32]");
  EXPECT_EQ(Infer("x: Tensor[(b, t, c), f32]", "min(x, keepdims=true)"), "Tensor[(1, 1, 1), f32]");
  // No axes listed: nothing is reduced (numpy's axis=()).
  EXPECT_EQ(Infer("x: Tensor[(n * 2, 3), f32]", "sum(x, axes=[])"), "Tensor[(n * 2, 3), f32]");
  EXPECT_EQ(Infer("x: Tensor[(), f32]", "sum(x)"), "Tensor[(), f32]");
}

TEST(ReductionInfer, UnknownDimsAndRank) {
  EXPECT_EQ(Infer("x: Tensor[ndim=3, f32]", "sum(x, axes=[0])"), "Tensor[ndim=2, f32]");
  EXPECT_EQ(Infer("x: Tensor[ndim=3, f32]", "sum(x, axes=[0], keepdims=true)"), "Tensor[ndim=3, f32]");
  // Every axis without keepdims is a scalar whatever the rank.
  EXPECT_EQ(Infer("x: Tensor[f32]", "max(x)"), "Tensor[(), f32]");
  EXPECT_EQ(Infer("x: Tensor[f32]", "max(x, axes=[0])"), "Tensor[f32]");
  EXPECT_EQ(Infer("x: Tensor[f32]", "max(x, keepdims=true)"), "Tensor[f32]");
}

TEST(ReductionInfer, ErrorsNameTheOperatorAttributeAndShape) {
  EXPECT_EQ(
      Infer("x: Tensor[(n, 4), f32]", "sum(x, axes=[2])"),
      "error: function 'main', binding 'y': sum: axis 2 is out of range for a tensor of rank 2 (expected -2 <= axis "
      "< 2)");
  EXPECT_EQ(Infer("x: Tensor[(n, 4), f32]", "sum(x, axes=[1, -1])"),
            "error: function 'main', binding 'y': sum: axis 1 appears twice in attribute 'axes'");
  EXPECT_EQ(Infer("x: Tensor[(n, 4), i32]", "mean(x, axes=[1])"),
            "error: function 'main', binding 'y': mean: x: Tensor[(n, 4), i32] must be a float tensor");
  EXPECT_EQ(
      Infer("x: Tensor[(n, 4), bool]", "max(x)"),
      "error: function 'main', binding 'y': max: x: Tensor[(n, 4), bool] must be a numeric tensor; cast it first");
  EXPECT_EQ(Infer("x: Tensor[(n, 4), f32]", "sum(x, keepdims=1)"),
            "error: function 'main', binding 'y': sum: attribute 'keepdims' must be a bool, got an int");
  EXPECT_EQ(Infer("s: Shape[(n, 4)]", "min(s)"),
            "error: function 'main', binding 'y': min: argument 'x' must be a tensor, got Shape[(n, 4)]");
}

TEST(ReductionLegalize, InnermostReducedAxisUsesVectorLanesFoldedPairwise) {
  EXPECT_EQ(
      Kernel("x: Tensor[(n, m), f32]", "max(x, axes=[1])", "max"),
      R"(prim_func @max(A: Buffer[(n, m), f32], Out: Buffer[(n,), f32]) attrs {op = "max", op_pattern = "reduction"} {
  for i0 in parallel(0, n) {
    alloc acc: Buffer[(32,), f32]
    for lane in vectorized(0, 32) {
      acc[lane] = -inf
    }
    for strip in range(0, m // 32) {
      for lane in vectorized(0, 32) {
        acc[lane] = select(acc[lane] < A[i0, lane + strip * 32] || A[i0, lane + strip * 32] != A[i0, lane + strip * 32], A[i0, lane + strip * 32], acc[lane])
      }
    }
    for lane in vectorized(0, m % 32) {
      acc[lane] = select(acc[lane] < A[i0, lane + m // 32 * 32] || A[i0, lane + m // 32 * 32] != A[i0, lane + m // 32 * 32], A[i0, lane + m // 32 * 32], acc[lane])
    }
    for lane in unrolled(0, 16) {
      acc[lane] = select(acc[lane] < acc[lane + 16] || acc[lane + 16] != acc[lane + 16], acc[lane + 16], acc[lane])
    }
    for lane in unrolled(0, 8) {
      acc[lane] = select(acc[lane] < acc[lane + 8] || acc[lane + 8] != acc[lane + 8], acc[lane + 8], acc[lane])
    }
    for lane in unrolled(0, 4) {
      acc[lane] = select(acc[lane] < acc[lane + 4] || acc[lane + 4] != acc[lane + 4], acc[lane + 4], acc[lane])
    }
    for lane in unrolled(0, 2) {
      acc[lane] = select(acc[lane] < acc[lane + 2] || acc[lane + 2] != acc[lane + 2], acc[lane + 2], acc[lane])
    }
    acc[0] = select(acc[0] < acc[1] || acc[1] != acc[1], acc[1], acc[0])
    Out[i0] = acc[0]
  }
}
)");
  // A constant extent below the lane count needs only as many lanes, and no strip loop.
  EXPECT_EQ(
      Kernel("x: Tensor[(n, 3), i32]", "sum(x, axes=[1])", "sum"),
      R"(prim_func @sum(A: Buffer[(n, 3), i32], Out: Buffer[(n,), i32]) attrs {op = "sum", op_pattern = "reduction"} {
  for i0 in parallel(0, n) {
    alloc acc: Buffer[(4,), i32]
    for lane in vectorized(0, 4) {
      acc[lane] = 0i32
    }
    for lane in vectorized(0, 3) {
      acc[lane] = acc[lane] + A[i0, lane]
    }
    for lane in unrolled(0, 2) {
      acc[lane] = acc[lane] + acc[lane + 2]
    }
    acc[0] = acc[0] + acc[1]
    Out[i0] = acc[0]
  }
}
)");
}

TEST(ReductionLegalize, InnermostKeptAxisAccumulatesTilesLocally) {
  EXPECT_EQ(
      Kernel("x: Tensor[(a, b, c), f32]", "mean(x, axes=[0])", "mean"),
      R"(prim_func @mean(A: Buffer[(a, b, c), f32], Out: Buffer[(b, c), f32]) attrs {op = "mean", op_pattern = "reduction"} {
  for i1 in parallel(0, b) {
    for tile in range(0, (c + 255) // 256) {
      alloc acc: Buffer[(256,), f32]
      for i2 in vectorized(0, min(256, c - tile * 256)) {
        acc[i2] = 0.0
      }
      for r0 in range(0, a) {
        for i2 in vectorized(0, min(256, c - tile * 256)) {
          acc[i2] = acc[i2] + A[r0, i1, i2 + tile * 256]
        }
      }
      for i2 in vectorized(0, min(256, c - tile * 256)) {
        Out[i1, i2 + tile * 256] = acc[i2] / cast<f32>(a)
      }
    }
  }
}
)");
  // A constant innermost extent that fits one tile needs no tile loop. f16 accumulates in f32.
  EXPECT_EQ(
      Kernel("x: Tensor[(n, 8), f16]", "min(x, axes=[0], keepdims=true)", "min"),
      R"(prim_func @min(A: Buffer[(n, 8), f16], Out: Buffer[(1, 8), f16]) attrs {op = "min", op_pattern = "reduction"} {
  alloc acc: Buffer[(8,), f32]
  for i1 in vectorized(0, 8) {
    acc[i1] = inf
  }
  for r0 in range(0, n) {
    for i1 in vectorized(0, 8) {
      acc[i1] = select(cast<f32>(A[r0, i1]) < acc[i1] || cast<f32>(A[r0, i1]) != cast<f32>(A[r0, i1]), cast<f32>(A[r0, i1]), acc[i1])
    }
  }
  for i1 in vectorized(0, 8) {
    Out[0, i1] = cast<f16>(acc[i1])
  }
}
)");
}

}  // namespace
}  // namespace strata::op::testing
