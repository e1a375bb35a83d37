// The checksum that guards native code in an executable (NativeModule.code_crc32).
#pragma once

#include <cstdint>
#include <span>

namespace strata::serialization {

// CRC-32 (the zlib / gzip polynomial) of `bytes`.
uint32_t CodeChecksum(std::span<const uint8_t> bytes);

}  // namespace strata::serialization
