// Element-wise comparison with numpy.allclose semantics; see tensor_compare.h.
#include "vm/tensor_io/tensor_compare.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>

#include "support/half_float.h"
#include "vm/device.h"
#include "vm/tensor_io/npy.h"

namespace strata::vm {
namespace {

double ReadFloat(DataType dtype, const uint8_t* p) {
  if (dtype.bits() == 64) {
    double v;
    std::memcpy(&v, p, 8);
    return v;
  }
  if (dtype.bits() == 32) {
    float v;
    std::memcpy(&v, p, 4);
    return v;
  }
  uint16_t h;
  std::memcpy(&h, p, 2);
  return HalfToFloat(h);
}

// An integer or bool element, widened; only used to report how far apart two are.
double ReadInteger(DataType dtype, const uint8_t* p) {
  if (dtype.is_bool()) return *p != 0 ? 1 : 0;
  uint64_t raw = 0;
  std::memcpy(&raw, p, static_cast<size_t>(dtype.bytes()));  // little-endian
  if (dtype.is_int() && dtype.bits() < 64 && (raw >> (dtype.bits() - 1)) & 1) raw |= ~0ull << dtype.bits();
  return dtype.is_int() ? static_cast<double>(static_cast<int64_t>(raw)) : static_cast<double>(raw);
}

// The row-major index of flat element `flat`.
std::vector<int64_t> Unflatten(int64_t flat, std::span<const int64_t> shape) {
  std::vector<int64_t> index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    index[d] = shape[d] == 0 ? 0 : flat % shape[d];
    flat = shape[d] == 0 ? 0 : flat / shape[d];
  }
  return index;
}

}  // namespace

StatusOr<TensorComparison> CompareTensors(const Tensor& actual, const Tensor& expected, const Tolerance& tolerance) {
  if (actual.dtype() != expected.dtype() ||
      !std::equal(actual.shape().begin(), actual.shape().end(), expected.shape().begin(), expected.shape().end())) {
    return Status(ErrorStatus() << "got " << actual.TypeString() << ", expected " << expected.TypeString());
  }
  for (const Tensor* t : {&actual, &expected}) {
    if (t->device().device_type != kDLCPU) {
      return Status(ErrorStatus() << "cannot compare a tensor on " << DeviceName(t->device()) << " from the host");
    }
  }
  const DataType dtype = actual.dtype();
  const int bytes = dtype.bytes();
  const auto* a = actual.data_as<const uint8_t>();
  const auto* e = expected.data_as<const uint8_t>();
  TensorComparison result;
  result.num_elements = actual.num_elements();
  for (int64_t i = 0; i < result.num_elements; ++i) {
    const uint8_t* pa = a + i * bytes;
    const uint8_t* pe = e + i * bytes;
    bool match;
    if (dtype.is_float()) {
      const double x = ReadFloat(dtype, pa), y = ReadFloat(dtype, pe);
      if (std::isnan(x) || std::isnan(y)) {
        match = std::isnan(x) && std::isnan(y);
      } else if (std::isinf(x) || std::isinf(y)) {
        match = x == y;
      } else {
        const double diff = std::fabs(x - y);
        result.max_abs_diff = std::max(result.max_abs_diff, diff);
        match = diff <= tolerance.atol + tolerance.rtol * std::fabs(y);
      }
    } else {
      // Integers and bools compare exactly: no tolerance, no rounding through double.
      match = dtype.is_bool() ? (*pa != 0) == (*pe != 0) : std::memcmp(pa, pe, static_cast<size_t>(bytes)) == 0;
      if (!match)
        result.max_abs_diff = std::max(result.max_abs_diff, std::fabs(ReadInteger(dtype, pa) - ReadInteger(dtype, pe)));
    }
    if (match) continue;
    if (result.num_mismatched++ == 0) {
      result.first_mismatch = Unflatten(i, actual.shape());
      result.first_actual = FormatElement(dtype, pa);
      result.first_expected = FormatElement(dtype, pe);
    }
  }
  return result;
}

std::string DescribeMismatch(const TensorComparison& comparison, const Tolerance& tolerance) {
  std::ostringstream out;
  out << comparison.num_mismatched << " of " << comparison.num_elements << " elements differ by more than "
      << tolerance.atol << " + " << tolerance.rtol << " * |expected|";
  if (!comparison.ok()) {
    out << "; first at [";
    for (size_t d = 0; d < comparison.first_mismatch.size(); ++d)
      out << (d ? ", " : "") << comparison.first_mismatch[d];
    out << "]: got " << comparison.first_actual << ", expected " << comparison.first_expected;
  }
  out << "; max abs diff " << comparison.max_abs_diff;
  return out.str();
}

}  // namespace strata::vm
