// The runtime side of the kernel ABI: parallel_for, the error channel, workspace
// memory, and NativeModule loading (bad bytes, ABI version, symbol lookup).
#include "vm/kernel_runtime.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "abi/kernel_abi.h"
#include "vm/kernel_threads.h"
#include "vm/native_module.h"

namespace strata::vm {
namespace {

struct CountClosure {
  std::vector<std::atomic<int>>* counts;
};

int32_t CountBody(int64_t begin, int64_t end, void* closure) {
  auto* c = static_cast<CountClosure*>(closure);
  for (int64_t i = begin; i < end; ++i) (*c->counts)[i].fetch_add(1);
  return 0;
}

void ExpectEachIndexOnce(int64_t n) {
  std::vector<std::atomic<int>> counts(n);
  CountClosure closure{&counts};
  ASSERT_EQ(GetKernelRuntimeApi()->parallel_for(n, &CountBody, &closure), 0);
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(counts[i].load(), 1) << "index " << i << " of " << n;
}

TEST(KernelRuntime, ParallelForCoversTheRangeOnce) {
  EXPECT_GE(KernelThreadCount(), 1);
  EXPECT_EQ(GetKernelRuntimeApi()->abi_version, static_cast<uint32_t>(STRATA_KERNEL_ABI_VERSION));
  for (int64_t n : {0, 1, 2, 3, 7, 64, 1000, 100003}) ExpectEachIndexOnce(n);
}

int32_t NestedBody(int64_t begin, int64_t end, void* closure) {
  for (int64_t i = begin; i < end; ++i) {
    int32_t rc = GetKernelRuntimeApi()->parallel_for(10, &CountBody, closure);
    if (rc != 0) return rc;
  }
  return 0;
}

TEST(KernelRuntime, NestedParallelForRunsSerially) {
  std::vector<std::atomic<int>> counts(10);
  CountClosure closure{&counts};
  ASSERT_EQ(GetKernelRuntimeApi()->parallel_for(8, &NestedBody, &closure), 0);
  for (auto& c : counts) EXPECT_EQ(c.load(), 8);
}

// Fails in the chunk that holds the last index, with a message.
int32_t FailLastBody(int64_t begin, int64_t end, void* closure) {
  int64_t n = *static_cast<int64_t*>(closure);
  if (end == n) {
    GetKernelRuntimeApi()->set_error("chunk failed");
    return 7;
  }
  return 0;
}

TEST(KernelRuntime, ErrorFromAChunkReachesTheCaller) {
  TakeKernelError();
  int64_t n = 1000;
  EXPECT_EQ(GetKernelRuntimeApi()->parallel_for(n, &FailLastBody, &n), 7);
  EXPECT_EQ(TakeKernelError(), "chunk failed");
  EXPECT_EQ(TakeKernelError(), "");  // cleared on read
}

TEST(KernelRuntime, ConcurrentCallersAllComplete) {
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&failures] {
      for (int iteration = 0; iteration < 200; ++iteration) {
        std::vector<std::atomic<int>> counts(257);
        CountClosure closure{&counts};
        if (GetKernelRuntimeApi()->parallel_for(257, &CountBody, &closure) != 0) failures++;
        for (auto& c : counts) {
          if (c.load() != 1) failures++;
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
}

// Back-to-back jobs of a few iterations each, so that workers are often still
// claiming from one job while the caller publishes the next: a chunk must never
// run twice, be skipped, or run with another job's closure.
TEST(KernelRuntime, BackToBackSmallJobsEachCoverTheirRangeOnce) {
  for (int iteration = 0; iteration < 20000; ++iteration) {
    const int64_t n = 1 + iteration % 5;
    std::vector<std::atomic<int>> counts(n);
    CountClosure closure{&counts};
    ASSERT_EQ(GetKernelRuntimeApi()->parallel_for(n, &CountBody, &closure), 0);
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(counts[i].load(), 1) << "job " << iteration << " index " << i;
  }
}

// Jobs started after the workers have gone to sleep (past their wait budget):
// whether a worker wakes in time to claim a chunk or the caller claims them
// all, every index runs once.
TEST(KernelRuntime, JobsAfterAPauseCompleteWhetherOrNotWorkersWake) {
  for (int iteration = 0; iteration < 5; ++iteration) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // past the workers' wait budget
    ExpectEachIndexOnce(1000);
  }
}

TEST(KernelRuntime, WorkspaceIsAlignedAndReportsBadSizes) {
  const StrataRuntimeApi* api = GetKernelRuntimeApi();
  for (int64_t bytes : {0, 1, 63, 64, 1000, 1 << 20}) {
    void* p = api->alloc_workspace(bytes);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
    api->free_workspace(p);
  }
  TakeKernelError();
  EXPECT_EQ(api->alloc_workspace(-5), nullptr);
  EXPECT_EQ(TakeKernelError(), "alloc_workspace: invalid size -5 bytes");
}

// A large workspace freed on a thread is handed out again to that thread's
// next allocation that fits (a kernel allocates the same one every call;
// mapping and faulting in 34 MB each time cost 10 ms), and stays usable and
// aligned; small ones go back to malloc.
TEST(KernelRuntime, ALargeWorkspaceIsReusedByTheNextAllocationThatFits) {
  const StrataRuntimeApi* api = GetKernelRuntimeApi();
  const int64_t big = int64_t{40} << 20;
  auto* first = static_cast<uint8_t*>(api->alloc_workspace(big));
  ASSERT_NE(first, nullptr);
  first[0] = 1;
  first[big - 1] = 2;
  api->free_workspace(first);
  auto* again = static_cast<uint8_t*>(api->alloc_workspace(big - 4096));
  EXPECT_EQ(again, first);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(again) % 64, 0u);
  // Held while in use: a second one is a different block.
  auto* second = static_cast<uint8_t*>(api->alloc_workspace(big));
  ASSERT_NE(second, nullptr);
  EXPECT_NE(second, again);
  second[big - 1] = 3;
  api->free_workspace(second);
  api->free_workspace(again);
  // A larger request than any kept block gets a new one.
  auto* larger = static_cast<uint8_t*>(api->alloc_workspace(big + (int64_t{1} << 20)));
  ASSERT_NE(larger, nullptr);
  larger[big] = 4;
  api->free_workspace(larger);
  std::thread other([&] {
    // Another thread's blocks are its own.
    void* p = api->alloc_workspace(big);
    EXPECT_NE(p, nullptr);
    api->free_workspace(p);
  });
  other.join();
}

TEST(NativeModule, RejectsBytesThatAreNotASharedObject) {
  std::vector<uint8_t> junk = {1, 2, 3, 4, 5};
  StatusOr<std::unique_ptr<NativeModule>> module = NativeModule::Load(junk, "native_modules[3]");
  ASSERT_FALSE(module.ok());
  EXPECT_EQ(module.status().message().rfind("native_modules[3]: cannot load native module: ", 0), 0u)
      << module.status().message();
  EXPECT_FALSE(NativeModule::Load({}, "native_modules[0]").ok());
}

// Builds a shared object from C source with the system compiler; empty if there
// is none (the test is then skipped).
std::vector<uint8_t> BuildSharedObject(const std::string& source, const std::string& tag) {
  std::string dir = ::testing::TempDir();
  std::string c_path = dir + "/strata_" + tag + ".c";
  std::string so_path = dir + "/strata_" + tag + ".so";
  std::ofstream(c_path) << source;
  std::string command = "cc -shared -fPIC -o " + so_path + " " + c_path + " 2>/dev/null";
  if (std::system(command.c_str()) != 0) return {};
  std::ifstream in(so_path, std::ios::binary);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::remove(c_path.c_str());
  std::remove(so_path.c_str());
  return bytes;
}

TEST(NativeModule, ChecksTheKernelAbiVersion) {
  std::vector<uint8_t> bytes =
      BuildSharedObject("const unsigned strata_kernel_abi_version = 3;\nconst void* strata_runtime_api;\n", "abi_v3");
  ASSERT_FALSE(bytes.empty()) << "cannot build the test module (the C compiler of build-essential is a dependency)";
  StatusOr<std::unique_ptr<NativeModule>> module = NativeModule::Load(bytes, "native_modules[0]");
  ASSERT_FALSE(module.ok());
  EXPECT_EQ(module.status().message(), "native_modules[0]: compiled-kernel ABI version 3, runtime supports 2");
}

TEST(NativeModule, SetsTheApiTableAndLooksUpOnlyItsOwnSymbols) {
  std::vector<uint8_t> bytes = BuildSharedObject(
      "#include <stdint.h>\n"
      "const uint32_t strata_kernel_abi_version = 2;\n"
      "const void* strata_runtime_api;\n"
      "int32_t strata_kernel_api_is_set(const void* args, const int32_t* codes, int32_t n) { return strata_runtime_api "
      "!= 0; }\n"
      "int snprintf_user(char* b) { return __builtin_snprintf(b, 4, \"x\"); }\n",
      "lookup");
  ASSERT_FALSE(bytes.empty()) << "cannot build the test module (the C compiler of build-essential is a dependency)";
  StatusOr<std::unique_ptr<NativeModule>> module = NativeModule::Load(bytes, "native_modules[1]");
  ASSERT_TRUE(module.ok()) << module.status().message();
  StatusOr<StrataKernelFn> fn = (*module)->Lookup("strata_kernel_api_is_set");
  ASSERT_TRUE(fn.ok()) << fn.status().message();
  EXPECT_EQ((*fn)(nullptr, nullptr, 0), 1);
  StatusOr<StrataKernelFn> missing = (*module)->Lookup("strata_kernel_missing");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(), "native_modules[1]: compiled kernel symbol 'strata_kernel_missing' not found");
  // snprintf is visible through the module's dependencies, but is not its kernel.
  EXPECT_FALSE((*module)->Lookup("snprintf").ok());
}

}  // namespace
}  // namespace strata::vm
