// Queues from the host's side: creating and stopping their workers, checking and
// submitting copies, frees and launches, and synchronizing, which is where a
// failed command's error reaches the caller (see device.h). What a worker does
// with a command is device_execution.cc's.
#include <system_error>

#include "vm/devices/sim_npu/device.h"

namespace sim_npu {

int Device::QueueCreate(StrataDeviceQueue* out) {
  if (out == nullptr) return Fail(STRATA_DEVICE_ERROR_INVALID_ARGUMENT, "queue_create: out_queue is NULL");
  auto q = std::make_shared<QueueState>();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (queues_.size() >= config_.max_queues) {
      return Fail(STRATA_DEVICE_ERROR_UNSUPPORTED, "queue_create: the device already has " +
                                                       std::to_string(queues_.size()) +
                                                       " queues, its maximum (option max_queues)");
    }
    q->handle = MakeHandle(Kind::kQueue, serial_, next_queue_++);
    queues_.emplace(q->handle, q);
  }
  try {
    // The queue outlives its worker: StopQueue joins it while holding a reference.
    q->worker = std::thread([this, raw = q.get()] { WorkerLoop(*raw); });
  } catch (const std::system_error& e) {
    std::lock_guard<std::mutex> lock(mu_);
    queues_.erase(q->handle);
    return Fail(STRATA_DEVICE_ERROR_INTERNAL,
                std::string("queue_create: cannot start the queue's thread: ") + e.what());
  }
  *out = q->handle;
  return STRATA_DEVICE_OK;
}

int Device::QueueDestroy(StrataDeviceQueue handle) {
  std::shared_ptr<QueueState> q;
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::string error;
    if (!FindQueue(handle, &q, &error)) return Fail(STRATA_DEVICE_ERROR_INVALID_ARGUMENT, "queue_destroy: " + error);
    queues_.erase(handle);
  }
  StopQueue(*q);
  std::string unreported;
  {
    std::lock_guard<std::mutex> lock(q->mu);
    unreported = TakeErrors(*q, UINT64_MAX);
  }
  if (!unreported.empty()) {
    return Fail(STRATA_DEVICE_ERROR_EXECUTION,
                "queue_destroy: " + Describe(handle) + " had failures no call reported: " + unreported);
  }
  return STRATA_DEVICE_OK;
}

int Device::CopyHostToDevice(StrataDeviceQueue queue, const void* src, StrataDeviceBuffer dst, uint64_t dst_offset,
                             uint64_t size) {
  const char* fn = "queue_copy_host_to_device";
  if (src == nullptr && size > 0)
    return Fail(STRATA_DEVICE_ERROR_INVALID_ARGUMENT, std::string(fn) + ": host_src is NULL");
  Command cmd;
  cmd.type = Command::kCopyH2D;
  cmd.host_src = src;
  cmd.dst = dst;
  cmd.dst_offset = dst_offset;
  cmd.size = size;
  return SubmitChecked(fn, queue, std::move(cmd), {{dst, dst_offset, size, "destination", ""}});
}

int Device::CopyDeviceToHost(StrataDeviceQueue queue, StrataDeviceBuffer src, uint64_t src_offset, void* dst,
                             uint64_t size) {
  const char* fn = "queue_copy_device_to_host";
  if (dst == nullptr && size > 0)
    return Fail(STRATA_DEVICE_ERROR_INVALID_ARGUMENT, std::string(fn) + ": host_dst is NULL");
  Command cmd;
  cmd.type = Command::kCopyD2H;
  cmd.host_dst = dst;
  cmd.src = src;
  cmd.src_offset = src_offset;
  cmd.size = size;
  return SubmitChecked(fn, queue, std::move(cmd), {{src, src_offset, size, "source", ""}});
}

int Device::CopyDeviceToDevice(StrataDeviceQueue queue, StrataDeviceBuffer src, uint64_t src_offset,
                               StrataDeviceBuffer dst, uint64_t dst_offset, uint64_t size) {
  const char* fn = "queue_copy_device_to_device";
  // Ranges that overflow are refused by the bounds check below; only compare those that fit.
  const bool fit = size <= UINT64_MAX - src_offset && size <= UINT64_MAX - dst_offset;
  if (src == dst && size > 0 && fit && src_offset < dst_offset + size && dst_offset < src_offset + size) {
    return Fail(STRATA_DEVICE_ERROR_INVALID_ARGUMENT,
                std::string(fn) + ": source bytes " + ByteRange(src_offset, size) + " and destination bytes " +
                    ByteRange(dst_offset, size) + " of " + Describe(src) + " overlap");
  }
  Command cmd;
  cmd.type = Command::kCopyD2D;
  cmd.src = src;
  cmd.src_offset = src_offset;
  cmd.dst = dst;
  cmd.dst_offset = dst_offset;
  cmd.size = size;
  return SubmitChecked(fn, queue, std::move(cmd),
                       {{src, src_offset, size, "source", ""}, {dst, dst_offset, size, "destination", ""}});
}

