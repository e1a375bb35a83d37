// Events: markers a queue records and other queues or the host wait on (see
// device.h). Recording takes QueueState::mu then EventState::mu, the one
// nesting of the two; a worker completes the record in device_execution.cc.
#include "vm/devices/sim_npu/device.h"

namespace sim_npu {

int Device::EventCreate(StrataDeviceEvent* out) {
  if (out == nullptr) return Fail(STRATA_DEVICE_ERROR_INVALID_ARGUMENT, "event_create: out_event is NULL");
  auto e = std::make_shared<EventState>();
  std::lock_guard<std::mutex> lock(mu_);
  e->handle = MakeHandle(Kind::kEvent, serial_, next_event_++);
  events_.emplace(e->handle, e);
  *out = e->handle;
  return STRATA_DEVICE_OK;
}

int Device::EventDestroy(StrataDeviceEvent handle) {
  std::lock_guard<std::mutex> lock(mu_);
  std::shared_ptr<EventState> e;
  std::string error;
  if (!FindEvent(handle, &e, &error)) return Fail(STRATA_DEVICE_ERROR_INVALID_ARGUMENT, "event_destroy: " + error);
  events_.erase(handle);  // queued commands hold the state until they have run
  return STRATA_DEVICE_OK;
}

int Device::RecordEvent(StrataDeviceQueue queue, StrataDeviceEvent event) {
  std::shared_ptr<QueueState> q;
  std::shared_ptr<EventState> e;
  if (!LookupQueueAndEvent("queue_record_event", queue, event, &q, &e)) return STRATA_DEVICE_ERROR_INVALID_ARGUMENT;
  std::lock_guard<std::mutex> lock(q->mu);
  if (q->closing)
    return Fail(STRATA_DEVICE_ERROR_INVALID_ARGUMENT, "queue_record_event: " + Describe(queue) + " is being destroyed");
  Command cmd;
  cmd.type = Command::kRecord;
  cmd.seq = ++q->submitted;
  cmd.event = e;
  {
    std::lock_guard<std::mutex> event_lock(e->mu);
    cmd.generation = ++e->recorded;
    e->queue = q;
    e->record_seq = cmd.seq;
  }
  q->commands.push_back(std::move(cmd));
  q->work_cv.notify_one();
  return STRATA_DEVICE_OK;
}

int Device::WaitEvent(StrataDeviceQueue queue, StrataDeviceEvent event) {
  std::shared_ptr<QueueState> q;
  std::shared_ptr<EventState> e;
  if (!LookupQueueAndEvent("queue_wait_event", queue, event, &q, &e)) return STRATA_DEVICE_ERROR_INVALID_ARGUMENT;
  Command cmd;
  cmd.type = Command::kWait;
  {
    std::lock_guard<std::mutex> lock(e->mu);
    cmd.generation = e->recorded;
  }
  if (cmd.generation == 0) return STRATA_DEVICE_OK;  // never recorded: complete, nothing to wait for
  cmd.event = std::move(e);
  if (!Enqueue(*q, std::move(cmd))) {
    return Fail(STRATA_DEVICE_ERROR_INVALID_ARGUMENT, "queue_wait_event: " + Describe(queue) + " is being destroyed");
  }
  return STRATA_DEVICE_OK;
}

int Device::EventWait(StrataDeviceEvent handle) {
  std::shared_ptr<EventState> e;
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::string error;
    if (!FindEvent(handle, &e, &error)) return Fail(STRATA_DEVICE_ERROR_INVALID_ARGUMENT, "event_wait: " + error);
  }
  std::shared_ptr<QueueState> q;
  uint64_t record_seq = 0;
  {
    std::unique_lock<std::mutex> lock(e->mu);
    const uint64_t target = e->recorded;
    q = e->queue.lock();
    record_seq = e->record_seq;
    e->cv.wait(lock, [&] { return e->completed >= target; });
  }
  if (q == nullptr) return STRATA_DEVICE_OK;
  std::string failures;
  {
    std::lock_guard<std::mutex> lock(q->mu);
    failures = TakeErrors(*q, record_seq);
  }
  if (!failures.empty()) return Fail(STRATA_DEVICE_ERROR_EXECUTION, failures);
  return STRATA_DEVICE_OK;
}

int Device::EventQuery(StrataDeviceEvent handle, int32_t* out_complete) {
  if (out_complete == nullptr) return Fail(STRATA_DEVICE_ERROR_INVALID_ARGUMENT, "event_query: out_complete is NULL");
  std::shared_ptr<EventState> e;
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::string error;
    if (!FindEvent(handle, &e, &error)) return Fail(STRATA_DEVICE_ERROR_INVALID_ARGUMENT, "event_query: " + error);
  }
  std::lock_guard<std::mutex> lock(e->mu);
  *out_complete = e->completed >= e->recorded ? 1 : 0;
  return STRATA_DEVICE_OK;
}

}  // namespace sim_npu
