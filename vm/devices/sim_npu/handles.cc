// Naming handles and byte ranges for error messages (see handles.h).
#include "vm/devices/sim_npu/handles.h"

#include <cstdio>

namespace sim_npu {

const char* KindName(uint64_t bits) {
  switch (bits) {
    case 1: return "buffer";
    case 2: return "queue";
    case 3: return "event";
    case 4: return "kernel";
    default: return nullptr;
  }
}

std::string Hex(uint64_t v) {
  char text[32];
  std::snprintf(text, sizeof(text), "0x%016llx", static_cast<unsigned long long>(v));
  return text;
}

std::string Describe(uint64_t h) {
  const char* name = KindName(KindBits(h));
  if (name == nullptr || CounterOf(h) == 0) return "handle " + Hex(h);
  return std::string(name) + " #" + std::to_string(CounterOf(h));
}

std::string ByteRange(uint64_t offset, uint64_t size) {
  // Appended piece by piece: GCC 12 warns (-Wrestrict, falsely) about "[" + std::string.
  std::string text = "[";
  text += std::to_string(offset);
  text += ", ";
  if (size <= UINT64_MAX - offset) {
    text += std::to_string(offset + size);
  } else {
    text += std::to_string(offset);
    text += " + ";
    text += std::to_string(size);
  }
  text += ")";
  return text;
}

}  // namespace sim_npu
