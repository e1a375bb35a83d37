// ThreadPool: the persistent workers that run the parallel loops of compiled kernels.
//
// One process-wide pool of KernelThreadCount() - 1 workers, created on first use
// and joined at exit. A parallel loop of n iterations is split into at most
// KernelThreadCount() contiguous chunks, which the calling thread and the
// workers claim one at a time: the caller usually runs chunk 0 and the workers
// the rest, but a worker that is not running yet (asleep, or waiting for a core
// on a busy machine) leaves its chunk to the caller instead of making it wait.
// The pool runs one job at a time: a caller that finds it
// busy, and any parallel loop nested inside a chunk, runs its whole range serially
// on its own thread instead of waiting, so no combination of callers can deadlock.
//
// Errors: a chunk reports failure by returning non-zero; a kernel's message
// (set_error) raised while a chunk runs is recorded on the job, first one wins, and
// handed back to the thread that called ParallelFor.
//
// Thread-safety: ParallelFor may be called from any number of threads at once.
#pragma once

#include <cstdint>
#include <string>

#include "abi/kernel_abi.h"

namespace strata::vm {

class ThreadPool {
 public:
  // The process-wide pool, created (workers started) on first call.
  static ThreadPool& Global();

  // Runs body over [0, n) and returns 0 or the first non-zero a chunk returned.
  // When a chunk raised an error message, *out_error receives the first one
  // (otherwise it is left untouched).
  int32_t ParallelFor(int64_t n, StrataParallelBody body, void* closure, std::string* out_error);

  // Records `message` on the job the current thread is running a chunk of and
  // returns true; returns false when the thread is not inside a pool job.
  static bool RecordErrorInCurrentJob(const char* message);

  // Workers plus the calling thread.
  int num_threads() const { return num_workers_ + 1; }

  struct Job;  // one parallel loop in flight; defined in thread_pool.cc

  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

 private:
  class Impl;
  explicit ThreadPool(int num_workers);

  int num_workers_;
  Impl* impl_;
};

}  // namespace strata::vm
