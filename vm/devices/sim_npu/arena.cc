// Best-fit allocation with coalescing (see arena.h).
#include "vm/devices/sim_npu/arena.h"

#include <iterator>

namespace sim_npu {

Arena::Arena(uint64_t capacity, uint64_t alignment)
    : capacity_(capacity), alignment_(alignment), free_bytes_(capacity) {
  if (capacity > 0) Insert(0, capacity);
}

void Arena::Insert(uint64_t offset, uint64_t size) {
  by_offset_.emplace(offset, size);
  by_size_.emplace(size, offset);
}

void Arena::Erase(std::map<uint64_t, uint64_t>::iterator it) {
  by_size_.erase({it->second, it->first});
  by_offset_.erase(it);
}

bool Arena::Allocate(uint64_t size, uint64_t* offset, uint64_t* reserved) {
  if (size > capacity_) return false;  // also keeps the rounding below from overflowing
  uint64_t rounded = (size + alignment_ - 1) & ~(alignment_ - 1);
  if (rounded == 0) rounded = alignment_;
  // The smallest block of at least `rounded` bytes; (size, offset) order breaks ties by offset.
  auto fit = by_size_.lower_bound({rounded, 0});
  if (fit == by_size_.end()) return false;
  const uint64_t block_offset = fit->second, block_size = fit->first;
  Erase(by_offset_.find(block_offset));
  if (block_size > rounded) Insert(block_offset + rounded, block_size - rounded);
  free_bytes_ -= rounded;
  *offset = block_offset;
  *reserved = rounded;
  return true;
}

void Arena::Release(uint64_t offset, uint64_t reserved) {
  uint64_t start = offset, size = reserved;
  auto next = by_offset_.lower_bound(offset);
  if (next != by_offset_.end() && next->first == offset + reserved) {
    size += next->second;
    auto after = std::next(next);
    Erase(next);
    next = after;
  }
  if (next != by_offset_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == offset) {
      start = prev->first;
      size += prev->second;
      Erase(prev);
    }
  }
  Insert(start, size);
  free_bytes_ += reserved;
}

}  // namespace sim_npu
