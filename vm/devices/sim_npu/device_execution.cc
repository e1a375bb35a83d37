// A queue's worker thread: it takes the queue's commands in order, runs each
// with no lock held, and accounts it on the queue and the device, so that the
// simulated clocks and counters advance exactly as commands complete (see
// device.h; a launch's kernel runs in device_kernels.cc).
#include <algorithm>
#include <chrono>
#include <cstring>
#include <new>

#include "vm/devices/sim_npu/device.h"

namespace sim_npu {
namespace {

// Failed commands kept per queue until reported; later ones are only counted.
constexpr size_t kMaxPendingErrors = 32;

void Add(Totals* t, const Totals& d) {
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

}  // namespace

void Device::WorkerLoop(QueueState& q) {
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

Outcome Device::Execute(QueueState& q, const Command& cmd) {
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

void Device::Finish(QueueState& q, const Command& cmd, const Outcome& out) {
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

}  // namespace sim_npu
