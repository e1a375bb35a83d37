// Profiler: where a VirtualMachine's time goes, per instruction kind and per
// callee, and optionally a trace of every call (strata run --profile / --trace).
//
// Attach one with VirtualMachine::SetProfiler. The VM then runs a separate
// instantiation of its interpreter loop that reads the clock at every
// instruction and reports here; without a profiler the loop it runs contains
// no profiling code at all, so an unprofiled VM pays nothing.
//
// What is measured:
//   - per instruction kind (call library / kernel / bytecode, ret, goto, if):
//     count and time. Times are exclusive: a Call of a bytecode function is only
//     its frame set-up, the callee's instructions are counted on their own, so
//     the kinds add up to the time spent in instructions.
//   - per kernel and per library function: count and time of its calls.
//   - with Options::record_trace, one trace event per call (library, kernel,
//     bytecode; a bytecode call spans its callee's body up to its Ret) and one
//     per profiled run of an entry function, written as Chrome trace-event JSON
//     (TraceJson; open it in https://ui.perfetto.dev or chrome://tracing).
//
// Clock: std::chrono::steady_clock (on x86-64 Linux, clock_gettime through the
// vDSO reading the TSC; ns resolution, ~20 ns per read, measured when the
// profiler is created and shown in the report). The loop reads it once per
// instruction, at its end, which is also the next instruction's start: the
// instructions' times add up to the run's (but for the VM's entry and exit),
// and each includes one clock read plus the recording of the previous
// instruction. So a profiled run is slower by that much per instruction and a
// short instruction's time (a Goto: ~1 ns unprofiled) is mostly the clock's,
// while calls that take microseconds (kernels, allocations) are measured
// accurately. steady_clock rather than a
// calibrated rdtsc: it costs about twice as much per read (22 vs 9 ns on the
// Zen 5 CI machine), but needs no calibration and is right on every CPU.
//
// Ownership and thread-safety: a Profiler records one executable's functions
// (it keeps the executable alive). It is not synchronized: attach it to one VM
// at a time, and read it when that VM is not running.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "vm/executable.h"

namespace strata::vm {

// What the VM reports an instruction as.
enum class InstructionKind : uint8_t {
  kCallLibrary = 0,
  kCallCompiledKernel,
  kCallBytecode,
  kRet,
  kGoto,
  kIf,
  kCallDevice
};
inline constexpr int kNumInstructionKinds = 7;
// "call library", "call kernel", "call bytecode", "ret", "goto", "if", "call device".
// A device call's time is its submission (launches are asynchronous); the
// device's own time is in DeviceStats.
const char* InstructionKindName(InstructionKind kind);

class Profiler {
 public:
  struct Options {
    // Keep one event per call for TraceJson (memory grows with the calls made).
    bool record_trace = false;
  };
  struct Stat {
    int64_t count = 0;
    int64_t total_ns = 0;
  };
  // A complete event: `function` is the callee (or the entry function for a
  // run), `category` the Chrome trace category.
  enum class EventCategory : uint8_t { kLibrary, kCompiledKernel, kBytecode, kInvoke, kDevice };
  struct TraceEvent {
    int64_t start_ns;
    int64_t duration_ns;
    int32_t function;
    EventCategory category;
  };

  Profiler(std::shared_ptr<const Executable> executable, Options options);
  explicit Profiler(std::shared_ptr<const Executable> executable) : Profiler(std::move(executable), Options()) {}

  // The clock, in ns since an arbitrary epoch.
  static int64_t Now() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }

  // ---- recording: called by the VirtualMachine --------------------------------
  // A run of the bytecode function functions()[function] starts / ends.
  void BeginRun(int32_t function, int64_t now);
  void EndRun(int64_t now);
  // One executed instruction. `callee` is the called function's index for a
  // Call, -1 otherwise.
  void RecordInstruction(InstructionKind kind, int32_t callee, int64_t start, int64_t end) {
    Stat& k = kinds_[static_cast<size_t>(kind)];
    ++k.count;
    k.total_ns += end - start;
    if (kind == InstructionKind::kCallLibrary || kind == InstructionKind::kCallCompiledKernel ||
        kind == InstructionKind::kCallDevice) {
      Stat& f = functions_[static_cast<size_t>(callee)];
      ++f.count;
      f.total_ns += end - start;
      if (options_.record_trace) {
        EventCategory category = kind == InstructionKind::kCallCompiledKernel ? EventCategory::kCompiledKernel
                                 : kind == InstructionKind::kCallDevice       ? EventCategory::kDevice
                                                                              : EventCategory::kLibrary;
        events_.push_back(TraceEvent{start, end - start, callee, category});
      }
    }
  }
  // A Call of a bytecode function that started at `start` entered its callee;
  // the matching Ret back into the caller ends it (trace only).
  void EnterBytecodeCall(int32_t callee, int64_t start) {
    if (!options_.record_trace) return;
    open_events_.push_back(events_.size());
    events_.push_back(TraceEvent{start, 0, callee, EventCategory::kBytecode});
  }
  void ExitBytecodeCall(int64_t end) {
    if (!options_.record_trace || open_events_.size() <= 1) return;  // [0] is the run itself
    TraceEvent& e = events_[open_events_.back()];
    e.duration_ns = end - e.start_ns;
    open_events_.pop_back();
  }

  // ---- results ----------------------------------------------------------------
  const Executable& executable() const { return *executable_; }
  const Stat& kind_stat(InstructionKind kind) const { return kinds_[static_cast<size_t>(kind)]; }
  // Calls of the kernel or library function functions()[index] (zero for bytecode functions).
  const Stat& function_stat(int32_t index) const { return functions_[static_cast<size_t>(index)]; }
  // Profiled runs of entry functions and their total wall time.
  const Stat& runs() const { return runs_; }
  // The measured cost of one Now(), in ns (included once in every instruction's time).
  double clock_read_ns() const { return clock_read_ns_; }
  // The time of all recorded instructions (the kinds' sum).
  int64_t instruction_ns() const;
  std::span<const TraceEvent> trace_events() const { return events_; }

  // The --profile report: a table of the instruction kinds that ran, then one
  // of the kernels and library functions that were called, each sorted by
  // total time, with count, total, mean and share of the instructions' time.
  std::string FormatReport() const;
  // Chrome trace-event JSON of the recorded events ("ts"/"dur" in microseconds
  // from the first run's start); empty traceEvents without record_trace.
  std::string TraceJson() const;

  // Forgets everything recorded (the executable and options stay).
  void Clear();

 private:
  std::shared_ptr<const Executable> executable_;
  Options options_;
  double clock_read_ns_ = 0;
  std::array<Stat, kNumInstructionKinds> kinds_{};
  std::vector<Stat> functions_;  // by function index
  Stat runs_;
  int32_t run_function_ = -1;  // the function every run ran, or -1 when they differ
  int64_t run_start_ns_ = 0;
  std::vector<TraceEvent> events_;
  std::vector<size_t> open_events_;  // indices into events_: the run, then open bytecode calls
};

}  // namespace strata::vm
