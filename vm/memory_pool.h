// MemoryPool: the VM's runtime allocator for tensor memory, and its accounting.
//
// Every storage and tensor the bytecode allocates (vm.builtin.alloc_storage,
// alloc_tensor, alloc_shape_heap) comes from the pool of the VirtualMachine that
// runs it. Freed blocks go back to the pool, not to the system, so a model called
// again at the same shapes finds every block it needs cached: after the first call
// it allocates nothing from the system. This is also the fallback for what the
// compiler's memory plan cannot place (function outputs, tensors of data-dependent
// size, allocations inside branches).
//
// Blocks are rounded up to a size class (64-byte steps up to 1 KiB, then 16
// classes per power of two: at most 1/16 larger than asked) and a request takes
// the smallest cached block of its class or at most 1/8 larger, so one cached
// block serves shapes that differ a little. Cached bytes beyond
// cache_limit_bytes go back to the system, largest blocks first. Blocks of
// 128 KiB and more are mapped from the kernel (mmap), so that a block given
// back leaves the process (not a hole in malloc's heap); smaller ones come from
// aligned_alloc, and so does every block under AddressSanitizer (which then
// checks them).
//
// Accounting (docs/memory.md):
//   system bytes       bytes obtained from the system allocator
//   live bytes         bytes of blocks held by live storages (what the process uses)
//   live tensor bytes  bytes of tensors alive that view pool memory; its peak is
//                      the lower bound any plan could reach for those tensors
//
// Thread-safety: all members are thread-safe. The VM allocates from its own thread,
// but a result it returned may be freed on any thread, so a mutex guards the free
// lists and counters (uncontended: a few nanoseconds).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>

#include "support/data_type.h"
#include "support/status.h"
#include "vm/object.h"
#include "vm/storage.h"

namespace strata::vm {

class Storage;
class Tensor;

// Counters of one VirtualMachine call (or any interval: see MemoryPool::Snapshot).
struct MemoryStats {
  int64_t system_bytes = 0;        // bytes newly obtained from the system
  int64_t system_allocations = 0;  // blocks newly obtained from the system
  int64_t allocations = 0;         // storages the program allocated (pool hits included)
  int64_t peak_live_bytes = 0;     // most pool bytes held at once, above the level at the start
  int64_t lower_bound_bytes = 0;   // most tensor bytes alive at once, above the level at the start
};

class MemoryPool final : public StoragePool, public std::enable_shared_from_this<MemoryPool> {
 public:
  // Cached (free) bytes kept for reuse by default.
  static constexpr int64_t kDefaultCacheLimitBytes = int64_t{1} << 30;

  static std::shared_ptr<MemoryPool> Create(int64_t cache_limit_bytes = kDefaultCacheLimitBytes);
  ~MemoryPool();

  // A CPU storage of `nbytes`, aligned to `alignment` (a power of two up to 4096).
  StatusOr<Ref<Storage>> AllocateStorage(int64_t nbytes, int64_t alignment);
  // A tensor of `shape` and `dtype` viewing a storage of its own.
  StatusOr<Ref<Tensor>> AllocateTensor(std::span<const int64_t> shape, DataType dtype);

  // Starts a measurement: peaks restart from the current levels.
  void BeginInterval();
  // Counters since the last BeginInterval.
  MemoryStats Snapshot() const;

  // Testing: asked, under the pool's lock, before each allocation the pool
  // would make from the system (never for a request its cache serves) with the
  // block's size in bytes; true makes that allocation fail as if the system
  // were out of memory (the pool then gives its cache back and asks again, as
  // for a real failure). An empty function (the default) turns it off. It must
  // not call the pool.
  void SetSystemAllocationFailureForTesting(std::function<bool(int64_t bytes)> should_fail);

  // Returns every cached block to the system.
  void ReleaseCached();
  void set_cache_limit_bytes(int64_t bytes);
  int64_t cached_bytes() const;
  int64_t live_bytes() const;

 private:
  explicit MemoryPool(int64_t cache_limit_bytes) : cache_limit_bytes_(cache_limit_bytes) {}

  // StoragePool: ~Storage returns a block of this pool; a tensor viewing pool
  // memory is created or destroyed.
  void Release(void* data, int64_t block_bytes) override;
  void AddTensorBytes(int64_t bytes) override;
  void TrimLocked();
  void* SystemAllocateLocked(int64_t bytes, int64_t alignment);

  mutable std::mutex mu_;                      // free lists and storage counters
  std::multimap<int64_t, void*> free_blocks_;  // block size -> block (64-byte aligned at least)
  int64_t cache_limit_bytes_;
  int64_t cached_bytes_ = 0;
  int64_t live_bytes_ = 0;
  std::function<bool(int64_t)> fail_system_allocation_;  // testing; empty in production
  // Tensor accounting runs twice per tensor on top of the storage's two locked
  // steps; lock-free (relaxed: only the counts matter, not their order).
  std::atomic<int64_t> live_tensor_bytes_{0};
  std::atomic<int64_t> peak_tensor_bytes_{0};  // since BeginInterval (absolute level)
  // Totals since creation; Snapshot subtracts the values saved by BeginInterval.
  int64_t system_bytes_ = 0;
  int64_t system_allocations_ = 0;
  int64_t allocations_ = 0;
  int64_t peak_live_bytes_ = 0;  // since BeginInterval (absolute level)
  MemoryStats start_;            // totals and levels at BeginInterval
  int64_t start_live_bytes_ = 0;
  int64_t start_tensor_bytes_ = 0;
};

// The pool of the VirtualMachine running on this thread, or null outside a call.
MemoryPool* CurrentMemoryPool();

// Installs `pool` as the current pool for its lifetime (nests).
class MemoryPoolScope {
 public:
  explicit MemoryPoolScope(MemoryPool* pool);
  ~MemoryPoolScope();
  MemoryPoolScope(const MemoryPoolScope&) = delete;
  MemoryPoolScope& operator=(const MemoryPoolScope&) = delete;

 private:
  MemoryPool* saved_;
};

}  // namespace strata::vm
