// Options parsing and the cost model of the simulated NPU (see config.h).
#include "vm/devices/sim_npu/config.h"

#include <charconv>
#include <cstring>
#include <string_view>

namespace sim_npu {
namespace {

using u128 = unsigned __int128;

uint64_t CeilDiv(u128 a, u128 b) {
  const u128 q = (a + b - 1) / b;
  // Results beyond 2^64 ns (584 years) saturate rather than wrap.
  return q > UINT64_MAX ? UINT64_MAX : static_cast<uint64_t>(q);
}

// One option: its key, where it lives, its range, and whether sizes may carry
// a K/M/G suffix (binary multiples).
struct OptionSpec {
  const char* key;
  uint64_t min;
  uint64_t max;
  bool size_suffix;
  const char* meaning;
};

constexpr OptionSpec kOptions[] = {
    {"memory", 4096, uint64_t{1} << 40, true, "device memory in bytes (K/M/G suffixes)"},
    {"alignment", 4, uint64_t{1} << 20, true, "buffer alignment, a power of two"},
    {"max_queues", 1, 64, false, "queues that may exist at once"},
    {"mac_rows", 1, 4096, false, "MAC array rows"},
    {"mac_cols", 1, 4096, false, "MAC array columns"},
    {"clock_mhz", 1, 1000000, false, "clock in MHz"},
    {"vector_lanes", 1, 65536, false, "vector unit elements per cycle"},
    {"dma_mbps", 1, 1000000000, false, "host<->device bandwidth in 10^6 bytes/s"},
    {"d2d_mbps", 1, 1000000000, false, "device->device bandwidth in 10^6 bytes/s"},
    {"command_latency_ns", 0, 1000000000000, false, "fixed cost of each copy and kernel"},
    {"debug_delay_us", 0, 10000000, false, "real sleep before each copy and kernel (testing)"},
    {"debug_fail_command", 0, UINT64_MAX, false, "the N-th copy or kernel launch fails when it runs (testing)"},
};

std::string KnownKeys() {
  std::string keys;
  for (const OptionSpec& spec : kOptions) {
    if (!keys.empty()) keys += ", ";
    keys += spec.key;
  }
  return keys;
}

bool ParseValue(const OptionSpec& spec, std::string_view text, uint64_t* out, std::string* error) {
  uint64_t value = 0;
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(begin, end, value);
  bool ok = ec == std::errc() && ptr != begin;
  if (ok && ptr != end && spec.size_suffix && ptr + 1 == end) {
    int shift = 0;
    switch (*ptr) {
      case 'k':
      case 'K': shift = 10; break;
      case 'm':
      case 'M': shift = 20; break;
      case 'g':
      case 'G': shift = 30; break;
      default: ok = false;
    }
    if (ok && value > (UINT64_MAX >> shift)) ok = false;
    value <<= shift;
    ptr = end;
  }
  if (!ok || ptr != end) {
    *error =
        "option " + std::string(spec.key) + "=" + std::string(text) + ": expected " +
        (spec.size_suffix ? "a non-negative integer with an optional K, M or G suffix" : "a non-negative integer") +
        " (" + spec.meaning + ")";
    return false;
  }
  if (value < spec.min || value > spec.max) {
    *error = "option " + std::string(spec.key) + "=" + std::string(text) + " is out of range [" +
             std::to_string(spec.min) + ", " + std::to_string(spec.max) + "] (" + spec.meaning + ")";
    return false;
  }
  *out = value;
  return true;
}

void Store(const char* key, uint64_t v, Config* c) {
  const std::string_view k(key);
  if (k == "memory")
    c->memory_bytes = v;
  else if (k == "alignment")
    c->alignment = v;
  else if (k == "max_queues")
    c->max_queues = static_cast<uint32_t>(v);
  else if (k == "mac_rows")
    c->mac_rows = static_cast<uint32_t>(v);
  else if (k == "mac_cols")
    c->mac_cols = static_cast<uint32_t>(v);
  else if (k == "clock_mhz")
    c->clock_mhz = v;
  else if (k == "vector_lanes")
    c->vector_lanes = static_cast<uint32_t>(v);
  else if (k == "dma_mbps")
    c->dma_mbps = v;
  else if (k == "d2d_mbps")
    c->d2d_mbps = v;
  else if (k == "command_latency_ns")
    c->command_latency_ns = v;
  else if (k == "debug_delay_us")
    c->debug_delay_us = v;
  else if (k == "debug_fail_command")
    c->debug_fail_command = v;
}

}  // namespace

bool ParseOptions(const char* options, Config* config, std::string* error) {
  if (options == nullptr) return true;
  const std::string_view text(options);
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t start = text.find_first_not_of(", \t\n", pos);
    if (start == std::string_view::npos) break;
    size_t stop = text.find_first_of(", \t\n", start);
    if (stop == std::string_view::npos) stop = text.size();
    const std::string_view item = text.substr(start, stop - start);
    pos = stop;
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0) {
      *error = "option '" + std::string(item) + "' is not key=value (known keys: " + KnownKeys() + ")";
      return false;
    }
    const std::string_view key = item.substr(0, eq);
    const OptionSpec* spec = nullptr;
    for (const OptionSpec& s : kOptions) {
      if (key == s.key) spec = &s;
    }
    if (spec == nullptr) {
      *error = "unknown option '" + std::string(key) + "' (known keys: " + KnownKeys() + ")";
      return false;
    }
    uint64_t value = 0;
    if (!ParseValue(*spec, item.substr(eq + 1), &value, error)) return false;
    Store(spec->key, value, config);
  }
  if ((config->alignment & (config->alignment - 1)) != 0) {
    *error = "option alignment=" + std::to_string(config->alignment) + " is not a power of two";
    return false;
  }
  // Whole alignment units only, so that every block of the arena stays aligned.
  config->memory_bytes -= config->memory_bytes % config->alignment;
  if (config->memory_bytes < config->alignment) {
    *error = "option memory=" + std::to_string(config->memory_bytes) + " is smaller than the alignment " +
             std::to_string(config->alignment);
    return false;
  }
  return true;
}

uint64_t CostModel::KernelNs(uint64_t mac_cycles, uint64_t vector_cycles) const {
  const u128 cycles = u128{mac_cycles} + vector_cycles;
  // cycles / (clock_mhz * 10^6 per second) = cycles * 1000 / clock_mhz ns.
  const uint64_t compute = CeilDiv(cycles * 1000, config_.clock_mhz);
  return compute > UINT64_MAX - config_.command_latency_ns ? UINT64_MAX : config_.command_latency_ns + compute;
}

uint64_t CostModel::MatmulCycles(uint64_t m, uint64_t n, uint64_t k) const {
  const u128 tiles = u128{CeilDiv(m, config_.mac_rows)} * CeilDiv(n, config_.mac_cols);
  const u128 cycles = tiles * k;
  return cycles > UINT64_MAX ? UINT64_MAX : static_cast<uint64_t>(cycles);
}

uint64_t CostModel::VectorCycles(uint64_t elements) const { return CeilDiv(elements, config_.vector_lanes); }

uint64_t CostModel::TransferNs(uint64_t bytes, uint64_t mbps) {
  // mbps * 10^6 bytes per second = mbps / 1000 bytes per ns.
  return CeilDiv(u128{bytes} * 1000, mbps);
}

}  // namespace sim_npu
