// VirtualMachine: the register-based interpreter of Strata bytecode (vm/bytecode/bytecode.h).
//
// A VM runs the functions of one Executable. Each bytecode call gets a frame of
// `num_registers` Values on one growing register stack; Call to a library
// function passes pointers to registers, constants and immediates (no heap
// allocation up to kMaxInlineArgs arguments); Call to a kernel builds its
// StrataKernelArg array and its type codes on the stack (Tensor -> tensor, Shape
// -> one i64 per dimension, Int -> i64, Float -> f64), in one pass straight from
// the operands when each is one slot, and passes a shared all-tensor codes array
// when every argument is a tensor; the kernel checks the codes, so a damaged
// call site cannot make it read an int as a pointer. The
// bytecode was verified at load time, so the dispatch loop does no bounds checks
// of its own. docs/vm.md describes the loop and its measured cost per instruction.
//
// Thread-safety: a VM is used by one thread at a time. Any number of VMs on any
// threads may share one Executable. After an error the VM is reset and can run
// the next call. On the executable's devices each VM submits to a queue of its
// own, so an asynchronous device failure fails the call of the VM that caused it.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "support/status.h"
#include "vm/executable.h"
#include "vm/memory_pool.h"
#include "vm/plugged_device.h"
#include "vm/registry.h"
#include "vm/value.h"

namespace strata::vm {

class Profiler;

class VirtualMachine {
 public:
  // Arguments a call passes without allocating (more fall back to the heap).
  static constexpr int kMaxInlineArgs = 32;
  // Nested bytecode calls before "call stack overflow".
  static constexpr int kMaxCallDepth = 1024;
  // Registers of all live frames together.
  static constexpr int64_t kMaxStackRegisters = int64_t{1} << 22;

  explicit VirtualMachine(std::shared_ptr<const Executable> executable);
  // Waits for this VM's device work and releases its device queues.
  ~VirtualMachine();
  VirtualMachine(const VirtualMachine&) = delete;
  VirtualMachine& operator=(const VirtualMachine&) = delete;

  // Runs the entry point `function_name` with `args` and returns its result.
  // Errors: unknown name (the message lists the entry points), wrong argument
  // count (with the parameter names), and anything the program reports.
  StatusOr<Value> Invoke(std::string_view function_name, std::span<const Value> args);
  // Runs the bytecode function functions()[function_index] (need not be an entry point).
  StatusOr<Value> InvokeFunction(int32_t function_index, std::span<const Value> args);

  const std::shared_ptr<const Executable>& executable() const { return executable_; }

  // The allocator of every tensor and storage this VM's programs allocate
  // (vm/memory_pool.h): blocks freed by one call are reused by the next.
  MemoryPool& memory_pool() { return *memory_pool_; }
  // Memory counters of the last Invoke (system bytes, allocations, peak live
  // bytes and the lower bound), measured from its start to its return.
  const MemoryStats& last_memory_stats() const { return last_memory_stats_; }
  // Device work of the last Invoke, summed over the executable's devices:
  // host<->device copies and bytes, kernel launches and the devices' own time
  // (simulated for sim_npu). Commands still running when Invoke returned (its
  // result stayed on a device) count in the next call's numbers.
  const DeviceStats& last_device_stats() const { return last_device_stats_; }

  // Bytecode is a full programming language: a hostile or damaged executable can
  // loop forever, which verification cannot rule out. These two controls bound a
  // call. Both are checked at every backward jump and every bytecode-to-bytecode
  // call, the only ways a program can run for longer than its length.
  //
  // Once `*flag` becomes true (set from any thread), the running Invoke fails
  // with "cancelled". Null (the default) disables the check. The flag must
  // outlive the calls that use it.
  void SetCancellationFlag(const std::atomic<bool>* flag) { cancel_flag_ = flag; }
  // At most `budget` backward jumps and bytecode calls per Invoke; -1 (the
  // default) is unlimited. Exceeding it fails with "step budget exhausted".
  void SetStepBudget(int64_t budget) { step_budget_ = budget; }

