#include "serialization/checksum.h"

#include <zlib.h>

namespace strata::serialization {

uint32_t CodeChecksum(std::span<const uint8_t> bytes) {
  uLong crc = crc32_z(0L, Z_NULL, 0);
  return static_cast<uint32_t>(crc32_z(crc, bytes.data(), bytes.size()));
}

}  // namespace strata::serialization
