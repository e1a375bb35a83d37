// Scheduler; see scheduler.h.
#include "apps/server/scheduler.h"

#include "apps/server/batching.h"
#include "apps/server/thread_priority.h"
#include "vm/virtual_machine.h"

namespace strata::server {

Scheduler::Scheduler(std::shared_ptr<const vm::Executable> executable, int32_t function_index, int64_t instance_count,
                     int64_t max_queue_size, const DynamicBatching* batching)
    : executable_(std::move(executable)), function_index_(function_index), max_queue_size_(max_queue_size) {
  if (batching != nullptr) batching_ = *batching;
  for (int64_t i = 0; i < instance_count; ++i) workers_.emplace_back([this] { WorkerLoop(); });
}

Scheduler::~Scheduler() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  work_.notify_all();
  for (std::thread& t : workers_) t.join();
}

bool Scheduler::Submit(Job&& job) {
  // Notified under the lock: once the lock is released, the job may be done,
  // its request answered and the last reference to this scheduler dropped
  // (found by ThreadSanitizer: the condition variable destroyed during notify_one).
  std::lock_guard<std::mutex> lock(mutex_);
  if (stopping_ || static_cast<int64_t>(queue_.size()) >= max_queue_size_) return false;
  job.enqueued = std::chrono::steady_clock::now();
  queue_.push_back(std::move(job));
  work_.notify_one();
  return true;
}

int64_t Scheduler::in_flight() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<int64_t>(queue_.size()) + running_;
}

void Scheduler::WorkerLoop() {
  LowerThisThreadsPriority();
  vm::VirtualMachine machine(executable_);
  for (;;) {
    std::vector<Job> batch;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      work_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and every queued request is done
      batch.push_back(std::move(queue_.front()));
      queue_.pop_front();
      ++running_;
      if (batching_) CollectBatch(lock, &batch);
    }
    if (batch.size() == 1) {
      RunOne(machine, batch[0], 1);
    } else {
      RunBatch(machine, batch);
    }
    std::lock_guard<std::mutex> lock(mutex_);
    running_ -= static_cast<int64_t>(batch.size());
  }
}

void Scheduler::CollectBatch(std::unique_lock<std::mutex>& lock, std::vector<Job>* batch) {
  int64_t rows = BatchRows((*batch)[0].args);
  if (rows < 0) return;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(batching_->max_queue_delay_us);
  for (;;) {
    // In arrival order: the first request that does not fit ends the batch.
    while (!queue_.empty() && rows < batching_->max_batch_size) {
      Job& next = queue_.front();
      const int64_t r = BatchRows(next.args);
      if (r < 0 || rows + r > batching_->max_batch_size || !Concatenable((*batch)[0].args, next.args)) return;
      rows += r;
      batch->push_back(std::move(next));
      queue_.pop_front();
      ++running_;
    }
    if (rows >= batching_->max_batch_size || stopping_) return;
    if (work_.wait_until(lock, deadline) == std::cv_status::timeout && queue_.empty()) return;
    if (std::chrono::steady_clock::now() >= deadline && queue_.empty()) return;
  }
}

void Scheduler::RunOne(vm::VirtualMachine& machine, Job& job, int64_t batch_size) {
  const auto start = std::chrono::steady_clock::now();
  JobTimes times;
  times.queue = start - job.enqueued;
  times.batch_size = batch_size;
  if (start > job.deadline) {
    times.timed_out = true;
    job.done(Status(ErrorStatus(StatusCode::kResourceExhausted)
                    << "the request timed out after waiting "
                    << std::chrono::duration_cast<std::chrono::milliseconds>(times.queue).count()
                    << " ms for a free instance"),
             times);
    return;
  }
  times.counts_execution = true;
  StatusOr<vm::Value> result = machine.InvokeFunction(function_index_, job.args);
  job.args.clear();  // inputs (and the request bodies they view) go before the answer is sent
  times.compute = std::chrono::steady_clock::now() - start;
  job.done(std::move(result), times);
}

void Scheduler::RunBatch(vm::VirtualMachine& machine, std::vector<Job>& batch) {
  // Requests whose deadline passed are answered first; the rest run together.
  const auto start = std::chrono::steady_clock::now();
  std::vector<Job*> live;
  for (Job& job : batch) {
    if (start > job.deadline) {
      RunOne(machine, job, 1);  // answers with the timeout, runs nothing
    } else {
      live.push_back(&job);
    }
  }
  if (live.empty()) return;
  if (live.size() == 1) {
    RunOne(machine, *live[0], 1);
    return;
  }
  std::vector<const std::vector<vm::Value>*> args;
  std::vector<int64_t> rows;
  for (Job* job : live) {
    args.push_back(&job->args);
    rows.push_back(BatchRows(job->args));
  }
  StatusOr<std::vector<vm::Value>> joined = ConcatenateArguments(args);
  StatusOr<vm::Value> result = joined.ok() ? machine.InvokeFunction(function_index_, *joined) : joined.status();
  StatusOr<std::vector<vm::Value>> parts = result.ok() ? SplitResult(*result, rows) : result.status();
  const auto compute = std::chrono::steady_clock::now() - start;
  if (!parts.ok()) {
    // One request's input may be what failed: each runs alone and gets its own answer.
    for (Job* job : live) RunOne(machine, *job, 1);
    return;
  }
  for (size_t i = 0; i < live.size(); ++i) {
    JobTimes times;
    times.queue = start - live[i]->enqueued;
    times.compute = compute;
    times.batch_size = static_cast<int64_t>(live.size());
    times.counts_execution = i == 0;
    live[i]->args.clear();
    live[i]->done(std::move((*parts)[i]), times);
  }
}

}  // namespace strata::server
