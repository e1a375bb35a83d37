// Shape and dtype inference of matmul, dense and bias_add over symbolic shapes,
// the compile-time errors for bad calls, and the run-time checks of the
// dimensions that only the kernel can compare.
#include <gtest/gtest.h>

#include "compiler/driver/compile.h"
#include "compiler/ir/parser.h"
#include "tests/op/op_test_util.h"
#include "vm/tensor_io/npy.h"
#include "vm/virtual_machine.h"

namespace strata::op::testing {
namespace {

constexpr const char* kPrefix = "error: function 'main', binding 'y': ";

TEST(LinearAlgebraInfer, MatmulKeepsSymbolicDims) {
  EXPECT_EQ(Infer("x: Tensor[(m, k), f32], w: Tensor[(k, n), f32]", "matmul(x, w)"), "Tensor[(m, n), f32]");
  EXPECT_EQ(Infer("x: Tensor[(m, k * 2), f32], w: Tensor[(k + k, n + 1), f32]", "matmul(x, w)"),
            "Tensor[(m, n + 1), f32]");
  // Batch dimensions broadcast as numpy does.
  EXPECT_EQ(Infer("x: Tensor[(b, 1, m, k), f32], w: Tensor[(h, k, n), f32]", "matmul(x, w)"),
            "Tensor[(b, h, m, n), f32]");
  EXPECT_EQ(Infer("x: Tensor[(b, m, k), f32], w: Tensor[(k, n), f32]", "matmul(x, w)"), "Tensor[(b, m, n), f32]");
  EXPECT_EQ(Infer("x: Tensor[(c, m, k), f32], w: Tensor[(3, k, n), f32]", "matmul(x, w)"), "Tensor[(3, m, n), f32]");
  // Two batch dimensions that cannot be proven equal broadcast either way.
  EXPECT_EQ(Infer("x: Tensor[(b, m, k), f32], w: Tensor[(c, k, n), f32]", "matmul(x, w)"),
            "Tensor[(select(b == 1, c, b), m, n), f32]");
}

TEST(LinearAlgebraInfer, MatmulOneDimensionalOperandsLoseTheirDimension) {
  EXPECT_EQ(Infer("x: Tensor[(k,), f32], w: Tensor[(k, n), f32]", "matmul(x, w)"), "Tensor[(n,), f32]");
  EXPECT_EQ(Infer("x: Tensor[(b, m, k), f32], w: Tensor[(k,), f32]", "matmul(x, w)"), "Tensor[(b, m), f32]");
  EXPECT_EQ(Infer("x: Tensor[(k,), i32], w: Tensor[(k,), i32]", "matmul(x, w)"), "Tensor[(), i32]");
  EXPECT_EQ(Infer("x: Tensor[(k,), f32], w: Tensor[(b, k, n), f32]", "matmul(x, w)"), "Tensor[(b, n), f32]");
}

TEST(LinearAlgebraInfer, MatmulOfUnknownShapes) {
  EXPECT_EQ(Infer("x: Tensor[ndim=3, f32], w: Tensor[ndim=1, f32]", "matmul(x, w)"), "Tensor[ndim=2, f32]");
  EXPECT_EQ(Infer("x: Tensor[ndim=1, f32], w: Tensor[(4, n), f32]", "matmul(x, w)"), "Tensor[ndim=1, f32]");
  EXPECT_EQ(Infer("x: Tensor[f32], w: Tensor[(4, n), f32]", "matmul(x, w)"), "Tensor[f32]");
  // Contracted dimensions that are not provably equal are checked by the kernel.
  EXPECT_EQ(Infer("x: Tensor[(m, k), f32], w: Tensor[(j, n), f32]", "matmul(x, w)"), "Tensor[(m, n), f32]");
  EXPECT_EQ(Infer("x: Tensor[(m, 4), f32], w: Tensor[(j, n), f32]", "matmul(x, w)"), "Tensor[(m, n), f32]");
}

TEST(LinearAlgebraInfer, MatmulErrorsNameTheOperatorArgumentsAndShapes) {
  EXPECT_EQ(Infer("x: Tensor[(m, 3), f32], w: Tensor[(4, n), f32]", "matmul(x, w)"),
            std::string(kPrefix) +
                "matmul: x: Tensor[(m, 3), f32] and y: Tensor[(4, n), f32] disagree on the contracted dimension: "
                "dimension 1 of x (3) vs dimension 0 of y (4)");
  EXPECT_EQ(Infer("x: Tensor[(3,), f32], w: Tensor[(b, 4, n), f32]", "matmul(x, w)"),
            std::string(kPrefix) +
                "matmul: x: Tensor[(3,), f32] and y: Tensor[(b, 4, n), f32] disagree on the contracted dimension: "
                "dimension 0 of x (3) vs dimension 1 of y (4)");
  EXPECT_EQ(Infer("x: Tensor[(2, m, k), f32], w: Tensor[(3, k, n), f32]", "matmul(x, w)"),
            std::string(kPrefix) +
                "matmul: cannot broadcast x: Tensor[(2, m, k), f32] with y: Tensor[(3, k, n), f32]: dimension 0 of "
                "the result would be both 2 and 3");
  EXPECT_EQ(Infer("x: Tensor[(m, k), f32], w: Tensor[(k, n), f16]", "matmul(x, w)"),
            std::string(kPrefix) +
                "matmul: x: Tensor[(m, k), f32] and y: Tensor[(k, n), f16] have different dtypes (f32 vs f16); cast "
                "one of them");
  EXPECT_EQ(Infer("x: Tensor[(), f32], w: Tensor[(k, n), f32]", "matmul(x, w)"),
            std::string(kPrefix) + "matmul: x: Tensor[(), f32] must have at least one dimension");
  EXPECT_EQ(Infer("x: Tensor[(m, k), f32], w: Tensor[ndim=0, f32]", "matmul(x, w)"),
            std::string(kPrefix) + "matmul: y: Tensor[ndim=0, f32] must have at least one dimension");
  EXPECT_EQ(Infer("x: Tensor[(m, k), bool], w: Tensor[(k, n), bool]", "matmul(x, w)"),
            std::string(kPrefix) + "matmul: x: Tensor[(m, k), bool] must be a numeric tensor");
  EXPECT_EQ(Infer("x: Tensor[(m, k), f32], s: Shape[(k, n)]", "matmul(x, s)"),
            std::string(kPrefix) + "matmul: argument 'y' must be a tensor, got Shape[(k, n)]");
  EXPECT_EQ(Infer("x: Tensor[(m, k), f32]", "matmul(x)"),
            std::string(kPrefix) + "matmul: expected 2 arguments (x, y), got 1");
}

TEST(LinearAlgebraInfer, Dense) {
  EXPECT_EQ(Infer("x: Tensor[(n, i), f32], w: Tensor[(o, i), f32], b: Tensor[(o,), f32]", "dense(x, w, b)"),
            "Tensor[(n, o), f32]");
  EXPECT_EQ(Infer("x: Tensor[(b, s, 64), f32], w: Tensor[(128, 64), f32]", "dense(x, w)"), "Tensor[(b, s, 128), f32]");
  EXPECT_EQ(Infer("x: Tensor[(64,), f32], w: Tensor[(o, 64), f32]", "dense(x, w)"), "Tensor[(o,), f32]");
  EXPECT_EQ(Infer("x: Tensor[ndim=3, f32], w: Tensor[(o, i), f32]", "dense(x, w)"), "Tensor[ndim=3, f32]");
  EXPECT_EQ(Infer("x: Tensor[(n, i), f32], w: Tensor[ndim=2, f32]", "dense(x, w)"), "Tensor[ndim=2, f32]");
  EXPECT_EQ(Infer("x: Tensor[f32], w: Tensor[(o, i), f32]", "dense(x, w)"), "Tensor[f32]");
  // Unprovable feature counts are checked by the kernel.
  EXPECT_EQ(Infer("x: Tensor[(n, i), f32], w: Tensor[(o, j), f32], b: Tensor[(p,), f32]", "dense(x, w, b)"),
            "Tensor[(n, o), f32]");
}

TEST(LinearAlgebraInfer, PackedMatmul) {
  // x's leading dimensions are the rows; n columns, whatever the padding of the last panel.
  EXPECT_EQ(Infer("x: Tensor[(b, m, 3), f32], p: Tensor[(2, 3, 32), f32]", "packed_matmul(x, p, n=40)"),
            "Tensor[(b, m, 40), f32]");
  EXPECT_EQ(
      Infer("x: Tensor[(3,), f32], p: Tensor[(1, 3, 32), f32], c: Tensor[(7,), f32]", "packed_matmul(x, p, c, n=7)"),
      "Tensor[(7,), f32]");
  // A symbolic reduction is the kernel's to check.
  EXPECT_EQ(Infer("x: Tensor[(m, k), f32], p: Tensor[(1, j, 32), f32]", "packed_matmul(x, p, n=32)"),
            "Tensor[(m, 32), f32]");
}

TEST(LinearAlgebraInfer, PackedMatmulErrors) {
  EXPECT_EQ(Infer("x: Tensor[(m, 3), f32], p: Tensor[(2, 3, 32), f32]", "packed_matmul(x, p, n=70)"),
            std::string(kPrefix) +
                "packed_matmul: panels: Tensor[(2, 3, 32), f32] must have 3 column panels (ceil(n / 32) for n = 70) "
                "in dimension 0, got 2");
  EXPECT_EQ(
      Infer("x: Tensor[(m, 3), f32], p: Tensor[(2, 3, 16), f32]", "packed_matmul(x, p, n=40)"),
      std::string(kPrefix) +
          "packed_matmul: panels: Tensor[(2, 3, 16), f32] must have panels 32 columns wide in dimension 2, got 16");
  EXPECT_EQ(Infer("x: Tensor[(m, 3), f32], p: Tensor[(2, 3, 32), f32], c: Tensor[(41,), f32]",
                  "packed_matmul(x, p, c, n=40)"),
            std::string(kPrefix) +
                "packed_matmul: bias: Tensor[(41,), f32] must have n = 40 elements in dimension 0, got 41");
  EXPECT_EQ(Infer("x: Tensor[(m, 4), f32], p: Tensor[(2, 3, 32), f32]", "packed_matmul(x, p, n=40)"),
            std::string(kPrefix) +
                "packed_matmul: x: Tensor[(m, 4), f32] and panels: Tensor[(2, 3, 32), f32] disagree on the input "
                "features: dimension 1 of x (4) vs dimension 1 of panels (3)");
  EXPECT_EQ(Infer("x: Tensor[(m, 3), f32], p: Tensor[(3, 32), f32]", "packed_matmul(x, p, n=40)"),
            std::string(kPrefix) +
                "packed_matmul: panels: Tensor[(3, 32), f32] must be 3-D (column panels, in_features, panel width)");
  EXPECT_EQ(Infer("x: Tensor[(m, 3), f32], p: Tensor[(2, 3, 32), f32]", "packed_matmul(x, p, n=-1)"),
            std::string(kPrefix) + "packed_matmul: attribute 'n' must be >= 0, got -1");
}

TEST(LinearAlgebraInfer, DenseErrors) {
  EXPECT_EQ(Infer("x: Tensor[(n, 3), f32], w: Tensor[(8, 4), f32]", "dense(x, w)"),
            std::string(kPrefix) +
                "dense: x: Tensor[(n, 3), f32] and weight: Tensor[(8, 4), f32] disagree on the input features: "
                "dimension 1 of x (3) vs dimension 1 of weight (4)");
  EXPECT_EQ(Infer("x: Tensor[(n, 4), f32], w: Tensor[(8, 4), f32], b: Tensor[(5,), f32]", "dense(x, w, b)"),
            std::string(kPrefix) +
                "dense: bias: Tensor[(5,), f32] and weight: Tensor[(8, 4), f32] disagree on the output features: "
                "dimension 0 of bias (5) vs dimension 0 of weight (8)");
  EXPECT_EQ(Infer("x: Tensor[(n, 4), f32], w: Tensor[(4,), f32]", "dense(x, w)"),
            std::string(kPrefix) + "dense: weight: Tensor[(4,), f32] must be 2-D (out_features, in_features)");
  EXPECT_EQ(Infer("x: Tensor[(n, 4), f32], w: Tensor[(8, 4), f32], b: Tensor[(1, 8), f32]", "dense(x, w, b)"),
            std::string(kPrefix) + "dense: bias: Tensor[(1, 8), f32] must be 1-D (out_features,)");
  EXPECT_EQ(Infer("x: Tensor[(n, 4), f32], w: Tensor[(8, 4), f32], b: Tensor[(8,), f16]", "dense(x, w, b)"),
            std::string(kPrefix) +
                "dense: x: Tensor[(n, 4), f32] and bias: Tensor[(8,), f16] have different dtypes (f32 vs f16); cast "
                "one of them");
  EXPECT_EQ(Infer("x: Tensor[(), f32], w: Tensor[(8, 4), f32]", "dense(x, w)"),
            std::string(kPrefix) + "dense: x: Tensor[(), f32] must have at least one dimension");
  EXPECT_EQ(Infer("x: Tensor[(n, 4), f32], w: Tensor[(8, 4), f32], b: Tensor[(8,), f32], c: Tensor[(8,), f32]",
                  "dense(x, w, b, c)"),
            std::string(kPrefix) + "dense: expected 2 to 3 arguments (x, weight, bias), got 4");
}

TEST(LinearAlgebraInfer, BiasAdd) {
  EXPECT_EQ(Infer("x: Tensor[(n, c, h, w), f32], b: Tensor[(c,), f32]", "bias_add(x, b)"), "Tensor[(n, c, h, w), f32]");
  EXPECT_EQ(Infer("x: Tensor[(n, c), f32], b: Tensor[(c,), f32]", "bias_add(x, b, axis=-1)"), "Tensor[(n, c), f32]");
  EXPECT_EQ(Infer("x: Tensor[ndim=3, f32], b: Tensor[(c,), f32]", "bias_add(x, b, axis=2)"), "Tensor[ndim=3, f32]");
  EXPECT_EQ(Infer("x: Tensor[f32], b: Tensor[(c,), f32]", "bias_add(x, b)"), "Tensor[f32]");
  EXPECT_EQ(Infer("x: Tensor[(n, c), f32], b: Tensor[(d,), f32]", "bias_add(x, b)"), "Tensor[(n, c), f32]");
}

TEST(LinearAlgebraInfer, BiasAddErrors) {
  EXPECT_EQ(Infer("x: Tensor[(n, 4), f32], b: Tensor[(5,), f32]", "bias_add(x, b)"),
            std::string(kPrefix) +
                "bias_add: x: Tensor[(n, 4), f32] and bias: Tensor[(5,), f32] disagree on the length of axis 1: "
                "dimension 1 of x (4) vs dimension 0 of bias (5)");
  EXPECT_EQ(Infer("x: Tensor[(n, 4), f32], b: Tensor[(4,), f32]", "bias_add(x, b, axis=2)"),
            std::string(kPrefix) + "bias_add: axis 2 is out of range for a tensor of rank 2 (expected -2 <= axis < 2)");
  EXPECT_EQ(Infer("x: Tensor[(n, 4), f32], b: Tensor[(1, 4), f32]", "bias_add(x, b)"),
            std::string(kPrefix) + "bias_add: bias: Tensor[(1, 4), f32] must be 1-D (one value per index of axis)");
  EXPECT_EQ(Infer("x: Tensor[(n, 4), bool], b: Tensor[(4,), bool]", "bias_add(x, b)"),
            std::string(kPrefix) + "bias_add: x: Tensor[(n, 4), bool] must be a numeric tensor");
  EXPECT_EQ(Infer("x: Tensor[(n, 4), f32], b: Tensor[(4,), f32]", "bias_add(x, b, axis=1.5)"),
            std::string(kPrefix) + "bias_add: attribute 'axis' must be an int, got a float");
}

TEST(LinearAlgebraRuntime, UnprovenContractedDimensionsAreCheckedByTheKernel) {
  const std::string program = OneCallProgram("x: Tensor[(m, k), f32], w: Tensor[(j, n), f32]", "matmul(x, w)");
  auto ok = RunMain(program, {"1x2xf32=1,2", "2x1xf32=3,4"});
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(vm::FormatInlineTensor(*ok->tensor()), "1x1xf32=11");
  auto bad = RunMain(program, {"1x2xf32=1,2", "3x1xf32=3,4,5"});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(
      bad.status().message(),
      "compiled kernel 'matmul' failed: matmul: argument 'x' dimension 1 (k) and argument 'y' dimension 0 (j) must be "
      "equal");
}

TEST(LinearAlgebraRuntime, DenseChecksFeaturesAndBiasAtRunTime) {
  const std::string program =
      OneCallProgram("x: Tensor[(n, i), f32], w: Tensor[(o, j), f32], b: Tensor[(p,), f32]", "dense(x, w, b)");
  auto ok = RunMain(program, {"1x2xf32=1,2", "2x2xf32=1,0,0,1", "2xf32=10,20"});
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(vm::FormatInlineTensor(*ok->tensor()), "1x2xf32=11,22");
  auto bad = RunMain(program, {"1x2xf32=1,2", "2x2xf32=1,0,0,1", "3xf32=10,20,30"});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "compiled kernel 'dense' failed: dense: argument 'bias' dimension 0 (p) and argument 'weight' dimension 0 "
            "(o) must "
            "be equal");
}

TEST(LinearAlgebraRuntime, BatchBroadcastAgainstAConstantIsCheckedByTheKernel) {
  const std::string program = OneCallProgram("x: Tensor[(c, 1, 2), f32], w: Tensor[(2, 2, 1), f32]", "matmul(x, w)");
  auto ok = RunMain(program, {"1x1x2xf32=1,2", "2x2x1xf32=1,1,2,2"});
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(vm::FormatInlineTensor(*ok->tensor()), "2x1x1xf32=3,6");
  auto bad = RunMain(program, {"3x1x2xf32=1,2,3,4,5,6", "2x2x1xf32=1,1,2,2"});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "compiled kernel 'matmul' failed: matmul: argument 'x' dimension 0 must be 1 or 2 to broadcast");
}

