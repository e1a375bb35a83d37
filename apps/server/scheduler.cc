// Scheduler; see scheduler.h.
#include "apps/server/scheduler.h"

#include "vm/virtual_machine.h"

namespace strata::server {

Scheduler::Scheduler(std::shared_ptr<const vm::Executable> executable, int32_t function_index, int64_t instance_count,
                     int64_t max_queue_size)
    : executable_(std::move(executable)), function_index_(function_index), max_queue_size_(max_queue_size) {
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
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_ || static_cast<int64_t>(queue_.size()) >= max_queue_size_) return false;
    job.enqueued = std::chrono::steady_clock::now();
    queue_.push_back(std::move(job));
  }
  work_.notify_one();
  return true;
}

int64_t Scheduler::in_flight() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<int64_t>(queue_.size()) + running_;
}

void Scheduler::WorkerLoop() {
  vm::VirtualMachine machine(executable_);
  for (;;) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      work_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and every queued request is done
      job = std::move(queue_.front());
      queue_.pop_front();
      ++running_;
    }
    const auto start = std::chrono::steady_clock::now();
    JobTimes times;
    times.queue = start - job.enqueued;
    if (start > job.deadline) {
      times.timed_out = true;
      job.done(Status(ErrorStatus(StatusCode::kResourceExhausted)
                      << "the request timed out after waiting "
                      << std::chrono::duration_cast<std::chrono::milliseconds>(times.queue).count()
                      << " ms for a free instance"),
               times);
    } else {
      StatusOr<vm::Value> result = machine.InvokeFunction(function_index_, job.args);
      job.args.clear();  // inputs (and the request bodies they view) go before the answer is sent
      times.compute = std::chrono::steady_clock::now() - start;
      job.done(std::move(result), times);
    }
    std::lock_guard<std::mutex> lock(mutex_);
    --running_;
  }
}

}  // namespace strata::server
