// The simulated NPU's configuration: memory, limits and the cost model's
// parameters, set by the options string of device_open (docs/devices.md).
#pragma once

#include <cstdint>
#include <string>

namespace sim_npu {

struct Config {
  // Device memory (the arena buffers come from) and the alignment of every buffer.
  uint64_t memory_bytes = uint64_t{256} << 20;
  uint64_t alignment = 64;
  uint32_t max_queues = 8;
  // Cost model (see CostModel below and docs/devices.md).
  uint32_t mac_rows = 16;  // output rows the MAC array computes at once
  uint32_t mac_cols = 16;  // output columns the MAC array computes at once
  uint64_t clock_mhz = 1000;
  uint32_t vector_lanes = 16;          // elements per cycle of the vector unit
  uint64_t dma_mbps = 12800;           // host <-> device, 10^6 bytes per second
  uint64_t d2d_mbps = 25600;           // device -> device
  uint64_t command_latency_ns = 1000;  // fixed cost of every copy and kernel
  // Testing: a real sleep before every copy and kernel runs, so that a test can
  // observe a command that has been submitted but has not completed.
  uint64_t debug_delay_us = 0;
  // Testing: the N-th copy or kernel launch the device accepts (counted from 1
  // over all its queues) fails when it runs, once, as a faulty device would;
  // 0 (the default) injects nothing.
  uint64_t debug_fail_command = 0;
};

// Parses `options` ("key=value" pairs separated by commas or spaces; NULL or ""
// keeps every default) over `config`. On an unknown key or a bad value, returns
// false and says which in `error`.
bool ParseOptions(const char* options, Config* config, std::string* error);

// The simulated device time of each kind of work, in nanoseconds. Exact integer
// arithmetic (rounding up), so that tests can predict every number.
class CostModel {
 public:
  explicit CostModel(const Config& config) : config_(config) {}

  // A kernel that keeps the MAC array busy `mac_cycles` cycles and the vector
  // unit `vector_cycles` cycles (the two do not overlap).
  uint64_t KernelNs(uint64_t mac_cycles, uint64_t vector_cycles) const;
  uint64_t HostCopyNs(uint64_t bytes) const { return config_.command_latency_ns + TransferNs(bytes, config_.dma_mbps); }
  uint64_t DeviceCopyNs(uint64_t bytes) const {
    return config_.command_latency_ns + TransferNs(bytes, config_.d2d_mbps);
  }

  // Cycles of an [m, k] x [k, n] product on the mac_rows x mac_cols array: it
  // computes one output tile of mac_rows x mac_cols per k cycles, and a partial
  // tile costs as much as a full one.
  uint64_t MatmulCycles(uint64_t m, uint64_t n, uint64_t k) const;
  // Cycles of an elementwise pass over `elements` values on the vector unit.
  uint64_t VectorCycles(uint64_t elements) const;

 private:
  static uint64_t TransferNs(uint64_t bytes, uint64_t mbps);
  const Config& config_;
};

}  // namespace sim_npu
