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

}  // namespace

const StrataRuntimeApi* GetKernelRuntimeApi() { return &kRuntimeApi; }

std::string TakeKernelError() {
  std::string message = std::move(t_kernel_error);
  t_kernel_error.clear();
  return message;
}

}  // namespace strata::vm
