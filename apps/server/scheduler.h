// Scheduler: runs one model version's requests on a pool of VMs.
//
// Requests wait in a bounded FIFO queue (Submit fails when it is full: the
// server answers 503); `instance_count` worker threads, each with its own
// VirtualMachine over the shared Executable, take them in order. A request
// whose deadline passed while it waited is answered without running. The
// completion callback runs on the worker thread.
//
// With dynamic batching, a worker that takes a request also takes the
// requests behind it that can be concatenated with it (batching.h), up to
// max_batch_size rows, waiting at most max_queue_delay_us for more; the batch
// runs once. When a batch fails, its requests run one by one, so that one
// request's bad input fails only that request.
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
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "apps/server/model_config.h"
#include "support/status.h"
#include "vm/executable.h"
#include "vm/value.h"

namespace strata::vm {
class VirtualMachine;
}

namespace strata::server {

// How a job went, besides its result.
struct JobTimes {
  std::chrono::nanoseconds queue{0};    // waiting for a VM
  std::chrono::nanoseconds compute{0};  // running
  bool timed_out = false;               // its deadline passed before it ran (the result is an error)
  int64_t batch_size = 1;               // requests in the run it was part of
  bool counts_execution = false;        // the first request of the run (statistics count runs)
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
  // `batching`: null for none; the caller checked that the function batches (CheckBatchable).
  Scheduler(std::shared_ptr<const vm::Executable> executable, int32_t function_index, int64_t instance_count,
            int64_t max_queue_size, const DynamicBatching* batching = nullptr);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Queues `job`; false (and `job` untouched) when the queue is full or shutting down.
  bool Submit(Job&& job);
  // Requests queued or running.
  int64_t in_flight() const;

 private:
  void WorkerLoop();
  // Takes the queued requests that batch with `first` (mutex_ held by `lock`).
  void CollectBatch(std::unique_lock<std::mutex>& lock, std::vector<Job>* batch);
  void RunOne(vm::VirtualMachine& machine, Job& job, int64_t batch_size);
  void RunBatch(vm::VirtualMachine& machine, std::vector<Job>& batch);

  std::shared_ptr<const vm::Executable> executable_;
  int32_t function_index_;
  int64_t max_queue_size_;
  std::optional<DynamicBatching> batching_;
  mutable std::mutex mutex_;
  std::condition_variable work_;
  std::deque<Job> queue_;
  int64_t running_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace strata::server
