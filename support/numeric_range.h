// The range of an integer (or bool) data type, seen from a double: the one rule
// for putting a double from a file or an attribute into an integer dtype, either
// by saturating (an ONNX constant's value, a count) or by refusing what does not
// fit (a fill value that must be exact).
#pragma once

#include <cmath>
#include <cstdint>

#include "support/data_type.h"

namespace strata {

// [lo, end) of the integers `dtype` holds (bool: [0, 2)). The end is exclusive
// because 2^63 - 1 and 2^64 - 1 are not doubles (they round up to the first
// value out of range).
struct IntegerRange {
  double lo;
  double end;
};

inline IntegerRange IntegerRangeOf(DataType dtype) {
  if (dtype.is_int()) return {-std::ldexp(1.0, dtype.bits() - 1), std::ldexp(1.0, dtype.bits() - 1)};
  if (dtype.is_uint()) return {0.0, std::ldexp(1.0, dtype.bits())};
  return {0.0, 2.0};  // bool
}

// True when `value` is an integer `dtype` holds exactly.
inline bool IsExactInteger(double value, DataType dtype) {
  const IntegerRange range = IntegerRangeOf(dtype);
  return value == std::floor(value) && value >= range.lo && value < range.end;
}

// `value` truncated toward zero and saturated at `dtype`'s range (NaN is 0), as
// the 64 bits of the integer (an unsigned value above INT64_MAX keeps its bits;
// a narrower dtype's value is in the low bytes, sign-extended).
inline int64_t SaturatingIntegerBits(double value, DataType dtype) {
  if (std::isnan(value)) return 0;
  if (dtype.is_bool()) return value != 0.0 ? 1 : 0;
  const IntegerRange range = IntegerRangeOf(dtype);
  if (dtype.is_uint()) {
    if (value <= 0) return 0;
    if (value >= range.end) {
      return static_cast<int64_t>(dtype.bits() >= 64 ? UINT64_MAX : (uint64_t{1} << dtype.bits()) - 1);
    }
    return static_cast<int64_t>(static_cast<uint64_t>(value));
  }
  if (value >= range.end) return dtype.bits() >= 64 ? INT64_MAX : (int64_t{1} << (dtype.bits() - 1)) - 1;
  if (value < range.lo) return dtype.bits() >= 64 ? INT64_MIN : -(int64_t{1} << (dtype.bits() - 1));
  return static_cast<int64_t>(value);
}

}  // namespace strata
