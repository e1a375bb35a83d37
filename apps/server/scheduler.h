// Scheduler: runs one model version's requests on a pool of VMs.
//
// Requests wait in a bounded FIFO queue (Submit fails when it is full: the
// server answers 503); `instance_count` worker threads, each with its own
// VirtualMachine over the shared Executable, take them in order. A request
// whose deadline passed while it waited is answered without running. The
// completion callback runs on the worker thread.
//
// Shutdown (the destructor): the queue stops taking requests, the workers
// finish every request already queued, then exit; nothing accepted is dropped.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "support/status.h"
#include "vm/executable.h"
#include "vm/value.h"

namespace strata::server {

// How a job went, besides its result.
struct JobTimes {
  std::chrono::nanoseconds queue{0};    // waiting for a VM
  std::chrono::nanoseconds compute{0};  // running
  bool timed_out = false;               // its deadline passed before it ran (the result is an error)
};

struct Job {
  std::vector<vm::Value> args;
  std::chrono::steady_clock::time_point deadline;
  std::chrono::steady_clock::time_point enqueued;
  // Called exactly once, on a worker thread: the function's result or its error.
  std::function<void(StatusOr<vm::Value> result, const JobTimes& times)> done;
};

class Scheduler {
 public:
  Scheduler(std::shared_ptr<const vm::Executable> executable, int32_t function_index, int64_t instance_count,
            int64_t max_queue_size);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Queues `job`; false (and `job` untouched) when the queue is full or shutting down.
  bool Submit(Job&& job);
  // Requests queued or running.
  int64_t in_flight() const;

 private:
  void WorkerLoop();

  std::shared_ptr<const vm::Executable> executable_;
  int32_t function_index_;
  int64_t max_queue_size_;
  mutable std::mutex mutex_;
  std::condition_variable work_;
  std::deque<Job> queue_;
  int64_t running_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace strata::server
