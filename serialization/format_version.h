// The executable format version this build writes and reads.
//
// A runtime reads any file with the same major version and a minor version no
// newer than its own; anything else is refused with both versions in the message.
#pragma once

#include <cstdint>

namespace strata::serialization {

inline constexpr uint32_t kFormatMajor = 1;
inline constexpr uint32_t kFormatMinor = 7;
// The first minor version whose files must carry checksums (Executable.checksums).
inline constexpr uint32_t kFirstMinorWithChecksums = 5;
inline constexpr const char* kFileIdentifier = "STRX";
// Alignment of tensor constant data inside the file (and of the file in memory).
inline constexpr size_t kConstantAlignment = 64;

}  // namespace strata::serialization
