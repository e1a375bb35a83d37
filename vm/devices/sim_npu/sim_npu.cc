// The simulated NPU: a device plug-in built exactly as a vendor driver would be
// (vm/device_plugin.h is all it knows of Strata). Device memory is an arena the
// host never sees a pointer into; each queue is a worker thread that runs its
// commands in order; kernels compute real f32 results (kernels.cc) and the cost
// model (config.h) says how long they would take on the device.
//
// Locks, and the only ways they nest: QueueState::mu -> EventState::mu
// (recording an event), QueueState::mu -> Device::counters_mu_ (a command's
// accounting), and errors_mu_ innermost under any of them (recording a
// failure). Device::mu_ (buffers, arena, handle tables) takes nothing but
// errors_mu_. Kernels and copies run with no lock held.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <sys/mman.h>

#include "vm/device_plugin.h"
#include "vm/devices/sim_npu/arena.h"
#include "vm/devices/sim_npu/config.h"
#include "vm/devices/sim_npu/kernels.h"

namespace sim_npu {
namespace {

constexpr char kPluginName[] = "sim_npu";
constexpr char kPluginVersion[] = "1.0";
constexpr char kVendor[] = "Strata (simulated)";
// Tensor dimensions beyond this are refused at submission, which keeps every
// index computation of the kernels far from overflow.
constexpr int64_t kMaxDim = int64_t{1} << 40;
constexpr int32_t kMaxArgs = 64;
// Failed commands kept per queue until reported; later ones are only counted.
constexpr size_t kMaxPendingErrors = 32;

// ---- handles ------------------------------------------------------------------
// kind (8 bits) | device serial (16 bits) | counter (40 bits). The kind catches a
// queue passed as a buffer, the serial a handle of another device, and counters
// are never reused, so a stale handle never reaches a newer object.

enum class Kind : uint64_t { kBuffer = 1, kQueue = 2, kEvent = 3, kKernel = 4 };
constexpr uint64_t kCounterBits = 40;
constexpr uint64_t kCounterMask = (uint64_t{1} << kCounterBits) - 1;

uint64_t MakeHandle(Kind kind, uint16_t serial, uint64_t counter) {
  return static_cast<uint64_t>(kind) << 56 | uint64_t{serial} << kCounterBits | counter;
}
uint64_t KindBits(uint64_t h) { return h >> 56; }
uint16_t SerialOf(uint64_t h) { return static_cast<uint16_t>(h >> kCounterBits); }
uint64_t CounterOf(uint64_t h) { return h & kCounterMask; }

const char* KindName(uint64_t bits) {
  switch (bits) {
    case 1: return "buffer";
    case 2: return "queue";
    case 3: return "event";
    case 4: return "kernel";
    default: return nullptr;
  }
}

std::string Hex(uint64_t v) {
  char text[32];
  std::snprintf(text, sizeof(text), "0x%016llx", static_cast<unsigned long long>(v));
  return text;
}

// "buffer #5" for a well-formed handle, the hex value otherwise.
std::string Describe(uint64_t h) {
  const char* name = KindName(KindBits(h));
  if (name == nullptr || CounterOf(h) == 0) return "handle " + Hex(h);
  return std::string(name) + " #" + std::to_string(CounterOf(h));
}

// [offset, offset + size), with the sum left unevaluated when it overflows (a
// hostile caller's range must print as it was given, not wrapped around).
std::string ByteRange(uint64_t offset, uint64_t size) {
  // Appended piece by piece: GCC 12 warns (-Wrestrict, falsely) about "[" + std::string.
  std::string text = "[";
  text += std::to_string(offset);
  text += ", ";
  if (size <= UINT64_MAX - offset) {
    text += std::to_string(offset + size);
  } else {
    text += std::to_string(offset);
    text += " + ";
    text += std::to_string(size);
  }
  text += ")";
  return text;
}

// ---- device state ---------------------------------------------------------------

struct Buffer {
  uint64_t offset = 0;       // in the arena
  uint64_t size = 0;         // as allocated
  uint64_t reserved = 0;     // rounded up to the alignment
  uint32_t pins = 0;         // commands running on it right now
  bool freed = false;        // released while pinned: gone for everyone, memory returned at the last unpin
  bool free_queued = false;  // queue_free_buffer submitted: no new submissions may name it
};

struct Totals {
  uint64_t busy_ns = 0, kernel_ns = 0, copy_ns = 0, kernel_launches = 0;
  uint64_t h2d_copies = 0, h2d_bytes = 0, d2h_copies = 0, d2h_bytes = 0, d2d_copies = 0, d2d_bytes = 0;
  uint64_t failed_commands = 0;
};

struct PendingError {
  uint64_t seq;
  std::string message;
  uint64_t more = 0;  // failures after it that did not fit in the list
};

struct QueueState;

struct EventState {
  uint64_t handle = 0;
  std::mutex mu;
  std::condition_variable cv;
  uint64_t recorded = 0;            // generation of the latest record submitted
  uint64_t completed = 0;           // the highest generation completed
  uint64_t timestamp_ns = 0;        // the recording queue's clock when `completed` completed
  std::weak_ptr<QueueState> queue;  // of the latest record
  uint64_t record_seq = 0;          // that record's command number on its queue
};

struct Command {
  enum Type { kCopyH2D, kCopyD2H, kCopyD2D, kLaunch, kFree, kRecord, kWait } type = kCopyH2D;
  uint64_t seq = 0;
  const void* host_src = nullptr;
  void* host_dst = nullptr;
  uint64_t src = 0, src_offset = 0, dst = 0, dst_offset = 0, size = 0;  // copies; dst is also kFree's buffer
  const KernelDef* kernel = nullptr;
  std::vector<Arg> args;
  std::shared_ptr<EventState> event;
  uint64_t generation = 0;
  bool inject_failure = false;  // option debug_fail_command chose this one
};

struct QueueState {
  uint64_t handle = 0;
  std::mutex mu;
  std::condition_variable work_cv;  // commands arrived, or closing
  std::condition_variable done_cv;  // `completed` advanced
  std::deque<Command> commands;
  uint64_t submitted = 0;  // commands are numbered 1, 2, ... in submission order
  uint64_t completed = 0;
  bool closing = false;  // set by queue_destroy / device_close: no more submissions
  std::vector<PendingError> errors;
  Totals totals;
  uint64_t clock_ns = 0;  // simulated timeline
  std::thread worker;
};

// The result of running one command, for its queue's accounting.
struct Outcome {
  std::string error;
  uint64_t cost_ns = 0;
  uint64_t wait_until_ns = 0;  // kWait: the event's timestamp
};

class Device;

// Open devices, so that a stale or foreign StrataDevice* is an error, not a crash.
std::mutex& RegistryMutex() {
  static std::mutex* mu = new std::mutex();  // never destroyed: used until the process ends
  return *mu;
}
std::unordered_set<const void*>& Registry() {
  static auto* devices = new std::unordered_set<const void*>();
  return *devices;
}
std::atomic<uint16_t> next_serial{1};

// Errors of calls without a (valid) device: last_error(NULL).
thread_local std::string t_global_error;

int GlobalFail(int code, std::string message) {
  t_global_error = std::move(message);
  return code;
}

class Device {
 public:
  Device(const Config& config, uint16_t serial, uint8_t* memory)
      : config_(config),
        cost_(config_),
        serial_(serial),
        memory_(memory),
        arena_(config.memory_bytes, config.alignment) {
    for (const KernelDef& k : Kernels()) kernel_names_.push_back(k.name);
  }

