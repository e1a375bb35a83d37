// libFuzzer target: the .npy reader (strata run --input=@file.npy, the Python
// package's fixtures). A file that parses must encode back to bytes that parse
// to the same shape, dtype and elements.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>

#include "vm/tensor_io/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace strata;
  StatusOr<vm::Ref<vm::Tensor>> tensor = vm::ParseNpy(std::span<const uint8_t>(data, size), "fuzz.npy");
  if (!tensor.ok()) return 0;
  StatusOr<std::vector<uint8_t>> encoded = vm::EncodeNpy(**tensor);
  if (!encoded.ok()) std::abort();  // every tensor the reader makes can be written
  StatusOr<vm::Ref<vm::Tensor>> again = vm::ParseNpy(*encoded, "encoded.npy");
  if (!again.ok()) std::abort();
  const vm::Tensor& a = **tensor;
  const vm::Tensor& b = **again;
  if (a.dtype() != b.dtype() || !std::equal(a.shape().begin(), a.shape().end(), b.shape().begin(), b.shape().end()) ||
      a.num_bytes() != b.num_bytes() || std::memcmp(a.data(), b.data(), static_cast<size_t>(a.num_bytes())) != 0)
    std::abort();
  return 0;
}
