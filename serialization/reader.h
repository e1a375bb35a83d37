// Reading an executable file: the envelope checks and the flatbuffers verifier.
//
// ReadExecutable checks, in order: the size, the 8-byte alignment of the buffer,
// the file identifier "STRX", the format version (before anything else of the
// file is trusted, so a newer file is refused with a version message rather than
// a verifier failure), the checksums (checksum.h; unless ReadOptions says not
// to, so that damage is named by the region it hit), the flatbuffers verifier (a
// failure names the section), and finally the semantic verifier (verifier.h),
// which checks native code against its checksum in any case. The returned root points into
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

struct ReadOptions {
  // Verify the checksums of every region of the file (format 1.5). Without it,
  // damaged tensor data goes unnoticed; native code is checked either way.
  bool verify_checksums = true;
};

// Identifier, version, checksums and flatbuffers verification only.
StatusOr<const fb::Executable*> VerifyExecutableBuffer(std::span<const uint8_t> bytes, const ReadOptions& options = {});

// VerifyExecutableBuffer followed by VerifyExecutableSemantics.
StatusOr<const fb::Executable*> ReadExecutable(std::span<const uint8_t> bytes, const ReadOptions& options = {});

}  // namespace strata::serialization