  // Reports every instruction of later calls to `profiler` (vm/profiler.h);
  // nullptr (the default) detaches it. A profiled call runs a separately
  // compiled copy of the interpreter loop, so without a profiler the loop
  // contains no profiling code. An error if the profiler records another
  // executable. The profiler must outlive the calls it records.
  Status SetProfiler(Profiler* profiler);
  Profiler* profiler() const { return profiler_; }

 private:
  // What a Call needs of its callee, resolved once per VM (the function table
  // entries are large and a Call would otherwise chase two of their fields).
  struct CallTarget {
    FunctionKind kind;
    union {
      LibraryFn fn;           // library functions
      StrataKernelFn kernel;  // compiled kernels
    };
    union {
      void* context;               // library functions
      StrataVmKernelFn vm_kernel;  // compiled kernels: the VM entry, or null
    };
    const VMFunction* function;  // every kind
  };
  static_assert(sizeof(CallTarget) == 32, "a CallTarget is indexed with a shift");

  struct Frame {
    const VMFunction* function;
    const int64_t* return_pc;  // in the caller
    int64_t base;              // first register of this frame on the stack
    int64_t caller_dst;        // caller register that receives the result
  };

  Status Run(const VMFunction& entry, Value* out_result);
  // The interpreter loop; kProfile reports each instruction to profiler_.
  template <bool kProfile>
  Status RunLoop(const VMFunction& entry, Value* out_result);
  // A kernel call through the main entry with any operands (Shapes expand);
  // out of line: the interpreter loop keeps only the common calls.
  [[gnu::noinline]] Status CallKernel(const VMFunction& callee, const int64_t* operands, int64_t nargs,
                                      const Value* regs);
  // The callees of a Call instruction at `operands` (virtual_machine.cc): the
  // result goes to register `dst` unless it is kVoidRegister.
  // False, with *error set, when the library function failed. (Not a Status
  // result: on this, the hottest path, returning one from the inlined helper
  // cost 0.7 ns per call, 15% of a library call in benchmarks/vm_dispatch.)
  bool CallLibraryTarget(const CallTarget& callee, const int64_t* operands, int64_t nargs, Value* regs, int64_t dst,
                         Status* error);
  Status CallKernelTarget(const CallTarget& callee, const int64_t* operands, int64_t nargs, Value* regs, int64_t dst);
  Status LaunchDeviceTarget(const CallTarget& callee, const int64_t* operands, int64_t nargs, Value* regs, int64_t dst);
  // Enters the bytecode function the Call at `pc` calls; *regs follows the frame.
  Status PushFrame(const VMFunction& function, const int64_t* pc, Value** regs);
  Status InstructionError(const Frame& frame, const int64_t* pc, const Status& cause) const;
  // Charges one step; an error when the budget is spent or the call was cancelled.
  Status Step(const int64_t* pc);
  void Reset();

  std::shared_ptr<const Executable> executable_;
  std::shared_ptr<MemoryPool> memory_pool_;
  std::vector<StrataDeviceArg> device_args_;  // reused by every device call
  // This VM's queue on each of the executable's devices (vm/plugged_device.h),
  // created by its first call; 0 where the device refused one (its own queue is used).
  std::vector<StrataDeviceQueue> device_queues_;
  MemoryStats last_memory_stats_;
  DeviceStats last_device_stats_;
  DeviceStats DeviceCounters() const;
  std::vector<Value> registers_;
  std::vector<Frame> frames_;
  std::vector<CallTarget> call_targets_;  // by function index
  const std::atomic<bool>* cancel_flag_ = nullptr;
  int64_t step_budget_ = -1;
  int64_t steps_left_ = -1;  // of the running Invoke
  Profiler* profiler_ = nullptr;
};

}  // namespace strata::vm
