// The simulated NPU's device-memory allocator: best fit over one fixed block,
// with free neighbours coalesced, so that a long-running service that allocates
// and frees tensors of changing sizes does not fragment the device.
//
// It manages offsets only; the bytes live in the device (device.h). Not
// thread-safe: the device serializes calls under its lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <utility>

namespace sim_npu {

class Arena {
 public:
  // `capacity` is a multiple of `alignment` (a power of two).
  Arena(uint64_t capacity, uint64_t alignment);

  // Reserves `size` bytes rounded up to the alignment (at least one unit, so
  // that every block has a distinct offset) from the smallest free block that
  // holds them (lowest offset on ties). False when no block is large enough.
  bool Allocate(uint64_t size, uint64_t* offset, uint64_t* reserved);
  // Returns a block Allocate handed out (`reserved` bytes at `offset`).
  void Release(uint64_t offset, uint64_t reserved);

  uint64_t capacity() const { return capacity_; }
  uint64_t free_bytes() const { return free_bytes_; }
  uint64_t largest_free_block() const { return by_size_.empty() ? 0 : by_size_.rbegin()->first; }
  size_t free_block_count() const { return by_offset_.size(); }

 private:
  void Insert(uint64_t offset, uint64_t size);
  void Erase(std::map<uint64_t, uint64_t>::iterator it);

  uint64_t capacity_;
  uint64_t alignment_;
  uint64_t free_bytes_;
  std::map<uint64_t, uint64_t> by_offset_;           // free blocks: offset -> size
  std::set<std::pair<uint64_t, uint64_t>> by_size_;  // the same blocks: (size, offset)
};

}  // namespace sim_npu
