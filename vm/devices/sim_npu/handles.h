// The simulated NPU's handle encoding, and the text that names handles and byte
// ranges in error messages. Shared by every part of the device, so that a
// handle is packed, checked and printed the same way wherever it is met.
#pragma once

#include <cstdint>
#include <string>

namespace sim_npu {

// kind (8 bits) | device serial (16 bits) | counter (40 bits). The kind catches a
// queue passed as a buffer, the serial a handle of another device, and counters
// are never reused, so a stale handle never reaches a newer object.

enum class Kind : uint64_t { kBuffer = 1, kQueue = 2, kEvent = 3, kKernel = 4 };
inline constexpr uint64_t kCounterBits = 40;
inline constexpr uint64_t kCounterMask = (uint64_t{1} << kCounterBits) - 1;

inline uint64_t MakeHandle(Kind kind, uint16_t serial, uint64_t counter) {
  return static_cast<uint64_t>(kind) << 56 | uint64_t{serial} << kCounterBits | counter;
}
inline uint64_t KindBits(uint64_t h) { return h >> 56; }
inline uint16_t SerialOf(uint64_t h) { return static_cast<uint16_t>(h >> kCounterBits); }
inline uint64_t CounterOf(uint64_t h) { return h & kCounterMask; }

const char* KindName(uint64_t bits);

std::string Hex(uint64_t v);

// "buffer #5" for a well-formed handle, the hex value otherwise.
std::string Describe(uint64_t h);

// [offset, offset + size), with the sum left unevaluated when it overflows (a
// hostile caller's range must print as it was given, not wrapped around).
std::string ByteRange(uint64_t offset, uint64_t size);

}  // namespace sim_npu
