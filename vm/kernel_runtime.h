// The runtime side of the kernel ABI: thread pool, workspace and error channel.
//
// GetKernelRuntimeApi() is the table every loaded kernel module receives.
// A kernel that fails records its message with api->set_error on the calling
// thread; the VM then takes it with TakeKernelError() to build its Status.
#pragma once

#include <string>

#include "abi/kernel_abi.h"
#include "support/status.h"

namespace strata::vm {

const StrataRuntimeApi* GetKernelRuntimeApi();

// The message the last failing kernel on this thread recorded, cleared on read.
std::string TakeKernelError();

// Threads used by parallel loops (the caller included), and by the library
// kernels (oneDNN, OpenBLAS) the VM calls: SetKernelThreadCount's count, else
// STRATA_NUM_THREADS when set, else the CPUs this process may run on. Fixed
// when first read (the thread pool starts then).
int KernelThreadCount();

// Sets the count (1 to 4096) KernelThreadCount() returns (`--threads N`). Call
// it before the first kernel runs: once the count is fixed, a different one is
// an error that names the count in use.
Status SetKernelThreadCount(int threads);

}  // namespace strata::vm
