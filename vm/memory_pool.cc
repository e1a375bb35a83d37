// The pooled allocator behind every allocation the bytecode makes.
#include "vm/memory_pool.h"

#include <algorithm>
#include <bit>
#include <cstdlib>

#include <sys/mman.h>

#include "vm/device.h"
#include "vm/storage.h"
#include "vm/tensor.h"

namespace strata::vm {
namespace {

constexpr int64_t kMaxAlignment = 4096;
// The same limit the system allocator path enforces (vm/device.cc).
constexpr int64_t kMaxBlockBytes = int64_t{1} << 48;

thread_local MemoryPool* current_pool = nullptr;

// Blocks of kMapThreshold bytes or more are mapped from the kernel, so that a
// block the pool gives back (over its cache limit, ReleaseCached) leaves the
// process whole. From malloc they would not: once glibc has unmapped one large
// chunk it raises its mmap threshold and serves later large requests from its
// heap arenas, which blocks of ever-changing sizes fragment. In
// tests/vm/soak_test.cc (four VMs whose caches churn through a 4 MiB limit at
// random shapes) the process grew by 65 MiB over 9,000 calls that way, and by
// 1 MiB with mapped blocks. Under AddressSanitizer every block comes from
// malloc, so that ASan sees accesses past a block and LeakSanitizer sees blocks.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kMapLargeBlocks = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kMapLargeBlocks = false;
#else
constexpr bool kMapLargeBlocks = true;
#endif
#else
constexpr bool kMapLargeBlocks = true;
#endif
constexpr int64_t kMapThreshold = int64_t{128} << 10;  // glibc's initial mmap threshold

bool IsMapped(int64_t block_bytes) { return kMapLargeBlocks && block_bytes >= kMapThreshold; }

// A block of `bytes` (a multiple of `alignment`) from the system, or null.
void* SystemAllocate(int64_t bytes, int64_t alignment) {
  if (IsMapped(bytes)) {  // page-aligned, which covers every alignment the pool accepts
    void* p = mmap(nullptr, static_cast<size_t>(bytes), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? nullptr : p;
  }
  return std::aligned_alloc(static_cast<size_t>(std::max(alignment, kDefaultAlignment)), static_cast<size_t>(bytes));
}

void SystemFree(void* block, int64_t block_bytes) {
  if (IsMapped(block_bytes)) {
    munmap(block, static_cast<size_t>(block_bytes));
  } else {
    std::free(block);
  }
}

// Size class: 64-byte steps up to 1 KiB, then 16 classes per power of two, so a
// block is at most 1/16 larger than what it holds.
int64_t BlockBytes(int64_t nbytes) {
  if (nbytes <= kDefaultAlignment) return kDefaultAlignment;
  int64_t step = kDefaultAlignment;
  if (nbytes > 1024) step = std::max<int64_t>(kDefaultAlignment, std::bit_floor(static_cast<uint64_t>(nbytes)) / 16);
  return (nbytes + step - 1) / step * step;
}

}  // namespace

MemoryPool* CurrentMemoryPool() { return current_pool; }

MemoryPoolScope::MemoryPoolScope(MemoryPool* pool) : saved_(current_pool) { current_pool = pool; }
MemoryPoolScope::~MemoryPoolScope() { current_pool = saved_; }

std::shared_ptr<MemoryPool> MemoryPool::Create(int64_t cache_limit_bytes) {
  return std::shared_ptr<MemoryPool>(new MemoryPool(std::max<int64_t>(cache_limit_bytes, 0)));
}

MemoryPool::~MemoryPool() {
  // Live storages hold the pool through a shared_ptr, so only cached blocks remain.
  for (auto& [size, block] : free_blocks_) SystemFree(block, size);
}

StatusOr<Ref<Storage>> MemoryPool::AllocateStorage(int64_t nbytes, int64_t alignment) {
  if (nbytes < 0) return Status(ErrorStatus() << "cannot allocate a negative size (" << nbytes << " bytes)");
  if (alignment <= 0 || (alignment & (alignment - 1)) != 0 || alignment > kMaxAlignment) {
    return Status(ErrorStatus() << "alignment " << alignment << " is not a power of two up to " << kMaxAlignment);
  }
  if (nbytes > kMaxBlockBytes) {
    return Status(ErrorStatus() << "out of memory: cannot allocate " << nbytes << " bytes on cpu:0");
  }
  // aligned_alloc needs a size that is a multiple of the alignment.
  const int64_t want = (BlockBytes(nbytes) + alignment - 1) / alignment * alignment;
  void* data = nullptr;
  int64_t block_bytes = want;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++allocations_;
    // Best fit among the blocks of this class or at most 1/8 larger.
    for (auto it = free_blocks_.lower_bound(want); it != free_blocks_.end() && it->first <= want + want / 8; ++it) {
      if (reinterpret_cast<uintptr_t>(it->second) % static_cast<uintptr_t>(alignment) != 0) continue;
      data = it->second;
      block_bytes = it->first;
      cached_bytes_ -= block_bytes;
      free_blocks_.erase(it);
      break;
    }
    if (data == nullptr) {
      data = SystemAllocateLocked(want, alignment);
      if (data == nullptr && cached_bytes_ > 0) {
        // Give the cache back and try once more before reporting.
        for (auto& [size, block] : free_blocks_) SystemFree(block, size);
        free_blocks_.clear();
        cached_bytes_ = 0;
        data = SystemAllocateLocked(want, alignment);
      }
      if (data == nullptr) {
        --allocations_;
        return Status(ErrorStatus() << "out of memory: cannot allocate " << nbytes << " bytes on cpu:0");
      }
      system_bytes_ += want;
      ++system_allocations_;
    }
    live_bytes_ += block_bytes;
    peak_live_bytes_ = std::max(peak_live_bytes_, live_bytes_);
  }
  return Storage::FromPool(data, nbytes, block_bytes, shared_from_this());
}

void* MemoryPool::SystemAllocateLocked(int64_t bytes, int64_t alignment) {
  if (fail_system_allocation_ && fail_system_allocation_(bytes)) return nullptr;
  return SystemAllocate(bytes, alignment);
}

void MemoryPool::SetSystemAllocationFailureForTesting(std::function<bool(int64_t bytes)> should_fail) {
  std::lock_guard<std::mutex> lock(mu_);
  fail_system_allocation_ = std::move(should_fail);
}

StatusOr<Ref<Tensor>> MemoryPool::AllocateTensor(std::span<const int64_t> shape, DataType dtype) {
  if (!IsValidTensorDataType(dtype)) {
    return Status(ErrorStatus() << "cannot create a tensor of dtype " << dtype.ToString());
  }
  STRATA_ASSIGN_OR_RETURN(int64_t nbytes, NumBytesOf(shape, dtype));
  StatusOr<Ref<Storage>> storage = AllocateStorage(nbytes, kDefaultAlignment);
  if (!storage.ok()) {
    // Which tensor could not be allocated.
    return Status::Error(storage.status().code(), storage.status().message() + " for a Tensor[" + ShapeToString(shape) +
                                                      ", " + dtype.ToString() + "]");
  }
  return Tensor::View(std::move(storage).value(), 0, shape, dtype);
}

void MemoryPool::Release(void* data, int64_t block_bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  live_bytes_ -= block_bytes;
  free_blocks_.emplace(block_bytes, data);
  cached_bytes_ += block_bytes;
  if (cached_bytes_ > cache_limit_bytes_) TrimLocked();
}

void MemoryPool::TrimLocked() {
  while (cached_bytes_ > cache_limit_bytes_ && !free_blocks_.empty()) {
    auto largest = std::prev(free_blocks_.end());
    cached_bytes_ -= largest->first;
    SystemFree(largest->second, largest->first);
    free_blocks_.erase(largest);
  }
}

void MemoryPool::AddTensorBytes(int64_t bytes) {
  const int64_t live = live_tensor_bytes_.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  if (bytes <= 0) return;
  int64_t peak = peak_tensor_bytes_.load(std::memory_order_relaxed);
  while (live > peak && !peak_tensor_bytes_.compare_exchange_weak(peak, live, std::memory_order_relaxed)) {
  }
}

void MemoryPool::BeginInterval() {
  std::lock_guard<std::mutex> lock(mu_);
  start_.system_bytes = system_bytes_;
  start_.system_allocations = system_allocations_;
  start_.allocations = allocations_;
  start_live_bytes_ = live_bytes_;
  start_tensor_bytes_ = live_tensor_bytes_.load(std::memory_order_relaxed);
  peak_live_bytes_ = live_bytes_;
  peak_tensor_bytes_.store(start_tensor_bytes_, std::memory_order_relaxed);
}

MemoryStats MemoryPool::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  MemoryStats stats;
  stats.system_bytes = system_bytes_ - start_.system_bytes;
  stats.system_allocations = system_allocations_ - start_.system_allocations;
  stats.allocations = allocations_ - start_.allocations;
  stats.peak_live_bytes = peak_live_bytes_ - start_live_bytes_;
  stats.lower_bound_bytes = peak_tensor_bytes_.load(std::memory_order_relaxed) - start_tensor_bytes_;
  return stats;
}

void MemoryPool::ReleaseCached() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [size, block] : free_blocks_) SystemFree(block, size);
  free_blocks_.clear();
  cached_bytes_ = 0;
}

void MemoryPool::set_cache_limit_bytes(int64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  cache_limit_bytes_ = std::max<int64_t>(bytes, 0);
  TrimLocked();
}

int64_t MemoryPool::cached_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cached_bytes_;
}

int64_t MemoryPool::live_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return live_bytes_;
}

}  // namespace strata::vm
