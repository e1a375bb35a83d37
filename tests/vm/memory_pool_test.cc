// The VM's pooled allocator: reuse, size classes, accounting, the cache limit,
// release from another thread, bad requests, and the builtins that use it.
#include "vm/memory_pool.h"

#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "vm/registry.h"
#include "vm/storage.h"
#include "vm/tensor.h"

namespace strata::vm {
namespace {

TEST(MemoryPoolTest, FreedBlocksAreReusedWithoutSystemAllocation) {
  auto pool = MemoryPool::Create();
  pool->BeginInterval();
  void* first;
  {
    auto s = pool->AllocateStorage(1000, 64);
    ASSERT_TRUE(s.ok()) << s.status().message();
    first = (*s)->data();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(first) % 64, 0u);
    EXPECT_EQ((*s)->nbytes(), 1000);
    EXPECT_EQ((*s)->pool(), pool.get());
  }
  MemoryStats stats = pool->Snapshot();
  EXPECT_EQ(stats.allocations, 1);
  EXPECT_EQ(stats.system_allocations, 1);
  EXPECT_EQ(stats.system_bytes, 1024);  // 1000 rounded to the 64-byte class
  EXPECT_EQ(pool->live_bytes(), 0);
  EXPECT_EQ(pool->cached_bytes(), 1024);

  pool->BeginInterval();
  auto again = pool->AllocateStorage(1020, 64);  // same class
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)->data(), first);
  stats = pool->Snapshot();
  EXPECT_EQ(stats.allocations, 1);
  EXPECT_EQ(stats.system_allocations, 0);
  EXPECT_EQ(stats.system_bytes, 0);
  EXPECT_EQ(stats.peak_live_bytes, 1024);
}

TEST(MemoryPoolTest, ABlockAtMostAnEighthLargerServesARequest) {
  auto pool = MemoryPool::Create();
  { ASSERT_TRUE(pool->AllocateStorage(64 * 1024, 64).ok()); }
  pool->BeginInterval();
  {
    // 60 KiB rounds to 60 KiB; the cached 64 KiB block is within 1/8.
    auto s = pool->AllocateStorage(60 * 1024, 64);
    ASSERT_TRUE(s.ok());
    EXPECT_EQ(pool->Snapshot().system_allocations, 0);
  }
  pool->BeginInterval();
  {
    // 16 KiB would waste three quarters of the block: a new one.
    auto s = pool->AllocateStorage(16 * 1024, 64);
    ASSERT_TRUE(s.ok());
    EXPECT_EQ(pool->Snapshot().system_allocations, 1);
  }
}

TEST(MemoryPoolTest, PeakAndLowerBoundAreMeasuredFromTheIntervalStart) {
  auto pool = MemoryPool::Create();
  auto kept = pool->AllocateTensor(std::vector<int64_t>{256}, DataType::F32());  // 1 KiB alive before the interval
  ASSERT_TRUE(kept.ok());
  pool->BeginInterval();
  {
    auto storage = pool->AllocateStorage(4096, 64);
    ASSERT_TRUE(storage.ok());
    int64_t dims[] = {512};
    auto a = Tensor::View(*storage, 0, dims, DataType::F32());  // 2 KiB
    auto b = Tensor::View(*storage, 2048, dims, DataType::F32());
    ASSERT_TRUE(a.ok() && b.ok());
  }
  {
    auto c = pool->AllocateTensor(std::vector<int64_t>{128}, DataType::F32());  // 512 bytes
    ASSERT_TRUE(c.ok());
  }
  MemoryStats stats = pool->Snapshot();
  EXPECT_EQ(stats.allocations, 2);
  EXPECT_EQ(stats.peak_live_bytes, 4096);
  EXPECT_EQ(stats.lower_bound_bytes, 4096);
  EXPECT_EQ(pool->live_bytes(), 1024);
}

TEST(MemoryPoolTest, CacheLimitReturnsTheLargestBlocksFirst) {
  auto pool = MemoryPool::Create(/*cache_limit_bytes=*/3000);
  {
    auto small = pool->AllocateStorage(1024, 64);
    auto large = pool->AllocateStorage(2048, 64);
    auto medium = pool->AllocateStorage(1536, 64);
    ASSERT_TRUE(small.ok() && large.ok() && medium.ok());
  }
  // 1024 + 1536 fit under 3000; the 2048 block went back to the system.
  EXPECT_EQ(pool->cached_bytes(), 1024 + 1536);
  pool->set_cache_limit_bytes(0);
  EXPECT_EQ(pool->cached_bytes(), 0);
  pool->set_cache_limit_bytes(1 << 20);
  { ASSERT_TRUE(pool->AllocateStorage(100, 64).ok()); }
  EXPECT_EQ(pool->cached_bytes(), 128);
  pool->ReleaseCached();
  EXPECT_EQ(pool->cached_bytes(), 0);
}

