// The StrataRuntimeApi table handed to every loaded kernel module.
//
// Kernels reach the runtime only through this table (kernel_abi.h), so the kernel
// shared objects need no symbols from the process and the runtime exports none.
// Nothing here may depend on LLVM or the compiler.
#include "vm/kernel_runtime.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <sched.h>
#include <string>
#include <thread>

#include "vm/thread_pool.h"

namespace strata::vm {
namespace {

constexpr int kMaxKernelThreads = 4096;

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

void* AllocWorkspace(int64_t bytes) {
  if (bytes < 0 || bytes > kMaxWorkspaceBytes) {
    SetError(("alloc_workspace: invalid size " + std::to_string(bytes) + " bytes").c_str());
    return nullptr;
  }
  // aligned_alloc wants a multiple of the alignment; 0 bytes still gets a block so
  // that NULL always means failure.
  int64_t rounded = (std::max<int64_t>(bytes, 1) + kWorkspaceAlignment - 1) / kWorkspaceAlignment * kWorkspaceAlignment;
  void* ptr = std::aligned_alloc(kWorkspaceAlignment, static_cast<size_t>(rounded));
  if (ptr == nullptr) {
    SetError(("alloc_workspace: out of memory allocating " + std::to_string(bytes) + " bytes").c_str());
  }
  return ptr;
}

void FreeWorkspace(void* ptr) { std::free(ptr); }

const StrataRuntimeApi kRuntimeApi = {
    STRATA_KERNEL_ABI_VERSION, &ParallelFor, &SetError, &AllocWorkspace, &FreeWorkspace,
};

// SetKernelThreadCount's request (0: none), and whether the count is fixed.
std::atomic<int> g_requested_threads{0};
std::atomic<bool> g_threads_fixed{false};

int ComputeKernelThreadCount() {
  g_threads_fixed.store(true);
  if (const int requested = g_requested_threads.load(); requested > 0) return requested;
  if (const char* env = std::getenv("STRATA_NUM_THREADS")) {
    char* end = nullptr;
    errno = 0;
    long value = std::strtol(env, &end, 10);
    if (errno == 0 && end != env && *end == '\0' && value >= 1 && value <= kMaxKernelThreads) {
      return static_cast<int>(value);
    }
  }
  // The CPUs this process may run on (a container's cpuset), not all of the machine's.
  cpu_set_t cpus;
  if (sched_getaffinity(0, sizeof(cpus), &cpus) == 0 && CPU_COUNT(&cpus) > 0) return CPU_COUNT(&cpus);
  unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(hw);
}

}  // namespace

const StrataRuntimeApi* GetKernelRuntimeApi() { return &kRuntimeApi; }

std::string TakeKernelError() {
  std::string message = std::move(t_kernel_error);
  t_kernel_error.clear();
  return message;
}

int KernelThreadCount() {
  static const int count = ComputeKernelThreadCount();
  return count;
}

Status SetKernelThreadCount(int threads) {
  if (threads < 1 || threads > kMaxKernelThreads) {
    return ErrorStatus() << "the thread count must be between 1 and " << kMaxKernelThreads << ", got " << threads;
  }
  g_requested_threads.store(threads);
  if (g_threads_fixed.load() && KernelThreadCount() != threads) {
    return ErrorStatus() << "cannot use " << threads << " threads: kernels already run on " << KernelThreadCount()
                         << " (set the count before the first kernel runs)";
  }
  return Status::Ok();
}

}  // namespace strata::vm
