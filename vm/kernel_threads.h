// How many threads the kernels run on: parallel loops of compiled kernels (the
// caller included, vm/thread_pool.h) and the library kernels the VM calls
// (oneDNN, OpenBLAS). A policy of its own, so that the thread pool and the
// kernel runtime that uses it both read it without depending on each other.
#pragma once

#include "support/status.h"

namespace strata::vm {

// SetKernelThreadCount's count, else STRATA_NUM_THREADS when set, else the CPUs
// this process may run on. Fixed when first read (the thread pool starts then).
int KernelThreadCount();

// Sets the count (1 to 4096) KernelThreadCount() returns (`--threads N`). Call
// it before the first kernel runs: once the count is fixed, a different one is
// an error that names the count in use.
Status SetKernelThreadCount(int threads);

}  // namespace strata::vm
