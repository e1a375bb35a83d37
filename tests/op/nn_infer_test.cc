// Shape and dtype inference of the neural-network operators over symbolic
// shapes, the compile-time errors for bad calls, and the run-time checks the
// kernels make for what the struct info could not prove.
#include <gtest/gtest.h>

#include "compiler/driver/compile.h"
#include "compiler/ir/parser.h"
#include "tests/op/op_test_util.h"
#include "vm/tensor_io/npy.h"
#include "vm/virtual_machine.h"

namespace strata::op::testing {
namespace {

// An inline f32 tensor of `shape` filled with ones.
std::string Ones(const std::vector<int>& shape) {
  std::string text;
  int count = 1;
  for (int d : shape) {
    text += std::to_string(d) + "x";
    count *= d;
  }
  text += "f32=";
  for (int i = 0; i < count; ++i) text += i ? ",1" : "1";
  return text;
}

// ---- conv2d ---------------------------------------------------------------------

TEST(NeuralNetworkInfer, Conv2dOutputDimsAreSymbolic) {
  const std::string params = "x: Tensor[(n, 3, h, w), f32], wt: Tensor[(8, 3, 3, 3), f32]";
  EXPECT_EQ(Infer(params, "conv2d(x, wt)"), "Tensor[(n, 8, h - 2, w - 2), f32]");
  EXPECT_EQ(Infer(params, "conv2d(x, wt, padding=[1, 1])"), "Tensor[(n, 8, h, w), f32]");
  EXPECT_EQ(Infer(params, "conv2d(x, wt, strides=[2, 1], padding=[1, 0, 0, 2])"), "Tensor[(n, 8, h // 2, w), f32]");
  EXPECT_EQ(Infer(params, "conv2d(x, wt, padding=[1, 1], dilation=[2, 3])"), "Tensor[(n, 8, h - 2, w - 4), f32]");
  EXPECT_EQ(Infer("x: Tensor[(1, 3, 224, 224), f32], wt: Tensor[(64, 3, 7, 7), f32]",
                  "conv2d(x, wt, strides=[2, 2], padding=[3, 3])"),
            "Tensor[(1, 64, 112, 112), f32]");
  // The kernel size may be symbolic too.
  EXPECT_EQ(Infer("x: Tensor[(n, c, h, w), f32], wt: Tensor[(o, c, k, k), f32]", "conv2d(x, wt)"),
            "Tensor[(n, o, h - k + 1, w - k + 1), f32]");
  EXPECT_EQ(Infer("x: Tensor[(n, 4, h, w), f32], wt: Tensor[(6, 2, 3, 3), f32]", "conv2d(x, wt, groups=2)"),
            "Tensor[(n, 6, h - 2, w - 2), f32]");
}

TEST(NeuralNetworkInfer, Conv2dWithUnknownShapesKeepsTheRank) {
  EXPECT_EQ(Infer("x: Tensor[ndim=4, f32], wt: Tensor[(8, 3, 3, 3), f32]", "conv2d(x, wt)"), "Tensor[ndim=4, f32]");
  EXPECT_EQ(Infer("x: Tensor[f32], wt: Tensor[f32]", "conv2d(x, wt)"), "Tensor[ndim=4, f32]");
  EXPECT_EQ(Infer("x: Tensor, wt: Tensor[(8, 3, 3, 3), f32]", "conv2d(x, wt)"), "Tensor[ndim=4, f32]");
}

TEST(NeuralNetworkInfer, Conv2dErrorsNameTheArgumentsAndShapes) {
  EXPECT_EQ(InferError("x: Tensor[(1, 3, 8, 8), f32], wt: Tensor[(4, 2, 3, 3), f32]", "conv2d(x, wt)"),
            "conv2d: x: Tensor[(1, 3, 8, 8), f32] has 3 channels, but weight: Tensor[(4, 2, 3, 3), f32] with groups=1 "
            "expects 2");
  EXPECT_EQ(InferError("x: Tensor[(1, 4, 8, 8), f32], wt: Tensor[(5, 2, 3, 3), f32]", "conv2d(x, wt, groups=2)"),
            "conv2d: the 5 output channels of weight: Tensor[(5, 2, 3, 3), f32] are not divisible by groups=2");
  EXPECT_EQ(InferError("x: Tensor[(n, 3, 2, w), f32], wt: Tensor[(4, 3, 3, 3), f32]", "conv2d(x, wt)"),
            "conv2d: x: Tensor[(n, 3, 2, w), f32] is too small for the kernel of weight: Tensor[(4, 3, 3, 3), f32] "
            "with padding [0, 0, 0, 0] and dilation [1, 1]: the output height would be 0");
  EXPECT_EQ(InferError("x: Tensor[(n, 3, h), f32], wt: Tensor[(4, 3, 3, 3), f32]", "conv2d(x, wt)"),
            "conv2d: x: Tensor[(n, 3, h), f32] must be 4-D (N, C, H, W)");
  EXPECT_EQ(InferError("x: Tensor[(n, 3, h, w), f32], wt: Tensor[(4, 3, 3), f32]", "conv2d(x, wt)"),
            "conv2d: weight: Tensor[(4, 3, 3), f32] must be 4-D (O, C / groups, KH, KW)");
  EXPECT_EQ(InferError("x: Tensor[(n, 3, h, w), f32], wt: Tensor[(4, 3, 3, 3), f64]", "conv2d(x, wt)"),
            "conv2d: x: Tensor[(n, 3, h, w), f32] and weight: Tensor[(4, 3, 3, 3), f64] have different dtypes "
            "(f32 vs f64); cast one of them");
  EXPECT_EQ(InferError("x: Tensor[(n, 3, h, w), i32], wt: Tensor[(4, 3, 3, 3), i32]", "conv2d(x, wt)"),
            "conv2d: x: Tensor[(n, 3, h, w), i32] must be a float tensor");
  EXPECT_EQ(InferError("x: Tensor[(n, 3, h, w), f32], s: Shape[(4, 3, 3, 3)]", "conv2d(x, s)"),
            "conv2d: argument 'weight' must be a tensor, got Shape[(4, 3, 3, 3)]");
}

TEST(NeuralNetworkInfer, WindowAttributesAreChecked) {
  const std::string params = "x: Tensor[(n, 3, h, w), f32], wt: Tensor[(8, 3, 3, 3), f32]";
  EXPECT_EQ(InferError(params, "conv2d(x, wt, strides=[1, 1, 1])"),
            "conv2d: attribute 'strides' must have 2 values (height, width), got [1, 1, 1]");
  EXPECT_EQ(InferError(params, "conv2d(x, wt, strides=[0, 1])"),
            "conv2d: attribute 'strides' must be positive, got [0, 1]");
  EXPECT_EQ(InferError(params, "conv2d(x, wt, dilation=[1, -2])"),
            "conv2d: attribute 'dilation' must be positive, got [1, -2]");
  EXPECT_EQ(InferError(params, "conv2d(x, wt, padding=[1, 1, 1])"),
            "conv2d: attribute 'padding' must have 2 values (height, width) or 4 (top, left, bottom, right), got "
            "[1, 1, 1]");
  EXPECT_EQ(InferError(params, "conv2d(x, wt, padding=[0, -1])"),
            "conv2d: attribute 'padding' must be non-negative, got [0, -1]");
  EXPECT_EQ(InferError(params, "conv2d(x, wt, groups=0)"), "conv2d: attribute 'groups' must be positive, got 0");
  EXPECT_EQ(InferError(params, "conv2d(x, wt, strides=\"2\")"),
            "conv2d: attribute 'strides' must be a list of ints, got a string");
}

// ---- pooling --------------------------------------------------------------------

TEST(NeuralNetworkInfer, PoolOutputDims) {
  const std::string params = "x: Tensor[(n, c, h, w), f32]";
  // strides default to pool_size.
  EXPECT_EQ(Infer(params, "max_pool2d(x, pool_size=[2, 2])"), "Tensor[(n, c, h // 2, w // 2), f32]");
  EXPECT_EQ(Infer(params, "max_pool2d(x, pool_size=[3, 3], strides=[2, 2], padding=[1, 1])"),
            "Tensor[(n, c, (h + 1) // 2, (w + 1) // 2), f32]");
  EXPECT_EQ(Infer(params, "avg_pool2d(x, pool_size=[3, 3], strides=[1, 1], padding=[1, 1])"),
            "Tensor[(n, c, h, w), f32]");
  // ceil_mode: rounded up, but the last window must start inside the input or the leading padding.
  EXPECT_EQ(Infer(params, "max_pool2d(x, pool_size=[2, 2], padding=[1, 0], ceil_mode=true)"),
            "Tensor[(n, c, min(h // 2 + 1, (h + 1) // 2 + 1), (w + 1) // 2), f32]");
  EXPECT_EQ(Infer("x: Tensor[(1, 1, 5, 6), f32]", "max_pool2d(x, pool_size=[2, 2], ceil_mode=true)"),
            "Tensor[(1, 1, 3, 3), f32]");
  EXPECT_EQ(Infer("x: Tensor[(1, 1, 5, 5), f32]",
                  "avg_pool2d(x, pool_size=[3, 3], strides=[2, 2], padding=[1, 1], ceil_mode=true)"),
            "Tensor[(1, 1, 3, 3), f32]");
  EXPECT_EQ(Infer("x: Tensor[ndim=4, f32]", "avg_pool2d(x, pool_size=[2, 2])"), "Tensor[ndim=4, f32]");
  EXPECT_EQ(Infer(params, "global_avg_pool2d(x)"), "Tensor[(n, c, 1, 1), f32]");
  EXPECT_EQ(Infer("x: Tensor[f16]", "global_avg_pool2d(x)"), "Tensor[ndim=4, f16]");
}

TEST(NeuralNetworkInfer, PoolErrors) {
  const std::string params = "x: Tensor[(n, c, h, w), f32]";
  EXPECT_EQ(InferError(params, "max_pool2d(x)"), "max_pool2d: missing attribute 'pool_size' (a list of ints)");
  EXPECT_EQ(InferError(params, "max_pool2d(x, pool_size=[2, 2], padding=[1, 2])"),
            "max_pool2d: padding [1, 2, 1, 2] must be smaller than the window (2 columns with dilation) on every "
            "side");
  EXPECT_EQ(InferError(params, "avg_pool2d(x, pool_size=[0, 2])"),
            "avg_pool2d: attribute 'pool_size' must be positive, got [0, 2]");
  EXPECT_EQ(InferError(params, "avg_pool2d(x, pool_size=[2, 2], count_include_pad=1)"),
            "avg_pool2d: attribute 'count_include_pad' must be a bool, got an int");
  EXPECT_EQ(InferError(params, "max_pool2d(x, pool_size=[2, 2], count_include_pad=true)"),
            "max_pool2d: unknown attribute 'count_include_pad' (expected one of pool_size strides padding dilation "
            "ceil_mode)");
  EXPECT_EQ(InferError("x: Tensor[(1, 2, 3, 1), f32]", "max_pool2d(x, pool_size=[2, 2])"),
            "max_pool2d: x: Tensor[(1, 2, 3, 1), f32] is too small for pool_size [2, 2] with padding [0, 0, 0, 0] "
            "and dilation [1, 1]: the output width would be 0");
  EXPECT_EQ(InferError("x: Tensor[(n, c, h), f32]", "avg_pool2d(x, pool_size=[2, 2])"),
            "avg_pool2d: x: Tensor[(n, c, h), f32] must be 4-D (N, C, H, W)");
  EXPECT_EQ(InferError("x: Tensor[(n, c), f32]", "global_avg_pool2d(x)"),
            "global_avg_pool2d: x: Tensor[(n, c), f32] must be 4-D (N, C, H, W)");
  EXPECT_EQ(InferError("x: Tensor[(n, c, h, w), i64]", "max_pool2d(x, pool_size=[2, 2])"),
            "max_pool2d: x: Tensor[(n, c, h, w), i64] must be a float tensor");
}

// ---- softmax, normalization, dropout --------------------------------------------------

TEST(NeuralNetworkInfer, SoftmaxKeepsTheShape) {
  EXPECT_EQ(Infer("x: Tensor[(n, m), f32]", "softmax(x)"), "Tensor[(n, m), f32]");
  EXPECT_EQ(Infer("x: Tensor[(b, t, c), f64]", "log_softmax(x, axis=-3)"), "Tensor[(b, t, c), f64]");
  EXPECT_EQ(Infer("x: Tensor[f32]", "softmax(x, axis=5)"), "Tensor[f32]");
  EXPECT_EQ(InferError("x: Tensor[(n, m), f32]", "softmax(x, axis=2)"),
            "softmax: axis 2 is out of range for a tensor of rank 2 (expected -2 <= axis < 2)");
  EXPECT_EQ(InferError("x: Tensor[(n, m), i32]", "log_softmax(x)"),
            "log_softmax: x: Tensor[(n, m), i32] must be a float tensor");
}

TEST(NeuralNetworkInfer, NormalizationParametersMatchTheNormalizedDims) {
  EXPECT_EQ(Infer("x: Tensor[(n, d), f32], g: Tensor[(d,), f32], b: Tensor[(d,), f32]", "layer_norm(x, g, b)"),
            "Tensor[(n, d), f32]");
  EXPECT_EQ(Infer("x: Tensor[(b, t, c), f32], g: Tensor[(t, c), f32], bt: Tensor[(t, c), f32]",
                  "layer_norm(x, g, bt, axis=1, epsilon=0.001)"),
            "Tensor[(b, t, c), f32]");
  EXPECT_EQ(Infer("x: Tensor[(n, c, h, w), f32], g: Tensor[(c,), f32], b: Tensor[(c,), f32], m: Tensor[(c,), f32], "
                  "v: Tensor[(c,), f32]",
                  "batch_norm(x, g, b, m, v)"),
            "Tensor[(n, c, h, w), f32]");
  EXPECT_EQ(Infer("x: Tensor[f32], g: Tensor[(4,), f32], b: Tensor[(4,), f32]", "layer_norm(x, g, b)"), "Tensor[f32]");
  EXPECT_EQ(InferError("x: Tensor[(n, 4), f32], g: Tensor[(5,), f32], b: Tensor[(4,), f32]", "layer_norm(x, g, b)"),
            "layer_norm: gamma: Tensor[(5,), f32] must have the shape x.shape[1:] = (4,) of x: Tensor[(n, 4), f32]");
  EXPECT_EQ(
      InferError("x: Tensor[(n, t, 4), f32], g: Tensor[(4,), f32], b: Tensor[(4,), f32]",
                 "layer_norm(x, g, b, axis=1)"),
      "layer_norm: gamma: Tensor[(4,), f32] must have the shape x.shape[1:] = (t, 4) of x: Tensor[(n, t, 4), f32]");
  EXPECT_EQ(InferError("x: Tensor[(n, 4), f32], g: Tensor[(4,), f32], b: Tensor[(4,), f16]", "layer_norm(x, g, b)"),
            "layer_norm: x: Tensor[(n, 4), f32] and beta: Tensor[(4,), f16] have different dtypes (f32 vs f16); cast "
            "one of them");
  EXPECT_EQ(
      InferError("x: Tensor[(n, 4), f32], g: Tensor[(4,), f32], b: Tensor[(4,), f32]", "layer_norm(x, g, b, axis=-3)"),
      "layer_norm: axis -3 is out of range for a tensor of rank 2 (expected -2 <= axis < 2)");
  EXPECT_EQ(
      InferError("x: Tensor[(n, 3, h, w), f32], g: Tensor[(3,), f32], b: Tensor[(3,), f32], "
                 "m: Tensor[(3,), f32], v: Tensor[(3, 1), f32]",
                 "batch_norm(x, g, b, m, v)"),
      "batch_norm: moving_var: Tensor[(3, 1), f32] must have the shape (x.shape[1],) = (3,) of x: Tensor[(n, 3, h, w), "
      "f32]");
  EXPECT_EQ(InferError("x: Tensor[(n, 3), f32], g: Tensor[(3,), f32], b: Tensor[(3,), f32], m: Tensor[(3,), f32]",
                       "batch_norm(x, g, b, m)"),
            "batch_norm: expected 5 arguments (x, gamma, beta, moving_mean, moving_var), got 4");
}

TEST(NeuralNetworkInfer, DropoutIsTheIdentityShape) {
  EXPECT_EQ(Infer("x: Tensor[(n, 7), f32]", "dropout(x)"), "Tensor[(n, 7), f32]");
  EXPECT_EQ(Infer("x: Tensor[(n, 7), i32]", "dropout(x, rate=0)"), "Tensor[(n, 7), i32]");
  EXPECT_EQ(InferError("x: Tensor[(n, 7), f32]", "dropout(x, rate=1.0)"),
            "dropout: attribute 'rate' must be in [0, 1), got 1");
  EXPECT_EQ(InferError("x: Tensor[(n, 7), f32]", "dropout(x, rate=-0.5)"),
            "dropout: attribute 'rate' must be in [0, 1), got -0.5");
}

// ---- kernels ----------------------------------------------------------------------

TEST(NeuralNetworkLegalize, UnknownDimsAreBoundAtRunTimeButAnUnknownRankIsACompileError) {
  // Known rank: LegalizeOps binds the dims with a match_cast and the kernel checks them.
  EXPECT_EQ(RunError("x: Tensor[ndim=4, f32], wt: Tensor[(2, 3, 1, 1), f32]", "conv2d(x, wt)",
                     {Ones({1, 3, 2, 2}), Ones({2, 3, 1, 1})}),
            "ok");
  EXPECT_EQ(RunError("x: Tensor[ndim=4, f32], wt: Tensor[(2, 3, 1, 1), f32]", "conv2d(x, wt)",
                     {Ones({1, 2, 2, 2}), Ones({2, 3, 1, 1})}),
            "compiled kernel 'conv2d' failed: conv2d: channels of x (x_d1) must equal groups * channels of weight (3)");
  EXPECT_EQ(CompileError(OneCallProgram("x: Tensor[f32], wt: Tensor[(8, 3, 3, 3), f32]", "softmax(x)")),
            "LegalizeOps: function 'main', binding 'y': softmax: cannot generate a kernel: x: Tensor[f32] has no "
            "known rank and dtype; give it a shape with match_cast");
}

TEST(NeuralNetworkRuntime, KernelsCheckWhatTheStructInfoCouldNotProve) {
  EXPECT_EQ(RunError("x: Tensor[(n, c, h, w), f32], wt: Tensor[(2, 3, 1, 1), f32]", "conv2d(x, wt)",
                     {Ones({1, 2, 2, 2}), Ones({2, 3, 1, 1})}),
            "compiled kernel 'conv2d' failed: conv2d: channels of x (c) must equal groups * channels of weight (3)");
  EXPECT_EQ(RunError("x: Tensor[(n, 2, h, w), f32], wt: Tensor[(o, 1, 1, 1), f32]", "conv2d(x, wt, groups=2)",
                     {Ones({1, 2, 2, 2}), Ones({3, 1, 1, 1})}),
            "compiled kernel 'conv2d' failed: conv2d: output channels of weight (o) must be divisible by groups (2)");
  EXPECT_EQ(
      RunError("x: Tensor[(n, d), f32], g: Tensor[(k,), f32], b: Tensor[(d,), f32]", "layer_norm(x, g, b)",
               {Ones({2, 3}), Ones({2}), Ones({3})}),
      "compiled kernel 'layer_norm' failed: layer_norm: dimension 0 of gamma (k) must equal dimension 1 of x (d)");
  EXPECT_EQ(
      RunError("x: Tensor[(n, c), f32], g: Tensor[(c,), f32], b: Tensor[(c,), f32], m: Tensor[(c,), f32], "
               "v: Tensor[(k,), f32]",
               "batch_norm(x, g, b, m, v, axis=1)", {Ones({2, 3}), Ones({3}), Ones({3}), Ones({3}), Ones({4})}),
      "compiled kernel 'batch_norm' failed: batch_norm: dimension 0 of moving_var (k) must equal dimension 1 of x (c)");
  // The same programs at consistent shapes run.
  EXPECT_EQ(RunError("x: Tensor[(n, c, h, w), f32], wt: Tensor[(2, 3, 1, 1), f32]", "conv2d(x, wt)",
                     {Ones({1, 3, 2, 2}), Ones({2, 3, 1, 1})}),
            "ok");
  EXPECT_EQ(RunError("x: Tensor[(n, d), f32], g: Tensor[(k,), f32], b: Tensor[(d,), f32]", "layer_norm(x, g, b)",
                     {Ones({2, 3}), Ones({3}), Ones({3})}),
            "ok");
}

TEST(NnInfer, ConvTransposeOutputIsAnExpressionOfTheInput) {
  EXPECT_EQ(Infer("x: Tensor[(n, 3, h, w), f32], k: Tensor[(3, 4, 3, 3), f32]",
                  "conv2d_transpose(x, k, strides=[2, 2], padding=[1, 1, 1, 1], output_padding=[1, 1])"),
            "Tensor[(n, 4, h * 2, w * 2), f32]");
  EXPECT_EQ(Infer("x: Tensor[(n, 4, h, w), f32], k: Tensor[(4, 1, 2, 3), f32]",
                  "conv2d_transpose(x, k, strides=[1, 3], dilation=[2, 1], padding=[0, 1, 1, 0], groups=2)"),
            "Tensor[(n, 2, h + 1, w * 3 - 1), f32]");
  EXPECT_EQ(Infer("x: Tensor[(n, 3, h, w), f32], k: Tensor[(4, 4, 3, 3), f32]", "conv2d_transpose(x, k)"),
            "error: function 'main', binding 'y': conv2d_transpose: x: Tensor[(n, 3, h, w), f32] has 3 channels, but "
            "weight: Tensor[(4, 4, 3, 3), f32] expects 4");
  EXPECT_EQ(Infer("x: Tensor[(n, 3, h, w), f32], k: Tensor[(3, 4, 3, 3), f32]",
                  "conv2d_transpose(x, k, strides=[2, 2], output_padding=[2, 0])"),
            "error: function 'main', binding 'y': conv2d_transpose: output_padding [2, 0] must be smaller than the "
            "stride or the dilation");
}

TEST(NnInfer, DepthToSpaceInterleavesPhasesAndCrops) {
  EXPECT_EQ(Infer("x: Tensor[(n, 16, h, w), f32]", "depth_to_space(x, blocks=[2, 2])"),
            "Tensor[(n, 4, h * 2, w * 2), f32]");
  EXPECT_EQ(Infer("x: Tensor[(n, 24, h, w), f32]", "depth_to_space(x, blocks=[3, 2], crop=[1, 0, 2, 1])"),
            "Tensor[(n, 4, h * 3 - 3, w * 2 - 1), f32]");
  EXPECT_EQ(Infer("x: Tensor[(n, 4, h, w, 4), f32]", "depth_to_space_nchwc(x, blocks=[2, 2], crop=[1, 1, 1, 1])"),
            "Tensor[(n, 1, h * 2 - 2, w * 2 - 2, 4), f32]");
  EXPECT_EQ(Infer("x: Tensor[(n, 6, h, w), f32]", "depth_to_space(x, blocks=[2, 2])"),
            "error: function 'main', binding 'y': depth_to_space: the 6 channels of x: Tensor[(n, 6, h, w), f32] are "
            "not divisible by blocks 2 x 2");
  EXPECT_EQ(Infer("x: Tensor[(n, 4, 2, w), f32]", "depth_to_space(x, blocks=[2, 2], crop=[2, 0, 2, 0])"),
            "error: function 'main', binding 'y': depth_to_space: the crop [2, 0, 2, 0] leaves 0 rows of x: "
            "Tensor[(n, 4, 2, w), f32]");
  EXPECT_EQ(Infer("x: Tensor[(n, 4, h, w), f32]", "depth_to_space(x, blocks=[2, 0])"),
            "error: function 'main', binding 'y': depth_to_space: attribute 'blocks' must be 2 positive values "
            "(rows, columns), got [2, 0]");
  EXPECT_EQ(Infer("x: Tensor[(n, 4, h, w), f32]", "depth_to_space(x, blocks=[2, 2], crop=[0, -1, 0, 0])"),
            "error: function 'main', binding 'y': depth_to_space: attribute 'crop' must be 4 non-negative values "
            "(top, left, bottom, right), got [0, -1, 0, 0]");
  EXPECT_EQ(Infer("x: Tensor[(n, 4, h, w), f32]", "depth_to_space_nchwc(x, blocks=[2, 2])"),
            "error: function 'main', binding 'y': depth_to_space_nchwc: x: Tensor[(n, 4, h, w), f32] must be 5-D "
            "(N, C / block, H, W, block)");
}

TEST(NnInfer, Resize2dTakesASymbolicSize) {
  EXPECT_EQ(Infer("x: Tensor[(n, 3, h, w), f32]", "resize2d(x, shape(h * 2, w // 2), method=\"linear\")"),
            "Tensor[(n, 3, h * 2, w // 2), f32]");
  EXPECT_EQ(Infer("x: Tensor[(n, 3, h, w), f32]", "resize2d(x, shape(h, w), method=\"cubic\")"),
            "error: function 'main', binding 'y': resize2d: attribute 'method' must be one of \"nearest\", "
            "\"linear\", got \"cubic\"");
  EXPECT_EQ(Infer("x: Tensor[(n, 3, h), f32]", "resize2d(x, shape(h, 2))"),
            "error: function 'main', binding 'y': resize2d: x: Tensor[(n, 3, h), f32] must have rank 4 (N, C, H, W)");
}

}  // namespace
}  // namespace strata::op::testing
