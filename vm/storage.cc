// Storage allocation and release.
#include "vm/storage.h"

namespace strata::vm {

StatusOr<Ref<Storage>> Storage::Allocate(int64_t nbytes, int64_t alignment, DLDevice device) {
  STRATA_ASSIGN_OR_RETURN(void* data, AllocateDeviceMemory(device, nbytes, alignment));
  return Ref<Storage>(new Storage(data, nbytes, device, /*owns=*/true, nullptr));
}

Ref<Storage> Storage::WrapExternal(void* data, int64_t nbytes, DLDevice device, std::shared_ptr<const void> owner) {
  return Ref<Storage>(new Storage(data, nbytes, device, /*owns=*/false, std::move(owner)));
}

Storage::Storage(void* data, int64_t nbytes, int64_t block_bytes, std::shared_ptr<StoragePool> pool)
    : data_(data),
      nbytes_(nbytes),
      device_(kCpuDevice),
      owns_(true),
      pool_(std::move(pool)),
      block_bytes_(block_bytes) {}

Ref<Storage> Storage::FromPool(void* data, int64_t nbytes, int64_t block_bytes, std::shared_ptr<StoragePool> pool) {
  return Ref<Storage>(new Storage(data, nbytes, block_bytes, std::move(pool)));
}

Storage::~Storage() {
  if (pool_) {
    pool_->Release(data_, block_bytes_);
  } else if (owns_memory()) {
    FreeDeviceMemory(device_, data_);
  }
}

}  // namespace strata::vm