  ~Device() { munmap(memory_, config_.memory_bytes); }

  int Fail(int code, std::string message) {
    std::lock_guard<std::mutex> lock(errors_mu_);
    errors_[std::this_thread::get_id()] = std::move(message);
    return code;
  }

  const char* LastError() {
    std::lock_guard<std::mutex> lock(errors_mu_);
    auto it = errors_.find(std::this_thread::get_id());
    // The string's storage stays put while other threads insert theirs (node-based map).
    return it == errors_.end() ? "" : it->second.c_str();
  }

  int GetProperties(StrataDeviceProperties* out) {
    if (out == nullptr)
      return Fail(STRATA_DEVICE_ERROR_INVALID_ARGUMENT, "device_get_properties: out_properties is NULL");
    if (out->struct_size < sizeof(StrataDeviceProperties)) {
      return Fail(STRATA_DEVICE_ERROR_INVALID_ARGUMENT, "device_get_properties: struct_size " +
                                                            std::to_string(out->struct_size) +
                                                            " is smaller than the version-1 StrataDeviceProperties (" +
                                                            std::to_string(sizeof(StrataDeviceProperties)) + " bytes)");
    }
    StrataDeviceProperties p{};
    p.struct_size = sizeof(p);
    p.max_queues = config_.max_queues;
    p.name = kPluginName;
    p.vendor = kVendor;
    p.total_memory_bytes = config_.memory_bytes;
    p.alignment = config_.alignment;
    p.kernel_names = kernel_names_.data();
    p.num_kernels = static_cast<uint32_t>(kernel_names_.size());
    std::memcpy(out, &p, sizeof(p));
    return STRATA_DEVICE_OK;
  }

  // ---- memory ----

  int Allocate(uint64_t size, StrataDeviceBuffer* out) {
    if (out == nullptr) return Fail(STRATA_DEVICE_ERROR_INVALID_ARGUMENT, "buffer_allocate: out_buffer is NULL");
    std::unique_lock<std::mutex> lock(mu_);
    uint64_t offset = 0, reserved = 0;
    if (!arena_.Allocate(size, &offset, &reserved)) {
      const std::string message = "buffer_allocate: out of device memory: requested " + std::to_string(size) +
                                  " bytes, largest free block " + std::to_string(arena_.largest_free_block()) + " of " +
                                  std::to_string(arena_.free_bytes()) + " bytes free (device memory " +
                                  std::to_string(arena_.capacity()) + " bytes)";
      lock.unlock();
      return Fail(STRATA_DEVICE_ERROR_OUT_OF_MEMORY, message);
    }
    if (next_buffer_ > kCounterMask) {
      arena_.Release(offset, reserved);
      lock.unlock();
      return Fail(STRATA_DEVICE_ERROR_UNSUPPORTED, "buffer_allocate: the device ran out of buffer handles");
    }
    const uint64_t handle = MakeHandle(Kind::kBuffer, serial_, next_buffer_++);
    buffers_.emplace(handle, Buffer{offset, size, reserved});
    in_use_ += reserved;
    peak_ = std::max(peak_, in_use_);
    *out = handle;
    return STRATA_DEVICE_OK;
  }

  int Free(StrataDeviceBuffer handle) {
    std::unique_lock<std::mutex> lock(mu_);
    Buffer* b = nullptr;
    std::string error;
    if (!FindBuffer(handle, /*for_submission=*/false, &b, &error)) {
      lock.unlock();
      return Fail(STRATA_DEVICE_ERROR_INVALID_ARGUMENT, "buffer_free: " + error);
    }
    ReleaseLocked(handle, b);
    return STRATA_DEVICE_OK;
  }

  int GetSize(StrataDeviceBuffer handle, uint64_t* out) {
    if (out == nullptr) return Fail(STRATA_DEVICE_ERROR_INVALID_ARGUMENT, "buffer_get_size: out_size_bytes is NULL");
    std::unique_lock<std::mutex> lock(mu_);
    Buffer* b = nullptr;
    std::string error;
    if (!FindBuffer(handle, false, &b, &error)) {
      lock.unlock();
      return Fail(STRATA_DEVICE_ERROR_INVALID_ARGUMENT, "buffer_get_size: " + error);
    }
    *out = b->size;
    return STRATA_DEVICE_OK;
  }

  int KernelLookup(const char* name, StrataDeviceKernel* out) {
    if (name == nullptr || out == nullptr) {
      return Fail(STRATA_DEVICE_ERROR_INVALID_ARGUMENT, "kernel_lookup: name and out_kernel must not be NULL");
    }
    const std::vector<KernelDef>& kernels = Kernels();
    for (size_t i = 0; i < kernels.size(); ++i) {
      if (std::strcmp(kernels[i].name, name) == 0) {
        *out = MakeHandle(Kind::kKernel, serial_, i + 1);
        return STRATA_DEVICE_OK;
      }
    }
    std::string known;
    for (const KernelDef& k : kernels) known += (known.empty() ? "" : ", ") + std::string(k.name);
    return Fail(STRATA_DEVICE_ERROR_NOT_FOUND,
                "kernel_lookup: sim_npu has no kernel '" + std::string(name) + "' (it has " + known + ")");
  }

