// Storage: a reference-counted block of device memory that tensors view.
//
// `vm.builtin.alloc_storage` creates one and `alloc_tensor_from_storage` carves
// tensors out of it (memory planning reuses one storage for several tensors).
// A storage either owns its memory (freed with the last reference) or wraps
// memory owned by someone else, kept alive through `owner` (e.g. the mapped
// executable file that tensor constants point into).
//
// Thread-safety: immutable after creation; the bytes it holds are not
// synchronized (writers are the kernels the program runs).
#pragma once

#include <cstdint>
#include <memory>

#include <dlpack/dlpack.h>

#include "support/status.h"
#include "vm/device.h"
#include "vm/object.h"

namespace strata::vm {

// What storage taken from a pool reports back to it: the block's return when
// the storage dies, and the bytes of the tensors viewing it (the pool's live
// statistics). MemoryPool (vm/memory_pool.h) implements it; an interface here,
// so that Storage and Tensor do not depend on the pool that makes them.
class StoragePool {
 public:
  virtual void Release(void* data, int64_t block_bytes) = 0;
  virtual void AddTensorBytes(int64_t bytes) = 0;

 protected:
  ~StoragePool() = default;
};

class Storage final : public Object {
 public:
  // Allocates `nbytes` on `device`, aligned to max(alignment, kDefaultAlignment).
  static StatusOr<Ref<Storage>> Allocate(int64_t nbytes, int64_t alignment, DLDevice device = kCpuDevice);
  // Wraps memory this storage does not own; `owner` is held until the storage dies.
  static Ref<Storage> WrapExternal(void* data, int64_t nbytes, DLDevice device, std::shared_ptr<const void> owner);
  // A CPU block of `block_bytes` (>= nbytes) taken from `pool`, returned to it on release.
  static Ref<Storage> FromPool(void* data, int64_t nbytes, int64_t block_bytes, std::shared_ptr<StoragePool> pool);

  void* data() const { return data_; }
  int64_t nbytes() const { return nbytes_; }
  DLDevice device() const { return device_; }
  bool owns_memory() const { return owns_; }
  // The pool the memory came from, or null.
  StoragePool* pool() const { return pool_.get(); }

 private:
  Storage(void* data, int64_t nbytes, DLDevice device, bool owns, std::shared_ptr<const void> owner)
      : data_(data), nbytes_(nbytes), device_(device), owns_(owns), owner_(std::move(owner)) {}
  Storage(void* data, int64_t nbytes, int64_t block_bytes, std::shared_ptr<StoragePool> pool);
  ~Storage() override;

  void* data_;
  int64_t nbytes_;
  DLDevice device_;
  bool owns_;
  std::shared_ptr<const void> owner_;
  std::shared_ptr<StoragePool> pool_;
  int64_t block_bytes_ = 0;
};

}  // namespace strata::vm
