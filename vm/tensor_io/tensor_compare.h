// Comparing a result tensor with an expected one, as `strata run
// --expected-output` and services checking a deployment do.
//
// Floating-point elements match when |actual - expected| <= atol + rtol *
// |expected| (numpy.allclose), NaN matches NaN and an infinity only itself;
// integer and bool elements must be equal. Dtype and shape must be equal.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "support/status.h"
#include "vm/tensor.h"

namespace strata::vm {

struct Tolerance {
  double rtol = 1e-4;
  double atol = 1e-5;
};

struct TensorComparison {
  int64_t num_elements = 0;
  int64_t num_mismatched = 0;
  double max_abs_diff = 0;                   // over pairs of finite values
  std::vector<int64_t> first_mismatch;       // index of the first mismatch, if any
  std::string first_actual, first_expected;  // its values, formatted
  bool ok() const { return num_mismatched == 0; }
};

// Compares element by element. An error (not a mismatch) when the dtypes or
// shapes differ, or a tensor is not readable from the host.
StatusOr<TensorComparison> CompareTensors(const Tensor& actual, const Tensor& expected, const Tolerance& tolerance);

// "3 of 8960 elements differ by more than 1e-06 + 1e-05 * |expected|; first at
// [3, 17]: got 1.5, expected 1.25; max abs diff 0.25"
std::string DescribeMismatch(const TensorComparison& comparison, const Tolerance& tolerance);

}  // namespace strata::vm
