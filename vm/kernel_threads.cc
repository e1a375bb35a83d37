// The number of threads kernels run on (see kernel_threads.h).
#include "vm/kernel_threads.h"

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <sched.h>
#include <thread>

namespace strata::vm {
namespace {

constexpr int kMaxKernelThreads = 4096;

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
