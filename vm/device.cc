// CPU device memory; other device types report that no allocator exists.
#include "vm/device.h"

#include <cstdlib>
#include <new>

namespace strata::vm {

std::string DeviceName(DLDevice device) {
  const char* type = "device";
  switch (device.device_type) {
    case kDLCPU: type = "cpu"; break;
    case kDLCUDA: type = "cuda"; break;
    case kDLCUDAHost: type = "cuda_host"; break;
    case kDLOpenCL: type = "opencl"; break;
    case kDLVulkan: type = "vulkan"; break;
    case kDLMetal: type = "metal"; break;
    case kDLVPI: type = "vpi"; break;
    case kDLROCM: type = "rocm"; break;
    case kDLExtDev: type = "ext_dev"; break;
    default:
      return "device(" + std::to_string(static_cast<int>(device.device_type)) + "):" + std::to_string(device.device_id);
  }
  return std::string(type) + ":" + std::to_string(device.device_id);
}

StatusOr<void*> AllocateDeviceMemory(DLDevice device, int64_t nbytes, int64_t alignment) {
  if (device.device_type != kDLCPU) {
    return Status(ErrorStatus() << "no allocator for device " << DeviceName(device));
  }
  if (nbytes < 0) return Status(ErrorStatus() << "cannot allocate a negative size (" << nbytes << " bytes)");
  if (alignment <= 0 || (alignment & (alignment - 1)) != 0) {
    return Status(ErrorStatus() << "alignment " << alignment << " is not a power of two");
  }
  if (alignment < kDefaultAlignment) alignment = kDefaultAlignment;
  // aligned_alloc wants a size that is a multiple of the alignment; never 0.
  constexpr int64_t kMaxBytes = int64_t{1} << 48;
  if (nbytes > kMaxBytes) {
    return Status(ErrorStatus() << "out of memory: cannot allocate " << nbytes << " bytes on " << DeviceName(device));
  }
  int64_t rounded = (nbytes + alignment - 1) / alignment * alignment;
  if (rounded == 0) rounded = alignment;
  void* ptr = std::aligned_alloc(static_cast<size_t>(alignment), static_cast<size_t>(rounded));
  if (ptr == nullptr) {
    return Status(ErrorStatus() << "out of memory: cannot allocate " << nbytes << " bytes on " << DeviceName(device));
  }
  return ptr;
}

void FreeDeviceMemory(DLDevice device, void* ptr) {
  if (device.device_type == kDLCPU) std::free(ptr);
}

}  // namespace strata::vm
