// Devices and device memory.
//
// Every tensor and storage carries a DLDevice. Only the CPU is implemented; an
// accelerator plugs in later by adding its allocator here (the C device ABI in
// DESIGN.md), without changing Tensor, Storage or the VM.
//
// Thread-safety: all functions are thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include <dlpack/dlpack.h>

#include "support/status.h"

namespace strata::vm {

inline constexpr DLDevice kCpuDevice = {kDLCPU, 0};
// Default alignment of device allocations: one cache line, AVX-512 friendly.
inline constexpr int64_t kDefaultAlignment = 64;

inline bool operator==(const DLDevice& a, const DLDevice& b) {
  return a.device_type == b.device_type && a.device_id == b.device_id;
}

// "cpu:0", "cuda:1", ... for messages.
std::string DeviceName(DLDevice device);

// Allocates `nbytes` (0 allowed) aligned to `alignment` (a power of two, at least
// kDefaultAlignment is used) on `device`. The memory is uninitialized and must be
// released with FreeDeviceMemory on the same device.
StatusOr<void*> AllocateDeviceMemory(DLDevice device, int64_t nbytes, int64_t alignment);
void FreeDeviceMemory(DLDevice device, void* ptr);

}  // namespace strata::vm
