// One open simulated NPU and the state behind its handles. Declared here, and
// defined by concept across device*.cc, so that each part (memory, queues,
// events, kernels, the queue workers) can be read on its own; sim_npu.cc turns
// the C table's calls into calls of these methods.
//
// Locks, and the only ways they nest: QueueState::mu -> EventState::mu
// (recording an event), QueueState::mu -> Device::counters_mu_ (a command's
// accounting), and errors_mu_ innermost under any of them (recording a
// failure). Device::mu_ (buffers, arena, handle tables) takes nothing but
// errors_mu_. Kernels and copies run with no lock held.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "abi/device_plugin.h"
#include "vm/devices/sim_npu/arena.h"
#include "vm/devices/sim_npu/config.h"
#include "vm/devices/sim_npu/handles.h"
#include "vm/devices/sim_npu/kernels.h"

namespace sim_npu {

inline constexpr char kPluginName[] = "sim_npu";

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

class Device {
 public:
  Device(const Config& config, uint16_t serial, uint8_t* memory);
  ~Device();

  // ---- errors, properties, counters (device.cc) ----

  int Fail(int code, std::string message);
  const char* LastError();
  int GetProperties(StrataDeviceProperties* out);
  int GetCounters(StrataDeviceQueue queue, StrataDeviceCounters* out);
  int ResetCounters();

  // ---- memory (device_memory.cc) ----

  int Allocate(uint64_t size, StrataDeviceBuffer* out);
  int Free(StrataDeviceBuffer handle);
  int GetSize(StrataDeviceBuffer handle, uint64_t* out);

  // ---- kernels (device_kernels.cc) ----

  int KernelLookup(const char* name, StrataDeviceKernel* out);
  int Launch(StrataDeviceQueue queue, StrataDeviceKernel kernel, const StrataDeviceArg* args, int32_t num_args);

  // ---- queues (device_queues.cc) ----

  int QueueCreate(StrataDeviceQueue* out);
  int QueueDestroy(StrataDeviceQueue handle);
  int CopyHostToDevice(StrataDeviceQueue queue, const void* src, StrataDeviceBuffer dst, uint64_t dst_offset,
                       uint64_t size);
  int CopyDeviceToHost(StrataDeviceQueue queue, StrataDeviceBuffer src, uint64_t src_offset, void* dst, uint64_t size);
  int CopyDeviceToDevice(StrataDeviceQueue queue, StrataDeviceBuffer src, uint64_t src_offset, StrataDeviceBuffer dst,
                         uint64_t dst_offset, uint64_t size);
  int QueueFreeBuffer(StrataDeviceQueue queue, StrataDeviceBuffer buffer);
  int QueueSynchronize(StrataDeviceQueue handle);
  int Synchronize();
  // Stops every queue (after its commands). Returns the failures nobody reported.
  std::string Shutdown();

  // ---- events (device_events.cc) ----

  int EventCreate(StrataDeviceEvent* out);
  int EventDestroy(StrataDeviceEvent handle);
  int RecordEvent(StrataDeviceQueue queue, StrataDeviceEvent event);
  int WaitEvent(StrataDeviceQueue queue, StrataDeviceEvent event);
  int EventWait(StrataDeviceEvent handle);
  int EventQuery(StrataDeviceEvent handle, int32_t* out_complete);

 private:
  // A byte range a command uses, checked at submission.
  struct BufferUse {
    uint64_t buffer, offset, size;
    const char* role;   // copies: "source" / "destination"
    std::string where;  // launches: "queue_launch(dense): argument #1 'W'"
  };

  // ---- handle tables (device.cc; FindBuffer in device_memory.cc) ----

  // Finds a buffer that commands may use: `for_submission` also refuses one whose
  // queue_free_buffer has been submitted. Requires mu_.
  bool FindBuffer(uint64_t handle, bool for_submission, Buffer** out, std::string* error);
  bool FindQueue(uint64_t handle, std::shared_ptr<QueueState>* out, std::string* error);
  bool FindEvent(uint64_t handle, std::shared_ptr<EventState>* out, std::string* error);
  // The kind and device bits of a handle.
  bool CheckHandle(uint64_t handle, Kind want, std::string* error) const;
  bool LookupQueue(const char* fn, uint64_t handle, std::shared_ptr<QueueState>* out);
  bool LookupQueueAndEvent(const char* fn, uint64_t queue, uint64_t event, std::shared_ptr<QueueState>* q,
                           std::shared_ptr<EventState>* e);
  std::vector<std::shared_ptr<QueueState>> QueueSnapshot();

  // ---- submission (device_queues.cc) ----

  // Checks the queue and every byte range, then enqueues. Copies and launches.
  int SubmitChecked(const char* fn, StrataDeviceQueue queue, Command cmd, const std::vector<BufferUse>& uses);
  // False when the queue is being destroyed.
  static bool Enqueue(QueueState& q, Command cmd);
  // Lets the worker finish every queued command, then joins it.
  static void StopQueue(QueueState& q);
  // Removes the errors of commands numbered below `before` and says what failed:
  // the first failure, and how many others. Requires q.mu.
  static void CollectErrors(QueueState& q, uint64_t before, std::string* first, uint64_t* count);
  static std::string WithCount(const std::string& first, uint64_t count);
  static std::string TakeErrors(QueueState& q, uint64_t before);

  // ---- buffers at execution time (device_memory.cc) ----

  // Returns a buffer's memory now, or at its last unpin. Requires mu_.
  void ReleaseLocked(uint64_t handle, Buffer* b);
  // Makes `size` bytes at `offset` of a buffer safe to touch until Unpin: the
  // buffer cannot be released meanwhile. Execution-time twin of the submission
  // check: the buffer may have been freed since.
  bool Pin(uint64_t handle, uint64_t offset, uint64_t size, uint8_t** data, std::string* error);
  void Unpin(uint64_t handle);
  // The kFree command: releases a buffer whose queue_free_buffer was submitted.
  void ReleaseQueued(uint64_t handle);

  // ---- execution (device_execution.cc; RunKernel in device_kernels.cc) ----

  void WorkerLoop(QueueState& q);
  Outcome Execute(QueueState& q, const Command& cmd);
  void RunKernel(const Command& cmd, Outcome* out);
  // Accounts a command, or records its failure, then marks it completed.
  void Finish(QueueState& q, const Command& cmd, const Outcome& out);

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

}  // namespace sim_npu
