// libFuzzer target: the inline tensor syntax of strata run's --input and
// --expected-output ("2x3xf32=1,2,3,4,5,6"). A value that parses must print
// (FormatInlineTensor) to text that parses to the same shape and dtype, and,
// for integers and booleans, the same elements (floats print in their shortest
// round-trip form too, but NaN payloads do not survive text).
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "vm/tensor_io/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace strata;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  StatusOr<vm::Ref<vm::Tensor>> tensor = vm::ParseInlineTensor(text);
  if (!tensor.ok()) return 0;
  const vm::Tensor& a = **tensor;
  if (a.num_elements() > 4096) return 0;  // printing is linear; the parser is what is fuzzed
  std::string printed = vm::FormatInlineTensor(a);
  StatusOr<vm::Ref<vm::Tensor>> again = vm::ParseInlineTensor(printed);
  if (!again.ok()) std::abort();
  const vm::Tensor& b = **again;
  if (a.dtype() != b.dtype() || !std::equal(a.shape().begin(), a.shape().end(), b.shape().begin(), b.shape().end()))
    std::abort();
  if ((a.dtype().is_integral() || a.dtype().is_bool()) &&
      std::memcmp(a.data(), b.data(), static_cast<size_t>(a.num_bytes())) != 0)
    std::abort();
  return 0;
}