TEST(MemoryPoolTest, StoragesMayDieOnAnotherThreadAndOutliveThePoolHandle) {
  auto pool = MemoryPool::Create();
  std::vector<Ref<Storage>> storages;
  for (int i = 0; i < 64; ++i) storages.push_back(pool->AllocateStorage(256 + i, 64).value());
  std::thread releaser([moved = std::move(storages)]() mutable { moved.clear(); });
  for (int i = 0; i < 64; ++i) ASSERT_TRUE(pool->AllocateStorage(4096, 64).ok());
  releaser.join();
  EXPECT_EQ(pool->live_bytes(), 0);

  // A storage keeps its pool alive: dropping the last handle first is safe.
  auto survivor = pool->AllocateStorage(64, 64).value();
  pool.reset();
  survivor = Ref<Storage>();
}

TEST(MemoryPoolTest, BadRequestsAreErrors) {
  auto pool = MemoryPool::Create();
  EXPECT_EQ(pool->AllocateStorage(-1, 64).status().message(), "cannot allocate a negative size (-1 bytes)");
  EXPECT_EQ(pool->AllocateStorage(64, 48).status().message(), "alignment 48 is not a power of two up to 4096");
  EXPECT_EQ(pool->AllocateStorage(64, 8192).status().message(), "alignment 8192 is not a power of two up to 4096");
  EXPECT_EQ(pool->AllocateStorage(int64_t{1} << 50, 64).status().message(),
            "out of memory: cannot allocate 1125899906842624 bytes on cpu:0");
  auto aligned = pool->AllocateStorage(100, 4096);
  ASSERT_TRUE(aligned.ok());
  EXPECT_EQ(reinterpret_cast<uintptr_t>((*aligned)->data()) % 4096, 0u);
  EXPECT_EQ(pool->Snapshot().allocations, 1);  // failed requests are not counted
}

// The allocation builtins use the pool installed for the running call, and the
// system allocator outside one.
TEST(MemoryPoolTest, BuiltinsAllocateFromTheCurrentPool) {
  RegisterBuiltins();
  auto alloc_storage = LookupLibraryFunction("vm.builtin.alloc_storage");
  auto alloc_tensor = LookupLibraryFunction("vm.builtin.alloc_tensor");
  ASSERT_TRUE(alloc_storage && alloc_tensor);
  Value size = Value::FromShape({300});
  Value alignment = Value::FromInt(64);
  const Value* storage_args[] = {&size, &alignment};
  Value shape = Value::FromShape({2, 3});
  Value dtype = Value::FromDataType(DataType::F32());
  const Value* tensor_args[] = {&shape, &dtype};

  Value outside;
  ASSERT_TRUE(alloc_storage->fn(nullptr, storage_args, 2, &outside).ok());
  EXPECT_EQ(outside.storage()->pool(), nullptr);
  EXPECT_EQ(CurrentMemoryPool(), nullptr);

  auto pool = MemoryPool::Create();
  {
    MemoryPoolScope scope(pool.get());
    EXPECT_EQ(CurrentMemoryPool(), pool.get());
    Value storage, tensor;
    ASSERT_TRUE(alloc_storage->fn(nullptr, storage_args, 2, &storage).ok());
    ASSERT_TRUE(alloc_tensor->fn(nullptr, tensor_args, 2, &tensor).ok());
    EXPECT_EQ(storage.storage()->pool(), pool.get());
    EXPECT_EQ(storage.storage()->nbytes(), 300);
    ASSERT_NE(tensor.tensor()->storage().get(), nullptr);
    EXPECT_EQ(tensor.tensor()->storage()->pool(), pool.get());
  }
  EXPECT_EQ(CurrentMemoryPool(), nullptr);
  EXPECT_EQ(pool->live_bytes(), 0);

  Value not_a_size = Value::FromShape({2, 3});
  const Value* bad_args[] = {&not_a_size, &alignment};
  Value ignored;
  EXPECT_EQ(
      alloc_storage->fn(nullptr, bad_args, 2, &ignored).message(),
      "vm.builtin.alloc_storage: argument 0 (bytes) must be an Int or a Shape of one dimension, got Shape (2, 3)");
}

TEST(MemoryPoolTest, CheckBoundNamesTheDimensionAndTheRange) {
  RegisterBuiltins();
  auto check = LookupLibraryFunction("vm.builtin.check_bound");
  ASSERT_TRUE(check);
  Value lo = Value::FromInt(1), hi = Value::FromInt(512);
  Value ctx = Value::FromString("main: dimension 'seq' (the model was compiled for seq = 1..512)");
  Value ok = Value::FromShape({512}), over = Value::FromShape({513}), under = Value::FromShape({0});
  Value result;
  const Value* in_range[] = {&ok, &lo, &hi, &ctx};
  EXPECT_TRUE(check->fn(nullptr, in_range, 4, &result).ok());
  const Value* above[] = {&over, &lo, &hi, &ctx};
  EXPECT_EQ(check->fn(nullptr, above, 4, &result).message(),
            "main: dimension 'seq' (the model was compiled for seq = 1..512): got 513");
  const Value* below[] = {&under, &lo, &hi, &ctx};
  EXPECT_EQ(check->fn(nullptr, below, 4, &result).message(),
            "main: dimension 'seq' (the model was compiled for seq = 1..512): got 0");
}

}  // namespace
}  // namespace strata::vm
