// Doubles into integer dtypes: the exact check (fill values) and the saturating
// cast (ONNX constants and attributes), at the edges where doubles and
// integers part: 2^63 and 2^64 are doubles, INT64_MAX and UINT64_MAX are not.
#include "support/numeric_range.h"

#include <cstdint>
#include <limits>

#include <gtest/gtest.h>

namespace strata {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(NumericRange, RangesAreHalfOpenAtThePowerOfTwo) {
  EXPECT_EQ(IntegerRangeOf(DataType::Int(8)).lo, -128.0);
  EXPECT_EQ(IntegerRangeOf(DataType::Int(8)).end, 128.0);
  EXPECT_EQ(IntegerRangeOf(DataType::UInt(16)).lo, 0.0);
  EXPECT_EQ(IntegerRangeOf(DataType::UInt(16)).end, 65536.0);
  EXPECT_EQ(IntegerRangeOf(DataType::I64()).end, 0x1p63);
  EXPECT_EQ(IntegerRangeOf(DataType::Bool()).end, 2.0);
}

TEST(NumericRange, ExactIntegersOnly) {
  EXPECT_TRUE(IsExactInteger(127, DataType::Int(8)));
  EXPECT_FALSE(IsExactInteger(128, DataType::Int(8)));
  EXPECT_TRUE(IsExactInteger(-128, DataType::Int(8)));
  EXPECT_FALSE(IsExactInteger(-129, DataType::Int(8)));
  EXPECT_FALSE(IsExactInteger(1.5, DataType::I32()));
  EXPECT_FALSE(IsExactInteger(-1, DataType::UInt(32)));
  EXPECT_FALSE(IsExactInteger(0x1p63, DataType::I64()));  // INT64_MAX rounds up to it
  EXPECT_TRUE(IsExactInteger(-0x1p63, DataType::I64()));
  EXPECT_TRUE(IsExactInteger(0x1p63, DataType::UInt(64)));
  EXPECT_FALSE(IsExactInteger(0x1p64, DataType::UInt(64)));
  EXPECT_FALSE(IsExactInteger(kNaN, DataType::I32()));
  EXPECT_FALSE(IsExactInteger(kInf, DataType::I64()));
  EXPECT_TRUE(IsExactInteger(1, DataType::Bool()));
  EXPECT_FALSE(IsExactInteger(2, DataType::Bool()));
}

TEST(NumericRange, SaturatingCastTruncatesTowardZeroAndClampsAtTheDtype) {
  EXPECT_EQ(SaturatingIntegerBits(2.9, DataType::I32()), 2);
  EXPECT_EQ(SaturatingIntegerBits(-2.9, DataType::I32()), -2);
  EXPECT_EQ(SaturatingIntegerBits(300, DataType::Int(8)), 127);
  EXPECT_EQ(SaturatingIntegerBits(-300, DataType::Int(8)), -128);
  EXPECT_EQ(SaturatingIntegerBits(300, DataType::UInt(8)), 255);
  EXPECT_EQ(SaturatingIntegerBits(-5, DataType::UInt(8)), 0);
  EXPECT_EQ(SaturatingIntegerBits(kNaN, DataType::I64()), 0);
  EXPECT_EQ(SaturatingIntegerBits(kInf, DataType::I64()), INT64_MAX);
  EXPECT_EQ(SaturatingIntegerBits(-kInf, DataType::I64()), INT64_MIN);
  EXPECT_EQ(SaturatingIntegerBits(0x1p63, DataType::I64()), INT64_MAX);
  // An unsigned 64-bit value above INT64_MAX keeps its bits.
  EXPECT_EQ(static_cast<uint64_t>(SaturatingIntegerBits(0x1p63, DataType::UInt(64))), uint64_t{1} << 63);
  EXPECT_EQ(static_cast<uint64_t>(SaturatingIntegerBits(0x1p64, DataType::UInt(64))), UINT64_MAX);
  EXPECT_EQ(SaturatingIntegerBits(0.5, DataType::Bool()), 1);
  EXPECT_EQ(SaturatingIntegerBits(0, DataType::Bool()), 0);
}

}  // namespace
}  // namespace strata
