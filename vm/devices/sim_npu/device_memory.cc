// Device memory: the buffer calls of the C table, and the pins that keep a
// buffer's bytes in place while a queue's worker copies or computes on them
// (see device.h). Every path that returns arena memory goes through here.
#include <algorithm>

#include "vm/devices/sim_npu/device.h"

namespace sim_npu {

int Device::Allocate(uint64_t size, StrataDeviceBuffer* out) {
  if (out == nullptr) return Fail(STRATA_DEVICE_ERROR_INVALID_ARGUMENT, "buffer_allocate: out_buffer is NULL");
  std::unique_lock<std::mutex> lock(mu_);
  uint64_t offset = 0, reserved = 0;
  if (!arena_.Allocate(size, &offset, &reserved)) {
    const std::string message = "buffer_allocate: out of device memory: requested " + std::to_string(size) +
                                " bytes, largest free block " + std::to_string(arena_.largest_free_block()) + " of " +
                                std::to_string(arena_.free_bytes()) + " bytes free (device memory " +
                                std::to_string(arena_.capacity()) + " bytes)";
    lock.unlock();
    return Fail(STRATA_DEVICE_ERROR_OUT_OF_MEMORY, message);
  }
  if (next_buffer_ > kCounterMask) {
    arena_.Release(offset, reserved);
    lock.unlock();
    return Fail(STRATA_DEVICE_ERROR_UNSUPPORTED, "buffer_allocate: the device ran out of buffer handles");
  }
  const uint64_t handle = MakeHandle(Kind::kBuffer, serial_, next_buffer_++);
  buffers_.emplace(handle, Buffer{offset, size, reserved});
  in_use_ += reserved;
  peak_ = std::max(peak_, in_use_);
  *out = handle;
  return STRATA_DEVICE_OK;
}

int Device::Free(StrataDeviceBuffer handle) {
  std::unique_lock<std::mutex> lock(mu_);
  Buffer* b = nullptr;
  std::string error;
  if (!FindBuffer(handle, /*for_submission=*/false, &b, &error)) {
    lock.unlock();
    return Fail(STRATA_DEVICE_ERROR_INVALID_ARGUMENT, "buffer_free: " + error);
  }
  ReleaseLocked(handle, b);
  return STRATA_DEVICE_OK;
}

int Device::GetSize(StrataDeviceBuffer handle, uint64_t* out) {
  if (out == nullptr) return Fail(STRATA_DEVICE_ERROR_INVALID_ARGUMENT, "buffer_get_size: out_size_bytes is NULL");
  std::unique_lock<std::mutex> lock(mu_);
  Buffer* b = nullptr;
  std::string error;
  if (!FindBuffer(handle, false, &b, &error)) {
    lock.unlock();
    return Fail(STRATA_DEVICE_ERROR_INVALID_ARGUMENT, "buffer_get_size: " + error);
  }
  *out = b->size;
  return STRATA_DEVICE_OK;
}

bool Device::FindBuffer(uint64_t handle, bool for_submission, Buffer** out, std::string* error) {
  if (!CheckHandle(handle, Kind::kBuffer, error)) return false;
  auto it = buffers_.find(handle);
  if (it == buffers_.end() || it->second.freed) {
    *error = Describe(handle) + (CounterOf(handle) < next_buffer_ ? " was freed" : " does not exist");
    return false;
  }
  if (for_submission && it->second.free_queued) {
    *error = Describe(handle) + " is being freed (queue_free_buffer)";
    return false;
  }
  *out = &it->second;
  return true;
}

void Device::ReleaseLocked(uint64_t handle, Buffer* b) {
  if (b->pins > 0) {
    b->freed = true;
    return;
  }
  arena_.Release(b->offset, b->reserved);
  in_use_ -= b->reserved;
  buffers_.erase(handle);
}

bool Device::Pin(uint64_t handle, uint64_t offset, uint64_t size, uint8_t** data, std::string* error) {
  std::lock_guard<std::mutex> lock(mu_);
  Buffer* b = nullptr;
  if (!FindBuffer(handle, false, &b, error)) return false;
  if (offset > b->size || size > b->size - offset) {  // cannot happen after the submission check; kept for safety
    *error = "bytes " + ByteRange(offset, size) + " are outside " + Describe(handle) + " of " +
             std::to_string(b->size) + " bytes";
    return false;
  }
  ++b->pins;
  *data = memory_ + b->offset + offset;
  return true;
}

void Device::Unpin(uint64_t handle) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = buffers_.find(handle);
  if (it == buffers_.end()) return;
  if (--it->second.pins == 0 && it->second.freed) ReleaseLocked(handle, &it->second);
}

void Device::ReleaseQueued(uint64_t handle) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = buffers_.find(handle);
  if (it != buffers_.end() && !it->second.freed)
    ReleaseLocked(handle, &it->second);  // already freed: nothing left to do
}

}  // namespace sim_npu