  // ---- queues ----

  int QueueCreate(StrataDeviceQueue* out) {
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

  int QueueDestroy(StrataDeviceQueue handle) {
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

  int CopyHostToDevice(StrataDeviceQueue queue, const void* src, StrataDeviceBuffer dst, uint64_t dst_offset,
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

  int CopyDeviceToHost(StrataDeviceQueue queue, StrataDeviceBuffer src, uint64_t src_offset, void* dst, uint64_t size) {
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

  int CopyDeviceToDevice(StrataDeviceQueue queue, StrataDeviceBuffer src, uint64_t src_offset, StrataDeviceBuffer dst,
                         uint64_t dst_offset, uint64_t size) {
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

  int Launch(StrataDeviceQueue queue, StrataDeviceKernel kernel, const StrataDeviceArg* args, int32_t num_args) {
    const std::vector<KernelDef>& kernels = Kernels();
    const uint64_t index = CounterOf(kernel);
    if (KindBits(kernel) != static_cast<uint64_t>(Kind::kKernel) || SerialOf(kernel) != serial_ || index == 0 ||
        index > kernels.size()) {
      return Fail(STRATA_DEVICE_ERROR_INVALID_ARGUMENT,
                  "queue_launch: " + Describe(kernel) + " is not a kernel of this device (use kernel_lookup)");
    }
    const KernelDef& def = kernels[index - 1];
    const std::string fn = "queue_launch(" + std::string(def.name) + ")";
    if (num_args < 0 || num_args > kMaxArgs || (num_args > 0 && args == nullptr)) {
      return Fail(STRATA_DEVICE_ERROR_INVALID_ARGUMENT,
                  fn + ": " + std::to_string(num_args) + " arguments at " + Hex(reinterpret_cast<uintptr_t>(args)) +
                      " (expected 0 to " + std::to_string(kMaxArgs) + " entries, args not NULL)");
    }
    Command cmd;
    cmd.type = Command::kLaunch;
    cmd.kernel = &def;
    cmd.args.resize(static_cast<size_t>(num_args));
    std::vector<BufferUse> uses;
    for (int32_t i = 0; i < num_args; ++i) {
      const std::string where =
          fn + ": argument #" + std::to_string(i) +
          (static_cast<size_t>(i) < def.params.size() ? " '" + std::string(def.params[i].name) + "'" : "");
      std::string error;
      if (!CopyArg(args[i], &cmd.args[i], &error))
        return Fail(STRATA_DEVICE_ERROR_INVALID_ARGUMENT, where + ": " + error);
      const Arg& a = cmd.args[i];
      if (a.kind == STRATA_DEVICE_ARG_BUFFER) uses.push_back({a.buffer, a.byte_offset, a.bytes, nullptr, where});
    }
    return SubmitChecked(fn.c_str(), queue, std::move(cmd), uses);
  }

  int QueueFreeBuffer(StrataDeviceQueue queue, StrataDeviceBuffer buffer) {
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

  int QueueSynchronize(StrataDeviceQueue handle) {
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

  // ---- events ----

  int EventCreate(StrataDeviceEvent* out) {
    if (out == nullptr) return Fail(STRATA_DEVICE_ERROR_INVALID_ARGUMENT, "event_create: out_event is NULL");
    auto e = std::make_shared<EventState>();
    std::lock_guard<std::mutex> lock(mu_);
    e->handle = MakeHandle(Kind::kEvent, serial_, next_event_++);
    events_.emplace(e->handle, e);
    *out = e->handle;
    return STRATA_DEVICE_OK;
  }

  int EventDestroy(StrataDeviceEvent handle) {
    std::lock_guard<std::mutex> lock(mu_);
    std::shared_ptr<EventState> e;
    std::string error;
    if (!FindEvent(handle, &e, &error)) return Fail(STRATA_DEVICE_ERROR_INVALID_ARGUMENT, "event_destroy: " + error);
    events_.erase(handle);  // queued commands hold the state until they have run
    return STRATA_DEVICE_OK;
  }

  int RecordEvent(StrataDeviceQueue queue, StrataDeviceEvent event) {
    std::shared_ptr<QueueState> q;
    std::shared_ptr<EventState> e;
    if (!LookupQueueAndEvent("queue_record_event", queue, event, &q, &e)) return STRATA_DEVICE_ERROR_INVALID_ARGUMENT;
    std::lock_guard<std::mutex> lock(q->mu);
    if (q->closing)
      return Fail(STRATA_DEVICE_ERROR_INVALID_ARGUMENT,
                  "queue_record_event: " + Describe(queue) + " is being destroyed");
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

  int WaitEvent(StrataDeviceQueue queue, StrataDeviceEvent event) {
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

  int EventWait(StrataDeviceEvent handle) {
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

  int EventQuery(StrataDeviceEvent handle, int32_t* out_complete) {
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

  int Synchronize() {
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

  // ---- counters ----

  int GetCounters(StrataDeviceQueue queue, StrataDeviceCounters* out) {
    if (out == nullptr) return Fail(STRATA_DEVICE_ERROR_INVALID_ARGUMENT, "get_counters: out_counters is NULL");
    if (out->struct_size < sizeof(StrataDeviceCounters)) {
      return Fail(STRATA_DEVICE_ERROR_INVALID_ARGUMENT, "get_counters: struct_size " +
                                                            std::to_string(out->struct_size) +
                                                            " is smaller than the version-1 StrataDeviceCounters (" +
                                                            std::to_string(sizeof(StrataDeviceCounters)) + " bytes)");
    }
    Totals t;
    StrataDeviceCounters c{};
    c.struct_size = sizeof(c);
    if (queue == 0) {
      {
        std::lock_guard<std::mutex> lock(counters_mu_);
        t = totals_;
        c.time_ns = max_clock_ns_;
      }
      std::lock_guard<std::mutex> lock(mu_);
      c.memory_in_use_bytes = in_use_;
      c.memory_peak_bytes = peak_;
    } else {
      std::shared_ptr<QueueState> q;
      if (!LookupQueue("get_counters", queue, &q)) return STRATA_DEVICE_ERROR_INVALID_ARGUMENT;
      std::lock_guard<std::mutex> lock(q->mu);
      t = q->totals;
      c.time_ns = q->clock_ns;
    }
    c.busy_ns = t.busy_ns;
    c.kernel_ns = t.kernel_ns;
    c.copy_ns = t.copy_ns;
    c.kernel_launches = t.kernel_launches;
    c.host_to_device_copies = t.h2d_copies;
    c.host_to_device_bytes = t.h2d_bytes;
    c.device_to_host_copies = t.d2h_copies;
    c.device_to_host_bytes = t.d2h_bytes;
    c.device_to_device_copies = t.d2d_copies;
    c.device_to_device_bytes = t.d2d_bytes;
    c.failed_commands = t.failed_commands;
    std::memcpy(out, &c, sizeof(c));
    return STRATA_DEVICE_OK;
  }

  int ResetCounters() {
    {
      std::lock_guard<std::mutex> lock(counters_mu_);
      totals_ = Totals{};
      max_clock_ns_ = 0;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      peak_ = in_use_;
    }
    for (const std::shared_ptr<QueueState>& q : QueueSnapshot()) {
      std::lock_guard<std::mutex> lock(q->mu);
      q->totals = Totals{};
      q->clock_ns = 0;
    }
    return STRATA_DEVICE_OK;
  }

  // Stops every queue (after its commands). Returns the failures nobody reported.
  std::string Shutdown() {
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

 private:
  // A byte range a command uses, checked at submission.
  struct BufferUse {
    uint64_t buffer, offset, size;
    const char* role;   // copies: "source" / "destination"
    std::string where;  // launches: "queue_launch(dense): argument #1 'W'"
  };

  // Finds a buffer that commands may use: `for_submission` also refuses one whose
  // queue_free_buffer has been submitted. Requires mu_.
  bool FindBuffer(uint64_t handle, bool for_submission, Buffer** out, std::string* error) {
    if (!CheckHandle(handle, Kind::kBuffer, error)) return false;
    auto it = buffers_.find(handle);
    if (it == buffers_.end() || it->second.freed) {
      *error = Describe(handle) + (CounterOf(handle) < next_buffer_ ? " was freed" : " does not exist");
      return false;
    }
    if (for_submission && it->second.free_queued) {
      *error = Describe(handle) + " is being freed (queue_free_buffer)";
      return false;
    }
    *out = &it->second;
    return true;
  }

  bool FindQueue(uint64_t handle, std::shared_ptr<QueueState>* out, std::string* error) {
    if (!CheckHandle(handle, Kind::kQueue, error)) return false;
    auto it = queues_.find(handle);
    if (it == queues_.end()) {
      *error = Describe(handle) + (CounterOf(handle) < next_queue_ ? " was destroyed" : " does not exist");
      return false;
    }
    *out = it->second;
    return true;
  }

  bool FindEvent(uint64_t handle, std::shared_ptr<EventState>* out, std::string* error) {
    if (!CheckHandle(handle, Kind::kEvent, error)) return false;
    auto it = events_.find(handle);
    if (it == events_.end()) {
      *error = Describe(handle) + (CounterOf(handle) < next_event_ ? " was destroyed" : " does not exist");
      return false;
    }
    *out = it->second;
    return true;
  }

  // The kind and device bits of a handle.
  bool CheckHandle(uint64_t handle, Kind want, std::string* error) const {
    const char* want_name = KindName(static_cast<uint64_t>(want));
    const char* got_name = KindName(KindBits(handle));
    if (handle == 0) {
      *error = std::string("the ") + want_name + " handle is 0";
    } else if (got_name == nullptr || CounterOf(handle) == 0) {
      *error = Hex(handle) + " is not a " + want_name + " handle";
    } else if (KindBits(handle) != static_cast<uint64_t>(want)) {
      *error = Describe(handle) + " (" + Hex(handle) + ") is a " + got_name + " handle, not a " + want_name + " handle";
    } else if (SerialOf(handle) != serial_) {
      *error = Describe(handle) + " (" + Hex(handle) + ") belongs to another device";
    } else {
      return true;
    }
    return false;
  }

  bool LookupQueue(const char* fn, uint64_t handle, std::shared_ptr<QueueState>* out) {
    std::lock_guard<std::mutex> lock(mu_);
    std::string error;
    if (FindQueue(handle, out, &error)) return true;
    Fail(STRATA_DEVICE_ERROR_INVALID_ARGUMENT, std::string(fn) + ": " + error);
    return false;
  }

  bool LookupQueueAndEvent(const char* fn, uint64_t queue, uint64_t event, std::shared_ptr<QueueState>* q,
                           std::shared_ptr<EventState>* e) {
    std::lock_guard<std::mutex> lock(mu_);
    std::string error;
    if (FindQueue(queue, q, &error) && FindEvent(event, e, &error)) return true;
    Fail(STRATA_DEVICE_ERROR_INVALID_ARGUMENT, std::string(fn) + ": " + error);
    return false;
  }

  std::vector<std::shared_ptr<QueueState>> QueueSnapshot() {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<std::shared_ptr<QueueState>> queues;
    for (auto& [handle, q] : queues_) queues.push_back(q);
    return queues;
  }

  // Copies a StrataDeviceArg, checking what must hold to keep it: a known kind, a
  // rank in range, a readable shape of non-negative dimensions, a byte size that fits.
  static bool CopyArg(const StrataDeviceArg& in, Arg* out, std::string* error) {
    out->kind = in.kind;
    if (in.kind == STRATA_DEVICE_ARG_I64) {
      out->i64 = in.value.i64;
      return true;
    }
    if (in.kind == STRATA_DEVICE_ARG_F64) {
      out->f64 = in.value.f64;
      return true;
    }
    if (in.kind != STRATA_DEVICE_ARG_BUFFER) {
      *error =
          "unknown argument kind " + std::to_string(in.kind) + " (expected STRATA_DEVICE_ARG_BUFFER, _I64 or _F64)";
      return false;
    }
    const StrataDeviceTensorArg& t = in.value.buffer;
    if (t.ndim < 0 || t.ndim > STRATA_DEVICE_MAX_NDIM) {
      *error =
          "rank " + std::to_string(t.ndim) + " is out of range [0, " + std::to_string(STRATA_DEVICE_MAX_NDIM) + "]";
      return false;
    }
    if (t.ndim > 0 && t.shape == nullptr) {
      *error = "shape is NULL for rank " + std::to_string(t.ndim);
      return false;
    }
    const uint64_t element_bits = uint64_t{t.dtype.bits} * t.dtype.lanes;
    if (element_bits == 0 || element_bits % 8 != 0) {
      *error = "dtype " + DTypeString(t.dtype) + " is not a whole number of bytes";
      return false;
    }
    out->buffer = t.buffer;
    out->byte_offset = t.byte_offset;
    out->dtype = t.dtype;
    out->ndim = t.ndim;
    uint64_t bytes = element_bits / 8;
    bool empty = false;
    for (int32_t d = 0; d < t.ndim; ++d) {
      const int64_t dim = t.shape[d];
      if (dim < 0 || dim > kMaxDim) {
        *error = "dimension " + std::to_string(d) + " = " + std::to_string(dim) + " is out of range [0, 2^40]";
        return false;
      }
      out->dims[d] = dim;
      if (dim == 0) empty = true;
      // Saturates: a non-empty tensor that large is refused by the bounds check anyway.
      if (!empty && __builtin_mul_overflow(bytes, static_cast<uint64_t>(dim), &bytes)) bytes = UINT64_MAX;
    }
    out->bytes = empty ? 0 : bytes;
    return true;
  }

  // Checks the queue and every byte range, then enqueues. Copies and launches.
  int SubmitChecked(const char* fn, StrataDeviceQueue queue, Command cmd, const std::vector<BufferUse>& uses) {
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
      return Fail(STRATA_DEVICE_ERROR_INVALID_ARGUMENT,
                  std::string(fn) + ": " + Describe(queue) + " is being destroyed");
    }
    return STRATA_DEVICE_OK;
  }

  // False when the queue is being destroyed.
  static bool Enqueue(QueueState& q, Command cmd) {
    std::lock_guard<std::mutex> lock(q.mu);
    if (q.closing) return false;
    cmd.seq = ++q.submitted;
    q.commands.push_back(std::move(cmd));
    q.work_cv.notify_one();
    return true;
  }

  // Lets the worker finish every queued command, then joins it.
  static void StopQueue(QueueState& q) {
    {
      std::lock_guard<std::mutex> lock(q.mu);
      q.closing = true;
      q.work_cv.notify_one();
    }
    if (q.worker.joinable()) q.worker.join();
  }

  // Removes the errors of commands numbered below `before` and says what failed:
  // the first failure, and how many others. Requires q.mu.
  static void CollectErrors(QueueState& q, uint64_t before, std::string* first, uint64_t* count) {
    auto it = q.errors.begin();
    for (; it != q.errors.end() && it->seq < before; ++it) {
      if (first->empty()) *first = it->message;
      *count += 1 + it->more;
    }
    q.errors.erase(q.errors.begin(), it);
  }

  static std::string WithCount(const std::string& first, uint64_t count) {
    if (count <= 1) return first;
    return first + " (and " + std::to_string(count - 1) + " more failed command" + (count > 2 ? "s" : "") + ")";
  }

  static std::string TakeErrors(QueueState& q, uint64_t before) {
    std::string first;
    uint64_t count = 0;
    CollectErrors(q, before, &first, &count);
    return count > 0 ? WithCount(first, count) : std::string();
  }

  // Returns a buffer's memory now, or at its last unpin. Requires mu_.
  void ReleaseLocked(uint64_t handle, Buffer* b) {
    if (b->pins > 0) {
      b->freed = true;
      return;
    }
    arena_.Release(b->offset, b->reserved);
    in_use_ -= b->reserved;
    buffers_.erase(handle);
  }

  // Makes `size` bytes at `offset` of a buffer safe to touch until Unpin: the
  // buffer cannot be released meanwhile. Execution-time twin of the submission
  // check: the buffer may have been freed since.
  bool Pin(uint64_t handle, uint64_t offset, uint64_t size, uint8_t** data, std::string* error) {
    std::lock_guard<std::mutex> lock(mu_);
    Buffer* b = nullptr;
    if (!FindBuffer(handle, false, &b, error)) return false;
    if (offset > b->size || size > b->size - offset) {  // cannot happen after the submission check; kept for safety
      *error = "bytes " + ByteRange(offset, size) + " are outside " + Describe(handle) + " of " +
               std::to_string(b->size) + " bytes";
      return false;
    }
    ++b->pins;
    *data = memory_ + b->offset + offset;
    return true;
  }

  void Unpin(uint64_t handle) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = buffers_.find(handle);
    if (it == buffers_.end()) return;
    if (--it->second.pins == 0 && it->second.freed) ReleaseLocked(handle, &it->second);
  }

  // The kFree command: releases a buffer whose queue_free_buffer was submitted.
  void ReleaseQueued(uint64_t handle) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = buffers_.find(handle);
    if (it != buffers_.end() && !it->second.freed)
      ReleaseLocked(handle, &it->second);  // already freed: nothing left to do
  }

  void WorkerLoop(QueueState& q) {
    for (;;) {
      Command cmd;
      {
        std::unique_lock<std::mutex> lock(q.mu);
        q.work_cv.wait(lock, [&] { return !q.commands.empty() || q.closing; });
        if (q.commands.empty()) return;  // closing, and every command has run
        cmd = std::move(q.commands.front());
        q.commands.pop_front();
      }
      Outcome outcome;
      try {
        outcome = Execute(q, cmd);
      } catch (const std::bad_alloc&) {
        outcome.error = "out of host memory";
      }
      Finish(q, cmd, outcome);
    }
  }

  Outcome Execute(QueueState& q, const Command& cmd) {
    Outcome out;
    const bool work = cmd.type == Command::kCopyH2D || cmd.type == Command::kCopyD2H || cmd.type == Command::kCopyD2D ||
                      cmd.type == Command::kLaunch;
    if (work && config_.debug_delay_us > 0) {
      std::this_thread::sleep_for(std::chrono::microseconds(config_.debug_delay_us));
    }
    if (cmd.inject_failure) {  // fails like any command: nothing written, the queue goes on
      out.error = "injected failure (option debug_fail_command=" + std::to_string(config_.debug_fail_command) + ")";
      return out;
    }
    switch (cmd.type) {
      case Command::kCopyH2D: {
        uint8_t* dst = nullptr;
        if (!Pin(cmd.dst, cmd.dst_offset, cmd.size, &dst, &out.error)) break;
        if (cmd.size > 0) std::memcpy(dst, cmd.host_src, cmd.size);
        Unpin(cmd.dst);
        out.cost_ns = cost_.HostCopyNs(cmd.size);
        break;
      }
      case Command::kCopyD2H: {
        uint8_t* src = nullptr;
        if (!Pin(cmd.src, cmd.src_offset, cmd.size, &src, &out.error)) break;
        if (cmd.size > 0) std::memcpy(cmd.host_dst, src, cmd.size);
        Unpin(cmd.src);
        out.cost_ns = cost_.HostCopyNs(cmd.size);
        break;
      }
      case Command::kCopyD2D: {
        uint8_t *src = nullptr, *dst = nullptr;
        if (!Pin(cmd.src, cmd.src_offset, cmd.size, &src, &out.error)) break;
        if (!Pin(cmd.dst, cmd.dst_offset, cmd.size, &dst, &out.error)) {
          Unpin(cmd.src);
          break;
        }
        if (cmd.size > 0) std::memmove(dst, src, cmd.size);
        Unpin(cmd.dst);
        Unpin(cmd.src);
        out.cost_ns = cost_.DeviceCopyNs(cmd.size);
        break;
      }
      case Command::kLaunch: RunKernel(cmd, &out); break;
      case Command::kFree: ReleaseQueued(cmd.dst); break;
      case Command::kRecord: {
        uint64_t clock = 0;
        {
          std::lock_guard<std::mutex> lock(q.mu);
          clock = q.clock_ns;
        }
        std::lock_guard<std::mutex> lock(cmd.event->mu);
        if (cmd.generation > cmd.event->completed) {
          cmd.event->completed = cmd.generation;
          cmd.event->timestamp_ns = clock;
        }
        cmd.event->cv.notify_all();
        break;
      }
      case Command::kWait: {
        std::unique_lock<std::mutex> lock(cmd.event->mu);
        cmd.event->cv.wait(lock, [&] { return cmd.event->completed >= cmd.generation; });
        out.wait_until_ns = cmd.event->timestamp_ns;
        break;
      }
    }
    return out;
  }

  void RunKernel(const Command& cmd, Outcome* out) {
    const KernelDef& def = *cmd.kernel;
    Cost cost;
    if (!CheckCall(def, cmd.args, cost_, &cost, &out->error)) return;
    std::vector<float*> data(cmd.args.size(), nullptr);
    std::vector<uint64_t> pinned;
    for (size_t i = 0; i < cmd.args.size() && out->error.empty(); ++i) {
      const Arg& a = cmd.args[i];
      if (a.kind != STRATA_DEVICE_ARG_BUFFER) continue;
      uint8_t* p = nullptr;
      if (Pin(a.buffer, a.byte_offset, a.bytes, &p, &out->error)) {
        pinned.push_back(a.buffer);
        data[i] = reinterpret_cast<float*>(p);
      } else {
        out->error = "argument #" + std::to_string(i) + " '" + def.params[i].name + "': " + out->error;
      }
    }
    if (out->error.empty()) {
      RunCall(def, cmd.args, data);
      out->cost_ns = cost_.KernelNs(cost.mac_cycles, cost.vector_cycles);
    }
    for (uint64_t b : pinned) Unpin(b);
  }

  // Accounts a command, or records its failure, then marks it completed.
  void Finish(QueueState& q, const Command& cmd, const Outcome& out) {
    std::lock_guard<std::mutex> lock(q.mu);
    Totals delta;
    if (!out.error.empty()) {
      std::string what = cmd.type == Command::kLaunch    ? "kernel '" + std::string(cmd.kernel->name) + "'"
                         : cmd.type == Command::kCopyH2D ? "host->device copy"
                         : cmd.type == Command::kCopyD2H ? "device->host copy"
                                                         : "device->device copy";
      std::string message =
          what + " (command #" + std::to_string(cmd.seq) + " on " + Describe(q.handle) + ") failed: " + out.error;
      if (q.errors.size() < kMaxPendingErrors) {
        q.errors.push_back({cmd.seq, std::move(message)});
      } else {
        ++q.errors.back().more;
      }
      delta.failed_commands = 1;
    } else {
      delta.busy_ns = out.cost_ns;
      switch (cmd.type) {
        case Command::kLaunch:
          delta.kernel_launches = 1;
          delta.kernel_ns = out.cost_ns;
          break;
        case Command::kCopyH2D:
          delta.h2d_copies = 1;
          delta.h2d_bytes = cmd.size;
          delta.copy_ns = out.cost_ns;
          break;
        case Command::kCopyD2H:
          delta.d2h_copies = 1;
          delta.d2h_bytes = cmd.size;
          delta.copy_ns = out.cost_ns;
          break;
        case Command::kCopyD2D:
          delta.d2d_copies = 1;
          delta.d2d_bytes = cmd.size;
          delta.copy_ns = out.cost_ns;
          break;
        default: break;
      }
      q.clock_ns = std::max(q.clock_ns + out.cost_ns, out.wait_until_ns);
    }
    Add(&q.totals, delta);
    {
      // Before `completed` moves: a synchronize that returns sees the device totals too.
      std::lock_guard<std::mutex> counters_lock(counters_mu_);
      Add(&totals_, delta);
      max_clock_ns_ = std::max(max_clock_ns_, q.clock_ns);
    }
    q.completed = cmd.seq;
    q.done_cv.notify_all();
  }

  static void Add(Totals* t, const Totals& d) {
    t->busy_ns += d.busy_ns;
    t->kernel_ns += d.kernel_ns;
    t->copy_ns += d.copy_ns;
    t->kernel_launches += d.kernel_launches;
    t->h2d_copies += d.h2d_copies;
    t->h2d_bytes += d.h2d_bytes;
    t->d2h_copies += d.d2h_copies;
    t->d2h_bytes += d.d2h_bytes;
    t->d2d_copies += d.d2d_copies;
    t->d2d_bytes += d.d2d_bytes;
    t->failed_commands += d.failed_commands;
  }

  const Config config_;
  const CostModel cost_;
  const uint16_t serial_;
  uint8_t* const memory_;  // config_.memory_bytes, mmap'ed
  std::vector<const char*> kernel_names_;

  std::mutex mu_;  // everything below up to counters_mu_
  Arena arena_;
  std::unordered_map<uint64_t, Buffer> buffers_;
  std::unordered_map<uint64_t, std::shared_ptr<QueueState>> queues_;
  std::unordered_map<uint64_t, std::shared_ptr<EventState>> events_;
  uint64_t next_buffer_ = 1, next_queue_ = 1, next_event_ = 1;
  uint64_t in_use_ = 0, peak_ = 0;
  std::atomic<uint64_t> accepted_work_{0};  // copies and launches submitted (option debug_fail_command)

  std::mutex counters_mu_;
  Totals totals_;
  uint64_t max_clock_ns_ = 0;

  std::mutex errors_mu_;
  std::unordered_map<std::thread::id, std::string> errors_;
};

// ---- the C table ------------------------------------------------------------------

// Runs `body` on the open device behind `handle`; a pointer that is not an open
// device, and any exception, become error codes (nothing may unwind into C).
template <typename Body>
int WithDevice(StrataDevice* handle, const char* fn, Body body) {
  Device* device = reinterpret_cast<Device*>(handle);
  {
    std::lock_guard<std::mutex> lock(RegistryMutex());
    if (Registry().count(device) == 0) {
      return GlobalFail(
          STRATA_DEVICE_ERROR_INVALID_ARGUMENT,
          std::string(fn) + ": " + Hex(reinterpret_cast<uintptr_t>(handle)) + " is not an open sim_npu device");
    }
  }
  try {
    return body(*device);
  } catch (const std::bad_alloc&) {
    return device->Fail(STRATA_DEVICE_ERROR_INTERNAL, std::string(fn) + ": out of host memory");
  } catch (const std::exception& e) {
    return device->Fail(STRATA_DEVICE_ERROR_INTERNAL, std::string(fn) + ": " + e.what());
  }
}

const char* ApiLastError(StrataDevice* handle) {
  if (handle != nullptr) {
    Device* device = reinterpret_cast<Device*>(handle);
    std::lock_guard<std::mutex> lock(RegistryMutex());
    if (Registry().count(device) != 0) return device->LastError();
  }
  return t_global_error.c_str();
}

int ApiDeviceCount(int32_t* out_count) {
  if (out_count == nullptr) return GlobalFail(STRATA_DEVICE_ERROR_INVALID_ARGUMENT, "device_count: out_count is NULL");
  *out_count = 1;
  return STRATA_DEVICE_OK;
}

int ApiDeviceOpen(int32_t index, const char* options, StrataDevice** out_device) {
  if (out_device == nullptr) return GlobalFail(STRATA_DEVICE_ERROR_INVALID_ARGUMENT, "device_open: out_device is NULL");
  if (index != 0) {
    return GlobalFail(STRATA_DEVICE_ERROR_INVALID_ARGUMENT,
                      "device_open: sim_npu has 1 device (index 0), got index " + std::to_string(index));
  }
  try {
    Config config;
    std::string error;
    if (!ParseOptions(options, &config, &error)) {
      return GlobalFail(STRATA_DEVICE_ERROR_INVALID_ARGUMENT, "device_open: " + error);
    }
    // Reserved, not committed: pages cost host memory only once written.
    void* memory =
        mmap(nullptr, config.memory_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (memory == MAP_FAILED) {
      return GlobalFail(STRATA_DEVICE_ERROR_OUT_OF_MEMORY, "device_open: cannot reserve " +
                                                               std::to_string(config.memory_bytes) +
                                                               " bytes of host memory for the device (option memory)");
    }
    auto* device = new Device(config, next_serial.fetch_add(1), static_cast<uint8_t*>(memory));
    std::lock_guard<std::mutex> lock(RegistryMutex());
    Registry().insert(device);
    *out_device = reinterpret_cast<StrataDevice*>(device);
    return STRATA_DEVICE_OK;
  } catch (const std::exception& e) {
    return GlobalFail(STRATA_DEVICE_ERROR_INTERNAL, std::string("device_open: ") + e.what());
  }
}

int ApiDeviceClose(StrataDevice* handle) {
  Device* device = reinterpret_cast<Device*>(handle);
  {
    std::lock_guard<std::mutex> lock(RegistryMutex());
    if (Registry().erase(device) == 0) {
      return GlobalFail(STRATA_DEVICE_ERROR_INVALID_ARGUMENT,
                        "device_close: " + Hex(reinterpret_cast<uintptr_t>(handle)) + " is not an open sim_npu device");
    }
  }
  std::string unreported;
  try {
    unreported = device->Shutdown();
  } catch (const std::exception&) {
    unreported.clear();  // only the message could not be built; the queues are stopped
  }
  delete device;
  if (!unreported.empty()) {
    return GlobalFail(STRATA_DEVICE_ERROR_EXECUTION, "device_close: failures no call reported: " + unreported);
  }
  return STRATA_DEVICE_OK;
}

// One table entry per method; the macro keeps the 20 forwarding functions uniform.
#define SIM_NPU_FORWARD(api_name, method, params, args)                             \
  int api_name params {                                                             \
    return WithDevice(device, #api_name, [&](Device& d) { return d.method args; }); \
  }

SIM_NPU_FORWARD(device_get_properties, GetProperties, (StrataDevice * device, StrataDeviceProperties* p), (p))
SIM_NPU_FORWARD(device_synchronize, Synchronize, (StrataDevice * device), ())
SIM_NPU_FORWARD(buffer_allocate, Allocate, (StrataDevice * device, uint64_t size, StrataDeviceBuffer* out), (size, out))
SIM_NPU_FORWARD(buffer_free, Free, (StrataDevice * device, StrataDeviceBuffer b), (b))
SIM_NPU_FORWARD(buffer_get_size, GetSize, (StrataDevice * device, StrataDeviceBuffer b, uint64_t* out), (b, out))
SIM_NPU_FORWARD(kernel_lookup, KernelLookup, (StrataDevice * device, const char* name, StrataDeviceKernel* out),
                (name, out))
SIM_NPU_FORWARD(queue_create, QueueCreate, (StrataDevice * device, StrataDeviceQueue* out), (out))
SIM_NPU_FORWARD(queue_destroy, QueueDestroy, (StrataDevice * device, StrataDeviceQueue q), (q))
SIM_NPU_FORWARD(queue_copy_host_to_device, CopyHostToDevice,
                (StrataDevice * device, StrataDeviceQueue q, const void* src, StrataDeviceBuffer dst,
                 uint64_t dst_offset, uint64_t size),
                (q, src, dst, dst_offset, size))
SIM_NPU_FORWARD(queue_copy_device_to_host, CopyDeviceToHost,
                (StrataDevice * device, StrataDeviceQueue q, StrataDeviceBuffer src, uint64_t src_offset, void* dst,
                 uint64_t size),
                (q, src, src_offset, dst, size))
SIM_NPU_FORWARD(queue_copy_device_to_device, CopyDeviceToDevice,
                (StrataDevice * device, StrataDeviceQueue q, StrataDeviceBuffer src, uint64_t src_offset,
                 StrataDeviceBuffer dst, uint64_t dst_offset, uint64_t size),
                (q, src, src_offset, dst, dst_offset, size))
SIM_NPU_FORWARD(queue_launch, Launch,
                (StrataDevice * device, StrataDeviceQueue q, StrataDeviceKernel k, const StrataDeviceArg* args,
                 int32_t num_args),
                (q, k, args, num_args))
SIM_NPU_FORWARD(queue_free_buffer, QueueFreeBuffer, (StrataDevice * device, StrataDeviceQueue q, StrataDeviceBuffer b),
                (q, b))
SIM_NPU_FORWARD(queue_synchronize, QueueSynchronize, (StrataDevice * device, StrataDeviceQueue q), (q))
SIM_NPU_FORWARD(event_create, EventCreate, (StrataDevice * device, StrataDeviceEvent* out), (out))
SIM_NPU_FORWARD(event_destroy, EventDestroy, (StrataDevice * device, StrataDeviceEvent e), (e))
SIM_NPU_FORWARD(queue_record_event, RecordEvent, (StrataDevice * device, StrataDeviceQueue q, StrataDeviceEvent e),
                (q, e))
SIM_NPU_FORWARD(queue_wait_event, WaitEvent, (StrataDevice * device, StrataDeviceQueue q, StrataDeviceEvent e), (q, e))
SIM_NPU_FORWARD(event_wait, EventWait, (StrataDevice * device, StrataDeviceEvent e), (e))
SIM_NPU_FORWARD(event_query, EventQuery, (StrataDevice * device, StrataDeviceEvent e, int32_t* out), (e, out))
SIM_NPU_FORWARD(get_counters, GetCounters, (StrataDevice * device, StrataDeviceQueue q, StrataDeviceCounters* out),
                (q, out))
SIM_NPU_FORWARD(reset_counters, ResetCounters, (StrataDevice * device), ())

#undef SIM_NPU_FORWARD

StrataDeviceApi MakeTable() {
  StrataDeviceApi api{};
  api.struct_size = sizeof(api);
  api.abi_version = STRATA_DEVICE_ABI_VERSION;
  api.plugin_name = kPluginName;
  api.plugin_version = kPluginVersion;
  api.last_error = ApiLastError;
  api.device_count = ApiDeviceCount;
  api.device_open = ApiDeviceOpen;
  api.device_close = ApiDeviceClose;
  api.device_get_properties = device_get_properties;
  api.device_synchronize = device_synchronize;
  api.buffer_allocate = buffer_allocate;
  api.buffer_free = buffer_free;
  api.buffer_get_size = buffer_get_size;
  api.kernel_lookup = kernel_lookup;
  api.queue_create = queue_create;
  api.queue_destroy = queue_destroy;
  api.queue_copy_host_to_device = queue_copy_host_to_device;
  api.queue_copy_device_to_host = queue_copy_device_to_host;
  api.queue_copy_device_to_device = queue_copy_device_to_device;
  api.queue_launch = queue_launch;
  api.queue_free_buffer = queue_free_buffer;
  api.queue_synchronize = queue_synchronize;
  api.event_create = event_create;
  api.event_destroy = event_destroy;
  api.queue_record_event = queue_record_event;
  api.queue_wait_event = queue_wait_event;
  api.event_wait = event_wait;
  api.event_query = event_query;
  api.get_counters = get_counters;
  api.reset_counters = reset_counters;
  return api;
}

void WriteError(char* error, size_t capacity, const std::string& message) {
  if (error == nullptr || capacity == 0) return;
  const size_t n = std::min(capacity - 1, message.size());
  std::memcpy(error, message.data(), n);
  error[n] = '\0';
}

}  // namespace
}  // namespace sim_npu

// The plug-in's only exported symbol (the library is built with hidden visibility).
extern "C" __attribute__((visibility("default"))) int strata_device_plugin_init(uint32_t abi_version,
                                                                                StrataDeviceApi* api, char* error,
                                                                                size_t error_capacity) {
  if (abi_version != STRATA_DEVICE_ABI_VERSION) {
    sim_npu::WriteError(error, error_capacity,
                        "the sim_npu plug-in implements device ABI version " +
                            std::to_string(STRATA_DEVICE_ABI_VERSION) + ", the host asked for version " +
                            std::to_string(abi_version));
    return STRATA_DEVICE_ERROR_UNSUPPORTED;
  }
  if (api == nullptr || api->struct_size < sizeof(StrataDeviceApi)) {
    sim_npu::WriteError(error, error_capacity,
                        api == nullptr ? std::string("the sim_npu plug-in was given a NULL table")
                                       : "the host's StrataDeviceApi struct_size " + std::to_string(api->struct_size) +
                                             " is smaller than the version-1 table (" +
                                             std::to_string(sizeof(StrataDeviceApi)) + " bytes)");
    return STRATA_DEVICE_ERROR_INVALID_ARGUMENT;
  }
  // Built on every call: cheap, and no static initialization order to think about.
  const StrataDeviceApi table = sim_npu::MakeTable();
  std::memcpy(api, &table, sizeof(table));
  return STRATA_DEVICE_OK;
}
