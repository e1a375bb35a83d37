// Reading an executable file: the envelope checks and the flatbuffers verifier.
//
// ReadExecutable checks, in order: the size, the 8-byte alignment of the buffer,
// the file identifier "STRX", the format version (before anything else of the
// file is trusted, so a newer file is refused with a version message rather than
// a verifier failure), the flatbuffers verifier (a failure names the section),
// and finally the semantic verifier (verifier.h). The returned root points into
// `bytes` and is safe to read without further bounds checks; the VM's loader then
// runs the bytecode verifier (vm/bytecode/verifier.h) before it trusts the code.
// A damaged file is DATA_LOSS, a format version this reader does not support
// UNIMPLEMENTED.
//
// Thread-safety: pure function.
#pragma once

#include <cstdint>
#include <span>

#include "serialization/executable_generated.h"
#include "support/status.h"

namespace strata::serialization {

// Alignment ReadExecutable requires of the buffer; loaders copy unaligned input.
inline constexpr size_t kRequiredBufferAlignment = 8;

// Identifier, version and flatbuffers verification only.
StatusOr<const fb::Executable*> VerifyExecutableBuffer(std::span<const uint8_t> bytes);

// VerifyExecutableBuffer followed by VerifyExecutableSemantics.
StatusOr<const fb::Executable*> ReadExecutable(std::span<const uint8_t> bytes);

}  // namespace strata::serialization