int Device::QueueFreeBuffer(StrataDeviceQueue queue, StrataDeviceBuffer buffer) {
  std::shared_ptr<QueueState> q;
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::string error;
    Buffer* b = nullptr;
    if (!FindQueue(queue, &q, &error) || !FindBuffer(buffer, true, &b, &error)) {
      return Fail(STRATA_DEVICE_ERROR_INVALID_ARGUMENT, "queue_free_buffer: " + error);
    }
    b->free_queued = true;  // under mu_, so that no submission naming it slips in after this
  }
  Command cmd;
  cmd.type = Command::kFree;
  cmd.dst = buffer;
  if (Enqueue(*q, std::move(cmd))) return STRATA_DEVICE_OK;
  std::lock_guard<std::mutex> lock(mu_);  // the queue is closing: the buffer stays allocated
  auto it = buffers_.find(buffer);
  if (it != buffers_.end()) it->second.free_queued = false;
  return Fail(STRATA_DEVICE_ERROR_INVALID_ARGUMENT, "queue_free_buffer: " + Describe(queue) + " is being destroyed");
}

int Device::QueueSynchronize(StrataDeviceQueue handle) {
  std::shared_ptr<QueueState> q;
  if (!LookupQueue("queue_synchronize", handle, &q)) return STRATA_DEVICE_ERROR_INVALID_ARGUMENT;
  std::string failures;
  {
    std::unique_lock<std::mutex> lock(q->mu);
    const uint64_t target = q->submitted;
    q->done_cv.wait(lock, [&] { return q->completed >= target; });
    failures = TakeErrors(*q, target + 1);
  }
  if (!failures.empty()) return Fail(STRATA_DEVICE_ERROR_EXECUTION, failures);
  return STRATA_DEVICE_OK;
}

int Device::Synchronize() {
  std::string first;
  uint64_t failures = 0;
  for (const std::shared_ptr<QueueState>& q : QueueSnapshot()) {
    std::unique_lock<std::mutex> lock(q->mu);
    const uint64_t target = q->submitted;
    q->done_cv.wait(lock, [&] { return q->completed >= target; });
    CollectErrors(*q, target + 1, &first, &failures);
  }
  if (failures > 0) return Fail(STRATA_DEVICE_ERROR_EXECUTION, WithCount(first, failures));
  return STRATA_DEVICE_OK;
}

std::string Device::Shutdown() {
  std::vector<std::shared_ptr<QueueState>> queues;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [handle, q] : queues_) queues.push_back(q);
    queues_.clear();
    events_.clear();
  }
  std::string first;
  uint64_t failures = 0;
  for (const std::shared_ptr<QueueState>& q : queues) {
    StopQueue(*q);
    std::lock_guard<std::mutex> lock(q->mu);
    CollectErrors(*q, UINT64_MAX, &first, &failures);
  }
  return failures > 0 ? WithCount(first, failures) : std::string();
}

// ---- submission ----

int Device::SubmitChecked(const char* fn, StrataDeviceQueue queue, Command cmd, const std::vector<BufferUse>& uses) {
  std::shared_ptr<QueueState> q;
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::string error;
    if (!FindQueue(queue, &q, &error))
      return Fail(STRATA_DEVICE_ERROR_INVALID_ARGUMENT, std::string(fn) + ": " + error);
    for (const BufferUse& use : uses) {
      const std::string where = use.role != nullptr ? std::string(fn) + ": " + use.role : use.where;
      Buffer* b = nullptr;
      if (!FindBuffer(use.buffer, true, &b, &error)) {
        return Fail(STRATA_DEVICE_ERROR_INVALID_ARGUMENT, where + ": " + error);
      }
      if (use.offset > b->size || use.size > b->size - use.offset) {
        return Fail(STRATA_DEVICE_ERROR_INVALID_ARGUMENT, where + ": bytes " + ByteRange(use.offset, use.size) +
                                                              " are outside " + Describe(use.buffer) + " of " +
                                                              std::to_string(b->size) + " bytes");
      }
    }
  }
  if (config_.debug_fail_command != 0 && accepted_work_.fetch_add(1) + 1 == config_.debug_fail_command) {
    cmd.inject_failure = true;
  }
  if (!Enqueue(*q, std::move(cmd))) {
    return Fail(STRATA_DEVICE_ERROR_INVALID_ARGUMENT, std::string(fn) + ": " + Describe(queue) + " is being destroyed");
  }
  return STRATA_DEVICE_OK;
}

bool Device::Enqueue(QueueState& q, Command cmd) {
  std::lock_guard<std::mutex> lock(q.mu);
  if (q.closing) return false;
  cmd.seq = ++q.submitted;
  q.commands.push_back(std::move(cmd));
  q.work_cv.notify_one();
  return true;
}

void Device::StopQueue(QueueState& q) {
  {
    std::lock_guard<std::mutex> lock(q.mu);
    q.closing = true;
    q.work_cv.notify_one();
  }
  if (q.worker.joinable()) q.worker.join();
}

// ---- failures ----

void Device::CollectErrors(QueueState& q, uint64_t before, std::string* first, uint64_t* count) {
  auto it = q.errors.begin();
  for (; it != q.errors.end() && it->seq < before; ++it) {
    if (first->empty()) *first = it->message;
    *count += 1 + it->more;
  }
  q.errors.erase(q.errors.begin(), it);
}

std::string Device::WithCount(const std::string& first, uint64_t count) {
  if (count <= 1) return first;
  return first + " (and " + std::to_string(count - 1) + " more failed command" + (count > 2 ? "s" : "") + ")";
}

std::string Device::TakeErrors(QueueState& q, uint64_t before) {
  std::string first;
  uint64_t count = 0;
  CollectErrors(q, before, &first, &count);
  return count > 0 ? WithCount(first, count) : std::string();
}

}  // namespace sim_npu
