// Tensor input and output for tools: .npy files and IREE-style inline values.
//
// .npy: format versions 1.0, 2.0 and 3.0 are read, 1.0 (or 2.0 when the header
// needs it) is written; little-endian, C order; dtypes f16 f32 f64 i8 i16 i32
// i64 u8 u16 u32 u64 bool. Fortran-order and big-endian files are refused with
// a message saying so.
//
// Inline values: `2x3xf32=1,2,3,4,5,6` (dims, dtype, then the row-major values
// separated by commas or spaces), `f32=1.5` for a scalar (rank 0), `0x4xi32=`
// for an empty tensor, `bool` values as true/false/1/0.
//
// Every error names the file or argument and says what is wrong.
// Thread-safety: pure functions (files are read/written as given).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "support/status.h"
#include "vm/tensor.h"

namespace strata::vm {

// Reads `path` into a new CPU tensor.
StatusOr<Ref<Tensor>> ReadNpyFile(const std::string& path);
// Parses the bytes of a .npy file; `name` (e.g. the file name) prefixes errors.
StatusOr<Ref<Tensor>> ParseNpy(std::span<const uint8_t> bytes, std::string_view name);

// The .npy encoding of a CPU tensor.
StatusOr<std::vector<uint8_t>> EncodeNpy(const Tensor& tensor);
Status WriteNpyFile(const std::string& path, const Tensor& tensor);

// Parses an inline value such as "2x3xf32=1,2,3,4,5,6" into a new CPU tensor.
StatusOr<Ref<Tensor>> ParseInlineTensor(std::string_view text);
// The inline form of a CPU tensor ("2x3xf32=1,2,3,4,5,6"); with max_elements >= 0,
// at most that many values are printed, followed by ",..." when some were left out.
std::string FormatInlineTensor(const Tensor& tensor, int64_t max_elements = -1);
// One element at `p` as inline values write it: "1.5", "-3", "true".
std::string FormatElement(DataType dtype, const uint8_t* p);

}  // namespace strata::vm
