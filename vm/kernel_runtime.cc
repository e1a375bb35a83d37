// The StrataRuntimeApi table handed to every loaded kernel module.
//
// Kernels reach the runtime only through this table (kernel_abi.h), so the kernel
// shared objects need no symbols from the process and the runtime exports none.
// Nothing here may depend on LLVM or the compiler.
#include "vm/kernel_runtime.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <string>
#include <vector>

#include "vm/thread_pool.h"

namespace strata::vm {
namespace {

// The message of the last failing kernel call on this thread (see TakeKernelError).
thread_local std::string t_kernel_error;

// Alignment of workspace memory: one cache line, enough for any vector load.
constexpr int64_t kWorkspaceAlignment = 64;
constexpr int64_t kMaxWorkspaceBytes = int64_t{1} << 40;

void SetError(const char* message) {
  // Inside a parallel chunk the message belongs to the job, so it reaches the
  // thread that called parallel_for even when a pool worker raised it.
  if (ThreadPool::RecordErrorInCurrentJob(message)) return;
  t_kernel_error = message ? message : "";
}

int32_t ParallelFor(int64_t n, StrataParallelBody body, void* closure) {
  std::string error;
  int32_t code = ThreadPool::Global().ParallelFor(n, body, closure, &error);
  if (!error.empty()) SetError(error.c_str());
  return code;
}

// Every workspace block starts with a header of one alignment unit holding
// its capacity, so that a freed block can be kept and handed out again.
constexpr int64_t kWorkspaceHeader = kWorkspaceAlignment;

// Large workspaces freed on a thread are kept for its next allocations: a
// kernel allocates the same workspace on every call, and a block above
// glibc's largest mmap threshold (32 MiB) was mapped, faulted in page by page
// and unmapped each time (EfficientNet-B0 at 5 x 240 x 240: a depthwise
// layer's 34 MB padded copy took 11.5 ms a call, its 32.5 MB at 5 x 238 x 238
// under 2 ms). Blocks under kCachedWorkspaceMinBytes go back to malloc, whose
// free lists serve them quickly; a thread keeps at most
// kCachedWorkspacesPerThread blocks (workspaces nest a level or two deep).
constexpr int64_t kCachedWorkspaceMinBytes = int64_t{1} << 20;
constexpr size_t kCachedWorkspacesPerThread = 2;

struct WorkspaceCache {
  struct Block {
    void* base;
    int64_t capacity;
  };
  std::vector<Block> blocks;
  ~WorkspaceCache() {
    for (const Block& b : blocks) std::free(b.base);
  }
};
thread_local WorkspaceCache t_workspaces;

void* AllocWorkspace(int64_t bytes) {
  if (bytes < 0 || bytes > kMaxWorkspaceBytes) {
    SetError(("alloc_workspace: invalid size " + std::to_string(bytes) + " bytes").c_str());
    return nullptr;
  }
  // aligned_alloc wants a multiple of the alignment; 0 bytes still gets a block so
  // that NULL always means failure.
  int64_t rounded = (std::max<int64_t>(bytes, 1) + kWorkspaceAlignment - 1) / kWorkspaceAlignment * kWorkspaceAlignment;
  std::vector<WorkspaceCache::Block>& cached = t_workspaces.blocks;
  if (rounded >= kCachedWorkspaceMinBytes) {
    // The smallest kept block that fits.
    auto fit = cached.end();
    for (auto it = cached.begin(); it != cached.end(); ++it) {
      if (it->capacity >= rounded && (fit == cached.end() || it->capacity < fit->capacity)) fit = it;
    }
    if (fit != cached.end()) {
      void* base = fit->base;
      cached.erase(fit);
      return static_cast<char*>(base) + kWorkspaceHeader;
    }
  }
  void* base = std::aligned_alloc(kWorkspaceAlignment, static_cast<size_t>(rounded + kWorkspaceHeader));
  if (base == nullptr) {
    SetError(("alloc_workspace: out of memory allocating " + std::to_string(bytes) + " bytes").c_str());
    return nullptr;
  }
  *static_cast<int64_t*>(base) = rounded;
  return static_cast<char*>(base) + kWorkspaceHeader;
}

void FreeWorkspace(void* ptr) {
  if (ptr == nullptr) return;
  void* base = static_cast<char*>(ptr) - kWorkspaceHeader;
  const int64_t capacity = *static_cast<int64_t*>(base);
  std::vector<WorkspaceCache::Block>& cached = t_workspaces.blocks;
  if (capacity < kCachedWorkspaceMinBytes) {
    std::free(base);
    return;
  }
  if (cached.size() == kCachedWorkspacesPerThread) {
    // Full: the smallest kept block makes room, unless the new one is smaller still.
    auto smallest = std::min_element(cached.begin(), cached.end(),
                                     [](const auto& a, const auto& b) { return a.capacity < b.capacity; });
    if (smallest->capacity >= capacity) {
      std::free(base);
      return;
    }
    std::free(smallest->base);
    cached.erase(smallest);
  }
  cached.push_back({base, capacity});
}

const StrataRuntimeApi kRuntimeApi = {
    STRATA_KERNEL_ABI_VERSION, &ParallelFor, &SetError, &AllocWorkspace, &FreeWorkspace,
};

}  // namespace

const StrataRuntimeApi* GetKernelRuntimeApi() { return &kRuntimeApi; }

std::string TakeKernelError() {
  std::string message = std::move(t_kernel_error);
  t_kernel_error.clear();
  return message;
}

}  // namespace strata::vm
