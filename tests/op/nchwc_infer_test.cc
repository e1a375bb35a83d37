// Shape and dtype inference of the blocked-layout (NCHWc) operators: to_nchwc,
// from_nchwc, max_pool2d_nchwc and avg_pool2d_nchwc over symbolic shapes, every
// compile-time error, and the run-time check of a symbolic channel count.
#include <gtest/gtest.h>

#include "tests/op/op_test_util.h"

namespace strata::op::testing {
namespace {

// An inline f32 tensor of `shape` holding 0, 1, 2, ...
std::string Iota(const std::vector<int>& shape) {
  std::string text;
  int count = 1;
  for (int d : shape) {
    text += std::to_string(d) + "x";
    count *= d;
  }
  text += "f32=";
  for (int i = 0; i < count; ++i) text += (i ? "," : "") + std::to_string(i);
  return text;
}

// ---- to_nchwc ---------------------------------------------------------------------

TEST(NchwcInfer, ToNchwcSplitsTheChannels) {
  EXPECT_EQ(Infer("x: Tensor[(n, 32, h, w), f32]", "to_nchwc(x, block=8)"), "Tensor[(n, 4, h, w, 8), f32]");
  EXPECT_EQ(Infer("x: Tensor[(1, 64, 56, 56), f16]", "to_nchwc(x, block=16)"), "Tensor[(1, 4, 56, 56, 16), f16]");
  EXPECT_EQ(Infer("x: Tensor[(n, 3, h, w), i32]", "to_nchwc(x, block=1)"), "Tensor[(n, 3, h, w, 1), i32]");
  EXPECT_EQ(Infer("x: Tensor[(n, 8, h, w), u8]", "to_nchwc(x, block=8)"), "Tensor[(n, 1, h, w, 8), u8]");
  // A symbolic channel count: floor division, checked by the kernel.
  EXPECT_EQ(Infer("x: Tensor[(n, c, h, w), f32]", "to_nchwc(x, block=8)"), "Tensor[(n, c // 8, h, w, 8), f32]");
  EXPECT_EQ(Infer("x: Tensor[(n, c * 16, h, w), f32]", "to_nchwc(x, block=8)"), "Tensor[(n, c * 2, h, w, 8), f32]");
  // Unknown dims or rank: the rank of the result is known.
  EXPECT_EQ(Infer("x: Tensor[ndim=4, f32]", "to_nchwc(x, block=4)"), "Tensor[ndim=5, f32]");
  EXPECT_EQ(Infer("x: Tensor[f32]", "to_nchwc(x, block=4)"), "Tensor[ndim=5, f32]");
}

TEST(NchwcInfer, ToNchwcErrors) {
  EXPECT_EQ(InferError("x: Tensor[(n, 12, h, w), f32]", "to_nchwc(x, block=8)"),
            "to_nchwc: the 12 channels of x: Tensor[(n, 12, h, w), f32] are not divisible by block=8");
  // A channel expression with a constant remainder is as wrong as a constant.
  EXPECT_EQ(InferError("x: Tensor[(n, c * 8 + 4, h, w), f32]", "to_nchwc(x, block=8)"),
            "to_nchwc: the c * 8 + 4 channels of x: Tensor[(n, c * 8 + 4, h, w), f32] are not divisible by block=8");
  EXPECT_EQ(InferError("x: Tensor[(n, 16, h, w), f32]", "to_nchwc(x, block=0)"),
            "to_nchwc: attribute 'block' must be positive, got 0");
  EXPECT_EQ(InferError("x: Tensor[(n, 16, h, w), f32]", "to_nchwc(x)"), "to_nchwc: missing attribute 'block' (an int)");
  EXPECT_EQ(InferError("x: Tensor[(n, 16, h, w), f32]", "to_nchwc(x, block=[8])"),
            "to_nchwc: attribute 'block' must be an int, got a list of ints");
  EXPECT_EQ(InferError("x: Tensor[(n, 16, h), f32]", "to_nchwc(x, block=8)"),
            "to_nchwc: x: Tensor[(n, 16, h), f32] must be 4-D (N, C, H, W)");
  EXPECT_EQ(InferError("x: Tensor[(n, 16, h, w, 1), f32]", "to_nchwc(x, block=8)"),
            "to_nchwc: x: Tensor[(n, 16, h, w, 1), f32] must be 4-D (N, C, H, W)");
  EXPECT_EQ(InferError("x: Tensor[(n, 16, h, w), bool]", "to_nchwc(x, block=8)"),
            "to_nchwc: x: Tensor[(n, 16, h, w), bool] must be a float or integer tensor");
}

TEST(NchwcLegalize, ToNchwcChecksASymbolicChannelCountAtRunTime) {
  EXPECT_EQ(RunError("x: Tensor[(n, c, h, w), f32]", "to_nchwc(x, block=4)", {Iota({1, 6, 1, 1})}),
            "compiled kernel 'to_nchwc' failed: to_nchwc: channels of x (c) must be divisible by block (4)");
  EXPECT_EQ(RunTensorOnce("x: Tensor[(n, c, h, w), f32]", "to_nchwc(x, block=2)", {Iota({1, 4, 1, 2})}),
            "1x2x1x2x2xf32=0,2,1,3,4,6,5,7");
  // An unknown rank cannot be legalized; known rank with unknown dims can.
  EXPECT_EQ(CompileError(OneCallProgram("x: Tensor[f32]", "to_nchwc(x, block=2)")),
            "LegalizeOps: function 'main', binding 'y': to_nchwc: cannot generate a kernel: x: Tensor[f32] has no "
            "known rank and dtype; give it a shape with match_cast");
  EXPECT_EQ(RunError("x: Tensor[ndim=4, f32]", "to_nchwc(x, block=2)", {Iota({1, 3, 2, 2})}),
            "compiled kernel 'to_nchwc' failed: to_nchwc: channels of x (x_d1) must be divisible by block (2)");
}

// ---- from_nchwc -------------------------------------------------------------------

TEST(NchwcInfer, FromNchwcMergesTheChannels) {
  EXPECT_EQ(Infer("x: Tensor[(n, cb, h, w, 8), f32]", "from_nchwc(x)"), "Tensor[(n, cb * 8, h, w), f32]");
  EXPECT_EQ(Infer("x: Tensor[(n, 4, h, w, 16), i64]", "from_nchwc(x)"), "Tensor[(n, 64, h, w), i64]");
  EXPECT_EQ(Infer("x: Tensor[(n, c // 8, h, w, 8), f32]", "from_nchwc(x)"), "Tensor[(n, c // 8 * 8, h, w), f32]");
  EXPECT_EQ(Infer("x: Tensor[ndim=5, f32]", "from_nchwc(x)"), "Tensor[ndim=4, f32]");
  EXPECT_EQ(Infer("x: Tensor[f64]", "from_nchwc(x)"), "Tensor[ndim=4, f64]");
}

TEST(NchwcInfer, FromNchwcErrors) {
  EXPECT_EQ(InferError("x: Tensor[(n, cb, h, w, b), f32]", "from_nchwc(x)"),
            "from_nchwc: the block dimension (dimension 4) of x: Tensor[(n, cb, h, w, b), f32] must be a positive "
            "constant, got b");
  EXPECT_EQ(InferError("x: Tensor[(n, cb, h, w, 0), f32]", "from_nchwc(x)"),
            "from_nchwc: the block dimension (dimension 4) of x: Tensor[(n, cb, h, w, 0), f32] must be a positive "
            "constant, got 0");
  EXPECT_EQ(InferError("x: Tensor[(n, c, h, w), f32]", "from_nchwc(x)"),
            "from_nchwc: x: Tensor[(n, c, h, w), f32] must be 5-D (N, C / block, H, W, block)");
  EXPECT_EQ(InferError("x: Tensor[(n, cb, h, w, 8), f32]", "from_nchwc(x, block=8)"),
            "from_nchwc: unknown attribute 'block' (it takes none)");
  EXPECT_EQ(InferError("x: Tensor[(n, cb, h, w, 8), bool]", "from_nchwc(x)"),
            "from_nchwc: x: Tensor[(n, cb, h, w, 8), bool] must be a float or integer tensor");
}

TEST(NchwcLegalize, FromNchwcInvertsToNchwc) {
  EXPECT_EQ(RunTensorOnce("x: Tensor[(n, cb, h, w, 2), f32]", "from_nchwc(x)", {Iota({1, 2, 1, 2, 2})}),
            "1x4x1x2xf32=0,2,1,3,4,6,5,7");
}

// ---- max_pool2d_nchwc, avg_pool2d_nchwc ------------------------------------------------

TEST(NchwcInfer, PoolOutputDimsFollowTheNchwRule) {
  const std::string params = "x: Tensor[(n, cb, h, w, 8), f32]";
  EXPECT_EQ(Infer(params, "max_pool2d_nchwc(x, pool_size=[2, 2])"), "Tensor[(n, cb, h // 2, w // 2, 8), f32]");
  EXPECT_EQ(Infer(params, "max_pool2d_nchwc(x, pool_size=[3, 3], strides=[2, 2], padding=[1, 1])"),
            "Tensor[(n, cb, (h + 1) // 2, (w + 1) // 2, 8), f32]");
  EXPECT_EQ(Infer(params, "avg_pool2d_nchwc(x, pool_size=[3, 3], strides=[1, 1], padding=[1, 1])"),
            "Tensor[(n, cb, h, w, 8), f32]");
  EXPECT_EQ(Infer(params, "max_pool2d_nchwc(x, pool_size=[2, 2], padding=[1, 0], ceil_mode=true)"),
            "Tensor[(n, cb, min(h // 2 + 1, (h + 1) // 2 + 1), (w + 1) // 2, 8), f32]");
  EXPECT_EQ(Infer("x: Tensor[(1, 4, 5, 5, 16), f32]",
                  "avg_pool2d_nchwc(x, pool_size=[3, 3], strides=[2, 2], padding=[1, 1], ceil_mode=true, "
                  "count_include_pad=true)"),
            "Tensor[(1, 4, 3, 3, 16), f32]");
  EXPECT_EQ(Infer("x: Tensor[(n, 2, 112, 112, 16), f64]",
                  "max_pool2d_nchwc(x, pool_size=[3, 3], strides=[2, 2], padding=[1, 1], dilation=[1, 1])"),
            "Tensor[(n, 2, 56, 56, 16), f64]");
  EXPECT_EQ(Infer("x: Tensor[ndim=5, f32]", "avg_pool2d_nchwc(x, pool_size=[2, 2])"), "Tensor[ndim=5, f32]");
  EXPECT_EQ(Infer("x: Tensor[f16]", "max_pool2d_nchwc(x, pool_size=[2, 2])"), "Tensor[ndim=5, f16]");
}

TEST(NchwcInfer, PoolErrors) {
  const std::string params = "x: Tensor[(n, cb, h, w, 8), f32]";
  EXPECT_EQ(InferError(params, "max_pool2d_nchwc(x)"),
            "max_pool2d_nchwc: missing attribute 'pool_size' (a list of ints)");
  EXPECT_EQ(InferError(params, "max_pool2d_nchwc(x, pool_size=[2, 2], padding=[1, 2])"),
            "max_pool2d_nchwc: padding [1, 2, 1, 2] must be smaller than the window (2 columns with dilation) on "
            "every side");
  EXPECT_EQ(InferError(params, "avg_pool2d_nchwc(x, pool_size=[0, 2])"),
            "avg_pool2d_nchwc: attribute 'pool_size' must be positive, got [0, 2]");
  EXPECT_EQ(InferError(params, "avg_pool2d_nchwc(x, pool_size=[2, 2], strides=[1, 1, 1])"),
            "avg_pool2d_nchwc: attribute 'strides' must have 2 values (height, width), got [1, 1, 1]");
  EXPECT_EQ(InferError(params, "avg_pool2d_nchwc(x, pool_size=[2, 2], padding=[0, -1])"),
            "avg_pool2d_nchwc: attribute 'padding' must be non-negative, got [0, -1]");
  EXPECT_EQ(InferError(params, "max_pool2d_nchwc(x, pool_size=[2, 2], dilation=[0, 1])"),
            "max_pool2d_nchwc: attribute 'dilation' must be positive, got [0, 1]");
  EXPECT_EQ(InferError(params, "avg_pool2d_nchwc(x, pool_size=[2, 2], count_include_pad=1)"),
            "avg_pool2d_nchwc: attribute 'count_include_pad' must be a bool, got an int");
  EXPECT_EQ(InferError(params, "max_pool2d_nchwc(x, pool_size=[2, 2], count_include_pad=true)"),
            "max_pool2d_nchwc: unknown attribute 'count_include_pad' (expected one of pool_size strides padding "
            "dilation ceil_mode)");
  EXPECT_EQ(InferError("x: Tensor[(1, 2, 3, 1, 8), f32]", "max_pool2d_nchwc(x, pool_size=[2, 2])"),
            "max_pool2d_nchwc: x: Tensor[(1, 2, 3, 1, 8), f32] is too small for pool_size [2, 2] with padding "
            "[0, 0, 0, 0] and dilation [1, 1]: the output width would be 0");
  EXPECT_EQ(InferError("x: Tensor[(n, c, h, w), f32]", "avg_pool2d_nchwc(x, pool_size=[2, 2])"),
            "avg_pool2d_nchwc: x: Tensor[(n, c, h, w), f32] must be 5-D (N, C / block, H, W, block)");
  EXPECT_EQ(InferError("x: Tensor[(n, cb, h, w, b), f32]", "max_pool2d_nchwc(x, pool_size=[2, 2])"),
            "max_pool2d_nchwc: the block dimension (dimension 4) of x: Tensor[(n, cb, h, w, b), f32] must be a "
            "positive constant, got b");
  EXPECT_EQ(InferError("x: Tensor[(n, cb, h, w, 8), i32]", "max_pool2d_nchwc(x, pool_size=[2, 2])"),
            "max_pool2d_nchwc: x: Tensor[(n, cb, h, w, 8), i32] must be a float tensor");
}

TEST(NchwcLegalize, PoolWindowsSmallerThanTheInputStayInBounds) {
  // A 3x3 window with padding 1 over a 1x1 image (symbolic h and w): each
  // output is the one input value of its lane.
  EXPECT_EQ(
      RunTensorOnce("x: Tensor[(n, cb, h, w, 2), f32]",
                    "max_pool2d_nchwc(x, pool_size=[3, 3], strides=[2, 2], padding=[1, 1])", {Iota({1, 1, 1, 1, 2})}),
      "1x1x1x1x2xf32=0,1");
  EXPECT_EQ(RunTensorOnce("x: Tensor[(n, cb, h, w, 2), f32]",
                          "avg_pool2d_nchwc(x, pool_size=[3, 3], padding=[1, 1], count_include_pad=true)",
                          {Iota({1, 1, 1, 1, 2})}),
            "1x1x1x1x2xf32=0,0.11111111");
}

// ---- kernel schedules (docs/ops/nchwc.md) ------------------------------------------

bool Has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(NchwcLegalize, RelayoutKernelsMoveRowsOfTheBlockedTensor) {
  const std::string params = "x: Tensor[(n, c, h, w), f32]";
  // Up to 8 lanes: one statement per lane in a loop along w, which LLVM
  // vectorizes as one interleaved group.
  std::string k = Kernel(params, "to_nchwc(x, block=8)", "to_nchwc");
  EXPECT_TRUE(Has(k, "for r in parallel(0, h * n * (c // 8)) {")) << k;
  EXPECT_TRUE(Has(k, "for w_1 in range(0, w) {\n      Y[r0, r1, r2, w_1, 0] = X[r0, r1 * 8, r2, w_1]\n")) << k;
  EXPECT_TRUE(Has(k, "Y[r0, r1, r2, w_1, 7] = X[r0, r1 * 8 + 7, r2, w_1]\n    }")) << k;
  // 16 lanes: 16-column chunks through a tile of two 8-lane groups, then the
  // tail one column at a time.
  k = Kernel(params, "to_nchwc(x, block=16)", "to_nchwc");
  EXPECT_TRUE(Has(k, "for wc in range(0, w // 16) {\n      alloc T: Buffer[(2, 16, 8), f32]\n")) << k;
  EXPECT_TRUE(Has(k, "T[1, j, 7] = X[r0, r1 * 16 + 15, r2, j + wc * 16]")) << k;
  EXPECT_TRUE(Has(k, "for k in vectorized(0, 8) {\n            Y[r0, r1, r2, j + wc * 16, a * 8 + k] = T[a, j, k]"))
      << k;
  EXPECT_TRUE(Has(k, "for wt in range(w // 16 * 16, w - w // 16 * 16) {\n      for i in vectorized(0, 16) {")) << k;
  k = Kernel("x: Tensor[(n, cb, h, w, 16), f32]", "from_nchwc(x)", "from_nchwc");
  EXPECT_TRUE(Has(k, "T[a, j, k] = X[r0, r1, r2, j + wc * 16, a * 8 + k]")) << k;
  EXPECT_TRUE(Has(k, "Y[r0, r1 * 16 + 15, r2, j + wc * 16] = T[1, j, 7]")) << k;
}

TEST(NchwcLegalize, PoolKernelsVectorizeTheLanesOfTheBlock) {
  // One task per output row; interior columns load without checks.
  std::string k =
      Kernel("x: Tensor[(n, cb, h, w, 8), f32]", "max_pool2d_nchwc(x, pool_size=[2, 2])", "max_pool2d_nchwc");
  EXPECT_TRUE(Has(k, "for t in parallel(0, cb * n * (h // 2)) {")) << k;
  EXPECT_TRUE(Has(k,
                  "for ow in range(0, w // 2) {\n      for i in vectorized(0, 8) {\n        Y[t0, t1, t2, ow, i] = "
                  "max(max(max(X[t0, t1, t2 * 2, ow * 2, i], X[t0, t1, t2 * 2 + 1, ow * 2, i]), "
                  "X[t0, t1, t2 * 2, ow * 2 + 1, i]), X[t0, t1, t2 * 2 + 1, ow * 2 + 1, i])\n"))
      << k;
  // With padding: window rows clamped and flagged per task, border columns
  // per column (outside the loop over the lanes), interior columns unchecked.
  k = Kernel("x: Tensor[(n, cb, h, w, 4), f32]",
             "avg_pool2d_nchwc(x, pool_size=[3, 3], strides=[2, 2], padding=[1, 1])", "avg_pool2d_nchwc");
  EXPECT_TRUE(Has(k, "let row0: i64 = max(0, min(h - 1, t2 * 2 - 1))")) << k;
  EXPECT_TRUE(Has(k, "for ow_left in range(0, lo) {\n      let col0: i64 = max(0, min(w - 1, ow_left * 2 - 1))")) << k;
  EXPECT_TRUE(Has(k,
                  "for ow in range(lo, hi - lo) {\n      let divisor: f32 = cast<f32>(max(rows_in_window * 3, 1))\n"
                  "      for i in vectorized(0, 4) {\n        Y[t0, t1, t2, ow, i] = (select(row0_ok, X[t0, t1, row0, "
                  "ow * 2 - 1, i], 0.0)"))
      << k;
  EXPECT_TRUE(Has(k, "for ow_right in range(hi, (w + 1) // 2 - hi) {")) << k;
}

}  // namespace
}  // namespace strata::op::testing