TEST(LinearAlgebraRuntime, BiasAddChecksTheBiasLengthAtRunTime) {
  const std::string program = OneCallProgram("x: Tensor[(n, c), f32], b: Tensor[(d,), f32]", "bias_add(x, b)");
  auto ok = RunMain(program, {"2x2xf32=1,2,3,4", "2xf32=10,20"});
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(vm::FormatInlineTensor(*ok->tensor()), "2x2xf32=11,22,13,24");
  auto bad = RunMain(program, {"2x2xf32=1,2,3,4", "3xf32=10,20,30"});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(
      bad.status().message(),
      "compiled kernel 'bias_add' failed: bias_add: argument 'bias' dimension 0 (d) and argument 'x' dimension 1 (c) "
      "must be equal");
}

TEST(LinearAlgebraRuntime, EmptyReductionsGiveZerosAndEmptyOperandsEmptyResults) {
  const std::string program = OneCallProgram("x: Tensor[(k,), f32], w: Tensor[(k,), f32]", "matmul(x, w)");
  auto dot = RunMain(program, {"3xf32=1,2,3", "3xf32=4,5,6"});
  ASSERT_TRUE(dot.ok()) << dot.status().message();
  EXPECT_EQ(vm::FormatInlineTensor(*dot->tensor()), "f32=32");
  auto empty = RunMain(program, {"0xf32=", "0xf32="});
  ASSERT_TRUE(empty.ok()) << empty.status().message();
  EXPECT_EQ(vm::FormatInlineTensor(*empty->tensor()), "f32=0");
  // dense with no input features is its bias.
  auto bias_only =
      RunMain(OneCallProgram("x: Tensor[(n, i), f32], w: Tensor[(o, i), f32], b: Tensor[(o,), f32]", "dense(x, w, b)"),
              {"2x0xf32=", "3x0xf32=", "3xf32=1,2,3"});
  ASSERT_TRUE(bias_only.ok()) << bias_only.status().message();
  EXPECT_EQ(vm::FormatInlineTensor(*bias_only->tensor()), "2x3xf32=1,2,3,1,2,3");
  // matmul: an empty reduction in the tiled schedule (4 rows), then no rows, then no columns.
  const std::string matmul = OneCallProgram("x: Tensor[(m, k), f32], w: Tensor[(k, n), f32]", "matmul(x, w)");
  auto zeros = RunMain(matmul, {"4x0xf32=", "0x2xf32="});
  ASSERT_TRUE(zeros.ok()) << zeros.status().message();
  EXPECT_EQ(vm::FormatInlineTensor(*zeros->tensor()), "4x2xf32=0,0,0,0,0,0,0,0");
  auto no_rows = RunMain(matmul, {"0x3xf32=", "3x2xf32=1,2,3,4,5,6"});
  ASSERT_TRUE(no_rows.ok()) << no_rows.status().message();
  EXPECT_EQ(vm::FormatInlineTensor(*no_rows->tensor()), "0x2xf32=");
  auto no_cols = RunMain(matmul, {"5x3xf32=1,2,3,4,5,6,7,8,9,10,11,12,13,14,15", "3x0xf32="});
  ASSERT_TRUE(no_cols.ok()) << no_cols.status().message();
  EXPECT_EQ(vm::FormatInlineTensor(*no_cols->tensor()), "5x0xf32=");
}

}  // namespace
}  // namespace strata::op::testing
