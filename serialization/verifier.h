// The semantic verifier of the file: everything about its structure the VM
// trusts without checking. The instruction streams are the bytecode verifier's
// (vm/bytecode/verifier.h), which the loader runs after this one.
//
// Runs on a buffer the flatbuffers verifier accepted. After it succeeds:
//   - every function has a valid kind; a bytecode function has 0 <= num_params
//     <= num_registers <= kMaxRegisters, param_names absent or one per parameter,
//     and non-empty, 8-byte aligned code; its signature, when present, has one
//     value per parameter and a result, each of a known kind with only the
//     fields that kind has (dtype a data type, dims one per ndim, tuple fields
//     nested at most kMaxSignatureDepth deep) and printable text; no other
//     function has a signature;
//   - compiled-kernel functions name a native module in range and a symbol;
//   - library functions have a name;
//   - constants have a value of a known type; tensor constants a valid dtype,
//     dims >= 0 and exactly product(shape) * dtype bytes of data;
//   - native modules have code that matches its checksum (the NativeCode region
//     of a file with checksums, code_crc32 in older files; checked even when the
//     file's other checksums are not); entry points name bytecode functions.
// Every error is DATA_LOSS and names the section and index, e.g.
//   constants[3]: tensor data has 12 bytes, expected 16 (4 elements of f32)
//
// Thread-safety: pure function.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "serialization/executable_generated.h"
#include "support/status.h"

namespace strata::serialization {

// Registers per bytecode function: bounds the VM's memory per frame.
inline constexpr int32_t kMaxRegisters = 1 << 16;

// `exe` is the root of `bytes` (the file, for the offsets of native code).
Status VerifyExecutableSemantics(const fb::Executable& exe, std::span<const uint8_t> bytes);

// "functions[3] 'main'": how every verifier names a function.
std::string FunctionLabel(uint32_t index, const fb::Function* f);

// Elements of an optional flatbuffers vector (absent is empty).
template <typename T>
uint32_t SizeOf(const ::flatbuffers::Vector<T>* vec) {
  return vec ? vec->size() : 0;
}

}  // namespace strata::serialization
