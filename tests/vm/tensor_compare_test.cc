// Comparing tensors with tolerances (numpy.allclose rules) for --expected-output.
#include "vm/tensor_io/tensor_compare.h"

#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "vm/tensor_io/npy.h"

namespace strata::vm {
namespace {

Ref<Tensor> Inline(const char* text) {
  StatusOr<Ref<Tensor>> t = ParseInlineTensor(text);
  EXPECT_TRUE(t.ok()) << t.status().message();
  return t.ok() ? *t : Ref<Tensor>();
}

TensorComparison Compare(const char* actual, const char* expected, Tolerance tolerance = {}) {
  StatusOr<TensorComparison> c = CompareTensors(*Inline(actual), *Inline(expected), tolerance);
  EXPECT_TRUE(c.ok()) << c.status().message();
  return c.ok() ? *c : TensorComparison{};
}

TEST(TensorCompare, ToleranceIsAbsolutePlusRelativeToExpected) {
  Tolerance t{1e-2, 1e-3};
  // |1.0105 - 1| = 0.0105 <= 0.001 + 0.01 * 1; |0.0105 - 0| > 0.001.
  EXPECT_TRUE(Compare("2xf64=1.0105,100.5", "2xf64=1,100", t).ok());
  TensorComparison c = Compare("3xf64=1,0.0105,2", "3xf64=1,0,2", t);
  EXPECT_EQ(c.num_mismatched, 1);
  EXPECT_EQ(c.first_mismatch, (std::vector<int64_t>{1}));
  EXPECT_EQ(c.first_actual, "0.0105");
  EXPECT_EQ(c.first_expected, "0");
  EXPECT_DOUBLE_EQ(c.max_abs_diff, 0.0105);
  // Relative to the expected value, not the actual one (as numpy.allclose).
  EXPECT_FALSE(Compare("1xf64=2", "1xf64=1", Tolerance{0.6, 0}).ok());
  EXPECT_TRUE(Compare("1xf64=1", "1xf64=2", Tolerance{0.6, 0}).ok());
}

TEST(TensorCompare, FirstMismatchIsAMultiDimensionalIndex) {
  TensorComparison c = Compare("2x3xf32=1,2,3,4,5,6", "2x3xf32=1,2,3,4,9,7");
  EXPECT_EQ(c.num_elements, 6);
  EXPECT_EQ(c.num_mismatched, 2);
  EXPECT_EQ(c.first_mismatch, (std::vector<int64_t>{1, 1}));
  EXPECT_DOUBLE_EQ(c.max_abs_diff, 4);
  EXPECT_EQ(DescribeMismatch(c, Tolerance{}),
            "2 of 6 elements differ by more than 1e-05 + 0.0001 * |expected|; first at [1, 1]: got 5, expected 9; "
            "max abs diff 4");
}

TEST(TensorCompare, NanMatchesOnlyNanAndInfinityOnlyItself) {
  EXPECT_TRUE(Compare("3xf32=nan,inf,-inf", "3xf32=nan,inf,-inf").ok());
  EXPECT_EQ(Compare("2xf32=nan,1", "2xf32=1,nan").num_mismatched, 2);
  EXPECT_EQ(Compare("2xf32=inf,1e38", "2xf32=1e38,inf").num_mismatched, 2);
  EXPECT_EQ(Compare("1xf32=inf", "1xf32=-inf").num_mismatched, 1);
}

TEST(TensorCompare, IntegersAndBoolsCompareExactly) {
  // 2^53 + 1 and 2^53 are equal as doubles; they must still differ.
  EXPECT_EQ(Compare("1xi64=9007199254740993", "1xi64=9007199254740992", Tolerance{1, 1}).num_mismatched, 1);
  TensorComparison c = Compare("3xi8=-128,0,127", "3xi8=127,0,127");
  EXPECT_EQ(c.num_mismatched, 1);
  EXPECT_EQ(c.first_actual, "-128");
  EXPECT_DOUBLE_EQ(c.max_abs_diff, 255);
  EXPECT_EQ(Compare("2xu16=65535,1", "2xu16=0,1").max_abs_diff, 65535);
  EXPECT_EQ(Compare("2xbool=true,false", "2xbool=true,true").num_mismatched, 1);
}

TEST(TensorCompare, HalfPrecision) {
  EXPECT_TRUE(Compare("2xf16=1,2", "2xf16=1,2").ok());
  EXPECT_FALSE(Compare("1xf16=1", "1xf16=1.5").ok());
}

TEST(TensorCompare, EmptyTensorsMatch) {
  TensorComparison c = Compare("0x3xf32=", "0x3xf32=");
  EXPECT_TRUE(c.ok());
  EXPECT_EQ(c.num_elements, 0);
}

TEST(TensorCompare, DtypeOrShapeMismatchIsAnError) {
  StatusOr<TensorComparison> c = CompareTensors(*Inline("2x2xf32=1,2,3,4"), *Inline("4xf32=1,2,3,4"), {});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(), "got Tensor[(2, 2), f32], expected Tensor[(4,), f32]");
  c = CompareTensors(*Inline("2xf32=1,2"), *Inline("2xf64=1,2"), {});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(), "got Tensor[(2,), f32], expected Tensor[(2,), f64]");
}

}  // namespace
}  // namespace strata::vm
