// The interpreter loop: a switch over the four opcodes of vm/bytecode/bytecode.h.
//
// Invariant: every register above the live frames is Null. Ret clears the frame
// it pops and an error resets the whole stack, so tensors do not outlive the
// call that made them and a VM can run again after any failure.
//
// The loop is written for the cost of a library call (docs/vm.md has the
// numbers): it runs the executable's pre-decoded dispatch_code, where every
// operand is a register index or the address of a Value (one compare, nothing
// constructed); the callee's kind and function pointer come from a 32-byte
// CallTarget; the argument array lives on the stack; a kernel's arguments are
// written straight from its operands into arrays on the stack, one slot per
// operand (MarshalKernelArgsDirect); everything rare (more than kMaxInlineArgs
// operands, kernel calls with Shape operands or bad values, errors) is out of line. It is a template on profiling, so
// the unprofiled instantiation contains no profiling code at all.
#include "vm/virtual_machine.h"

#include <string>

#include "support/printable_text.h"
#include "vm/bytecode/bytecode.h"
#include "vm/kernel_runtime.h"
#include "vm/plugged_device.h"
#include "vm/profiler.h"

namespace strata::vm {
namespace {

// The Value a pre-decoded operand word denotes (kDispatchValueTag): a register
// of the current frame, or a Value the executable holds (a constant, an
// immediate, a function).
[[gnu::always_inline]] inline const Value* OperandValue(int64_t word, const Value* regs) {
  return word >= 0 ? regs + word : reinterpret_cast<const Value*>(static_cast<uint64_t>(word) & ~kDispatchValueTag);
}

// A library call with more than kMaxInlineArgs operands: the argument array on
// the heap. Out of line, so the common path constructs no vector.
[[gnu::noinline]] Status CallLibraryOnHeap(LibraryFn fn, void* context, const int64_t* operands, int64_t nargs,
                                           const Value* regs, Value* result) {
  std::vector<const Value*> argv(static_cast<size_t>(nargs));
  for (int64_t i = 0; i < nargs; ++i) argv[i] = OperandValue(operands[i], regs);
  return fn(context, argv.data(), static_cast<int32_t>(nargs), result);
}

// Calls a library function on the Values its operands denote; `result` starts
// Null and receives its result.
[[gnu::always_inline]] inline Status CallLibrary(LibraryFn fn, void* context, const int64_t* operands, int64_t nargs,
                                                 const Value* regs, Value* result) {
  constexpr int kMaxArgs = VirtualMachine::kMaxInlineArgs;
  if (nargs > kMaxArgs) [[unlikely]]
    return CallLibraryOnHeap(fn, context, operands, nargs, regs, result);
  const Value* argv[kMaxArgs];
  for (int64_t i = 0; i < nargs; ++i) argv[i] = OperandValue(operands[i], regs);
  return fn(context, argv, static_cast<int32_t>(nargs), result);
}

// The common kernel call in one pass, straight from the operands into arrays
// on the caller's stack: each operand (register, constant or immediate) is a
// CPU Tensor, an Int or a Float and fills the slot of its own index, so every
// store goes to an address known before any operand is read. When all are
// tensors (call_tir's usual call) no type code is written: the kernel reads the
// shared kAllTensorCodes. Anything else (a Shape, which expands to one slot per
// dimension; a tensor on another device; a value no kernel takes; more than
// kMaxDirectKernelArgs operands) goes to MarshalKernelArgs, which marshals it
// or reports it exactly as before. Nothing is skipped: the kernel still checks
// the count, every code, and each tensor's rank, dtype, strides and shape.
//
// Measured against a frame prepared per call site (built at load with the
// constants in place, copied into each VM, the call rewriting only the slots
// of its registers): that was slower (11.3 vs about 7 ns per call in
// vm_dispatch's kernel chain), because finding the site's frame and the slot of
// each register put dependent loads in front of every store the kernel then
// reads; see docs/vm.md.
constexpr int kMaxDirectKernelArgs = 16;
// The type codes of a call whose arguments are all tensors: read-only, shared,
// so such a call writes no codes at all.
constexpr int32_t kAllTensorCodes[kMaxDirectKernelArgs] = {
    STRATA_ARG_TENSOR, STRATA_ARG_TENSOR, STRATA_ARG_TENSOR, STRATA_ARG_TENSOR, STRATA_ARG_TENSOR, STRATA_ARG_TENSOR,
    STRATA_ARG_TENSOR, STRATA_ARG_TENSOR, STRATA_ARG_TENSOR, STRATA_ARG_TENSOR, STRATA_ARG_TENSOR, STRATA_ARG_TENSOR,
    STRATA_ARG_TENSOR, STRATA_ARG_TENSOR, STRATA_ARG_TENSOR, STRATA_ARG_TENSOR};

// Fills args (and codes, unless all are tensors) for the operands; returns the
// type codes to pass (kAllTensorCodes or `codes`), or null for the generic path.
[[gnu::always_inline]] inline const int32_t* MarshalKernelArgsDirect(const int64_t* operands, int64_t nargs,
                                                                     const Value* regs, StrataKernelArg* args,
                                                                     int32_t* codes) {
  if (nargs > kMaxDirectKernelArgs) [[unlikely]]
    return nullptr;
  int64_t i = 0;
  // Tensors only, the common case: no type codes to write.
  for (; i < nargs; ++i) {
    const Value& v = *OperandValue(operands[i], regs);
    if (!v.is_tensor()) [[unlikely]]
      break;
    DLTensor* dl = v.tensor()->dl();
    if (dl->device.device_type != kDLCPU) [[unlikely]]
      return nullptr;
    args[i].tensor = dl;
  }
  if (i == nargs) [[likely]]
    return kAllTensorCodes;
  for (int64_t j = 0; j < i; ++j) codes[j] = STRATA_ARG_TENSOR;
  for (; i < nargs; ++i) {
    const Value& v = *OperandValue(operands[i], regs);
    if (v.is_tensor()) {
      DLTensor* dl = v.tensor()->dl();
      if (dl->device.device_type != kDLCPU) return nullptr;
      args[i].tensor = dl;
      codes[i] = STRATA_ARG_TENSOR;
    } else if (v.is_int()) {
      args[i].i64 = v.int_value();
      codes[i] = STRATA_ARG_INT;
    } else if (v.is_float()) {
      args[i].f64 = v.float_value();
      codes[i] = STRATA_ARG_FLOAT;
    } else {
      return nullptr;
    }
  }
  return codes;
}

// The error of a library function: its message, after the function's name
// unless the message starts with it already, as the library kernels' do
// ("strata.blas.matmul: inner dimensions differ ..."), so that a user's
// function that says only "row 3 is not finite" is still named. Builtins keep
// their messages: theirs name the builtin, or the program's parameter through
// the compiler's err_ctx ("main: parameter 'x': expected ...").
[[gnu::noinline]] Status LibraryFailure(const VMFunction& callee, Status status) {
  const std::string& name = callee.name;
  if (name.starts_with("vm.builtin.") || status.message().starts_with(name)) return status;
  return std::move(status).WithContext("library function '" + name + "' failed: ");
}

// The error of a kernel that returned `rc` != 0, with the message it recorded.
[[gnu::noinline]] Status KernelFailure(const VMFunction& callee, int32_t rc) {
  std::string message = TakeKernelError();
  if (message.empty()) message = "returned error code " + std::to_string(rc) + " without a message";
  return Status(ErrorStatus() << "compiled kernel '" << callee.name << "' failed: " << message);
}

// Writes the C arguments of a kernel call into args/codes: Tensor -> tensor,
// Int and immediates -> i64, Float -> f64, Shape -> one i64 per dimension.
// Writes at most `capacity` and sets *out_count to the number needed, which
// exceeds `capacity` when Shapes expand past it (the caller then retries with
// room for all). Errors name the kernel and the operand.
Status MarshalKernelArgs(const VMFunction& callee, const int64_t* operands, int64_t nargs, const Value* regs,
                         StrataKernelArg* args, int32_t* codes, int64_t capacity, int64_t* out_count) {
  int64_t n = 0;
  auto push = [&](int32_t code, StrataKernelArg arg) {
    if (n < capacity) {
      codes[n] = code;
      args[n] = arg;
    }
    ++n;
  };
  for (int64_t i = 0; i < nargs; ++i) {
    const Value& v = *OperandValue(operands[i], regs);
    if (v.is_tensor()) {
      if (v.tensor()->device().device_type != kDLCPU) [[unlikely]] {
        return Status(ErrorStatus() << "compiled kernel '" << callee.name << "' argument " << i << ": the tensor is on "
                                    << DeviceName(v.tensor()->device())
                                    << "; compiled kernels run on the host and need it there");
      }
      push(STRATA_ARG_TENSOR, StrataKernelArg{.tensor = v.tensor()->dl()});
    } else if (v.is_int()) {  // also every immediate operand
      push(STRATA_ARG_INT, StrataKernelArg{.i64 = v.int_value()});
    } else if (v.is_float()) {
      push(STRATA_ARG_FLOAT, StrataKernelArg{.f64 = v.float_value()});
    } else if (v.is_shape()) {
      for (int64_t d : v.shape()) push(STRATA_ARG_INT, StrataKernelArg{.i64 = d});
    } else if (v.is_function() && operands[i] < 0) {  // a function operand, not a register holding one
      return Status(ErrorStatus() << "compiled kernel '" << callee.name << "' argument " << i
                                  << ": cannot pass a function");
    } else {
      return Status(ErrorStatus() << "compiled kernel '" << callee.name << "' argument " << i << ": cannot pass "
                                  << v.Describe() << " (expected a Tensor, Shape, Int or Float)");
    }
  }
  *out_count = n;
  return Status::Ok();
}

// The arguments of a device kernel: tensors on that device as buffer handle +
// offset + shape, Ints (and Shape dims) as i64, Floats as f64.
Status MarshalDeviceArgs(const VMFunction& callee, const int64_t* operands, int64_t nargs, const Value* regs,
                         std::vector<StrataDeviceArg>* out) {
  const DLDevice device = callee.device->dl_device();
  for (int64_t i = 0; i < nargs; ++i) {
    const Value& v = *OperandValue(operands[i], regs);
    StrataDeviceArg arg{};
    if (v.is_tensor()) {
      const Tensor& t = *v.tensor();
      if (!(t.device() == device)) {
        return Status(ErrorStatus() << "device kernel '" << callee.symbol << "' on '" << callee.device->name()
                                    << "' argument " << i << ": the tensor is on " << DeviceName(t.device())
                                    << ", not on the device (copy it with to_device)");
      }
      if (t.ndim() > STRATA_DEVICE_MAX_NDIM) {
        return Status(ErrorStatus() << "device kernel '" << callee.symbol << "' argument " << i << ": rank " << t.ndim()
                                    << " is more than the device ABI's " << STRATA_DEVICE_MAX_NDIM);
      }
      arg.kind = STRATA_DEVICE_ARG_BUFFER;
      arg.value.buffer.buffer = static_cast<StrataDeviceBuffer>(reinterpret_cast<uintptr_t>(t.data()));
      arg.value.buffer.byte_offset = t.dl()->byte_offset;
      arg.value.buffer.shape = t.shape().data();
      arg.value.buffer.ndim = t.ndim();
      arg.value.buffer.dtype = t.dl()->dtype;
      out->push_back(arg);
    } else if (v.is_int()) {
      arg.kind = STRATA_DEVICE_ARG_I64;
      arg.value.i64 = v.int_value();
      out->push_back(arg);
    } else if (v.is_float()) {
      arg.kind = STRATA_DEVICE_ARG_F64;
      arg.value.f64 = v.float_value();
      out->push_back(arg);
    } else if (v.is_shape()) {
      for (int64_t d : v.shape()) {
        arg.kind = STRATA_DEVICE_ARG_I64;
        arg.value.i64 = d;
        out->push_back(arg);
      }
    } else {
      return Status(ErrorStatus() << "device kernel '" << callee.symbol << "' argument " << i << ": cannot pass "
                                  << v.Describe() << " (expected a Tensor, Shape, Int or Float)");
    }
  }
  return Status::Ok();
}

// The truth of an If condition: an Int, or a 0-d bool / integer CPU tensor.
bool ConditionTruth(const Value& c, bool* out_truth) {
  if (c.is_int()) {
    *out_truth = c.int_value() != 0;
    return true;
  }
  if (!c.is_tensor()) return false;
  const Tensor* t = c.tensor();
  DataType dtype = t->dtype();
  if (t->ndim() != 0 || t->device().device_type != kDLCPU || !(dtype.is_integral() || dtype.is_bool())) return false;
  const void* p = t->data();
  switch (dtype.bytes()) {
    case 1: *out_truth = *static_cast<const uint8_t*>(p) != 0; return true;
    case 2: *out_truth = *static_cast<const uint16_t*>(p) != 0; return true;
    case 4: *out_truth = *static_cast<const uint32_t*>(p) != 0; return true;
    case 8: *out_truth = *static_cast<const uint64_t*>(p) != 0; return true;
    default: return false;
  }
}

}  // namespace

VirtualMachine::VirtualMachine(std::shared_ptr<const Executable> executable)
    : executable_(std::move(executable)), memory_pool_(MemoryPool::Create()) {
  frames_.reserve(16);
  call_targets_.reserve(executable_->functions().size());
  for (const VMFunction& f : executable_->functions()) {
    CallTarget target{};
    target.kind = f.kind;
    if (f.kind == FunctionKind::kCompiledKernel) {
      target.kernel = f.kernel;
      target.vm_kernel = f.vm_kernel;
    } else {
      target.fn = f.library.fn;
      target.context = f.library.context;
    }
    target.function = &f;
    call_targets_.push_back(target);
  }
}

VirtualMachine::~VirtualMachine() {
  std::span<const std::shared_ptr<PluggedDevice>> devices = executable_->plugged_devices();
  for (size_t i = 0; i < device_queues_.size(); ++i) {
    if (device_queues_[i] != 0) devices[i]->DestroyQueue(device_queues_[i]);
  }
}

Status VirtualMachine::SetProfiler(Profiler* profiler) {
  if (profiler != nullptr && &profiler->executable() != executable_.get()) {
    return Status::Error("the profiler records a different executable than this VM runs");
  }
  profiler_ = profiler;
  return Status::Ok();
}

StatusOr<Value> VirtualMachine::Invoke(std::string_view function_name, std::span<const Value> args) {
  std::optional<int32_t> index = executable_->FindEntryPoint(function_name);
  if (!index) {
    return Status(ErrorStatus(StatusCode::kNotFound)
                  << "no entry point named '" << PrintableText(function_name, 256)
                  << "' in the executable (entry points: " << executable_->EntryPointNames() << ")");
  }
  return InvokeFunction(*index, args);
}

StatusOr<Value> VirtualMachine::InvokeFunction(int32_t function_index, std::span<const Value> args) {
  if (!executable_->resolved()) {
    return Status(ErrorStatus(StatusCode::kFailedPrecondition)
                  << "the executable was loaded without resolving its functions "
                     "(LoadOptions::resolve = false) and cannot be run");
  }
  std::span<const VMFunction> functions = executable_->functions();
  if (function_index < 0 || static_cast<size_t>(function_index) >= functions.size()) {
    return Status(ErrorStatus(StatusCode::kOutOfRange)
                  << "function index " << function_index << " out of range (" << functions.size() << " functions)");
  }
  const VMFunction& f = functions[static_cast<size_t>(function_index)];
  if (f.kind != FunctionKind::kBytecode) {
    return Status(ErrorStatus() << "function '" << f.name << "' (" << FunctionKindName(f.kind)
                                << ") cannot be invoked; only bytecode functions can");
  }
  if (args.size() != static_cast<size_t>(f.num_params)) {
    std::string params;
    for (const std::string& p : f.param_names) params += (params.empty() ? "" : ", ") + p;
    return Status(ErrorStatus() << "function '" << f.name << "' expects " << f.num_params << " argument"
                                << (f.num_params == 1 ? "" : "s") << " (" << params << "), got " << args.size());
  }
  if (registers_.size() < static_cast<size_t>(f.num_registers)) registers_.resize(f.num_registers);
  for (size_t i = 0; i < args.size(); ++i) registers_[i] = args[i];
  frames_.clear();
  frames_.push_back(Frame{&f, nullptr, 0, kVoidRegister});
  steps_left_ = step_budget_;
  MemoryPoolScope pool_scope(memory_pool_.get());
  const bool has_devices = !executable_->plugged_devices().empty();
  if (has_devices && device_queues_.empty()) {
    for (const auto& device : executable_->plugged_devices()) device_queues_.push_back(device->CreateQueue());
  }
  DeviceScope device_scope(executable_->plugged_devices(), device_queues_);
  memory_pool_->BeginInterval();
  const DeviceStats devices_before = has_devices ? DeviceCounters() : DeviceStats();
  Value result;
  Status status = Run(f, &result);
  last_memory_stats_ = memory_pool_->Snapshot();
  if (has_devices) {
    last_device_stats_ = DeviceCounters();
    last_device_stats_ -= devices_before;
  }
  if (!status.ok()) {
    Reset();
    // Messages quote string constants of the file (err_ctx); keep them one line.
    Status printable = Status::Error(status.code(), PrintableText(status.message()));
    return status.is_signature_mismatch() ? std::move(printable).MarkSignatureMismatch() : printable;
  }
  return result;
}

DeviceStats VirtualMachine::DeviceCounters() const {
  DeviceStats total;
  for (const auto& device : executable_->plugged_devices()) {
    StatusOr<DeviceStats> stats = device->Counters();
    if (!stats.ok()) continue;  // counters are diagnostics: a failure must not fail the call
    total.host_to_device_copies += stats->host_to_device_copies;
    total.host_to_device_bytes += stats->host_to_device_bytes;
    total.device_to_host_copies += stats->device_to_host_copies;
    total.device_to_host_bytes += stats->device_to_host_bytes;
    total.kernel_launches += stats->kernel_launches;
    total.device_time_ns += stats->device_time_ns;
  }
  return total;
}

void VirtualMachine::Reset() {
  frames_.clear();
  for (Value& r : registers_) r = Value();
  // Commands the failed call queued finish now, so their failures (if any) are
  // not reported to the next call.
  for (const auto& device : executable_->plugged_devices()) (void)device->Synchronize();
}

Status VirtualMachine::InstructionError(const Frame& frame, const int64_t* pc, const Status& cause) const {
  const VMFunction* f = frame.function;
  auto index = f - executable_->functions().data();
  auto word = pc - f->dispatch_code.data();
  return Status(cause).WithContext("functions[" + std::to_string(index) + "] '" + f->name + "': instruction at word " +
                                   std::to_string(word) + " (" + std::string(OpcodeName(static_cast<Opcode>(*pc))) +
                                   "): ");
}

Status VirtualMachine::Step(const int64_t* pc) {
  if (cancel_flag_ != nullptr && cancel_flag_->load(std::memory_order_relaxed)) {
    return InstructionError(frames_.back(), pc, ErrorStatus(StatusCode::kCancelled) << "cancelled");
  }
  if (steps_left_ >= 0 && steps_left_-- == 0) {
    return InstructionError(frames_.back(), pc,
                            ErrorStatus(StatusCode::kResourceExhausted)
                                << "step budget exhausted (" << step_budget_ << " backward jumps and calls)");
  }
  return Status::Ok();
}

Status VirtualMachine::CallKernel(const VMFunction& callee, const int64_t* operands, int64_t nargs, const Value* regs) {
  // One pass into arrays on the stack; a call whose Shapes expand past them
  // (rare) is marshalled again into arrays of the size the first pass counted.
  constexpr int kInlineKernelArgs = 64;
  StrataKernelArg inline_args[kInlineKernelArgs];
  int32_t inline_codes[kInlineKernelArgs];
  StrataKernelArg* args = inline_args;
  int32_t* codes = inline_codes;
  std::vector<StrataKernelArg> heap_args;
  std::vector<int32_t> heap_codes;
  int64_t count = 0;
  STRATA_RETURN_IF_ERROR(MarshalKernelArgs(callee, operands, nargs, regs, args, codes, kInlineKernelArgs, &count));
  if (count > kInlineKernelArgs) [[unlikely]] {
    if (count > INT32_MAX)
      return Status(ErrorStatus() << "compiled kernel '" << callee.name << "': too many arguments");
    heap_args.resize(static_cast<size_t>(count));
    heap_codes.resize(static_cast<size_t>(count));
    args = heap_args.data();
    codes = heap_codes.data();
    STRATA_RETURN_IF_ERROR(MarshalKernelArgs(callee, operands, nargs, regs, args, codes, count, &count));
  }
  int32_t rc = callee.kernel(args, codes, static_cast<int32_t>(count));
  if (rc == 0) [[likely]]
    return Status::Ok();
  return KernelFailure(callee, rc);
}

// ---- the four kinds of callee of a Call instruction ----------------------
// Inlined into the interpreter loop: each is a compare and a branch on success,
// with everything else out of line.

[[gnu::always_inline]] inline bool VirtualMachine::CallLibraryTarget(const CallTarget& callee, const int64_t* operands,
                                                                     int64_t nargs, Value* regs, int64_t dst,
                                                                     Status* error) {
  Value result;
  Status status = CallLibrary(callee.fn, callee.context, operands, nargs, regs, &result);
  if (!status.ok()) [[unlikely]] {
    *error = LibraryFailure(*callee.function, std::move(status));
    return false;
  }
  if (dst != kVoidRegister) regs[dst] = std::move(result);
  return true;
}

[[gnu::always_inline]] inline Status VirtualMachine::CallKernelTarget(const CallTarget& callee, const int64_t* operands,
                                                                      int64_t nargs, Value* regs, int64_t dst) {
  if (callee.vm_kernel != nullptr) [[likely]] {
    // The kernel reads its operands in place (kernel_abi.h).
    const int32_t rc = callee.vm_kernel(regs, operands, static_cast<int32_t>(nargs));
    if (rc != 0) [[unlikely]] {
      Status status = rc == STRATA_VM_ENTRY_FALLBACK ? CallKernel(*callee.function, operands, nargs, regs)
                                                     : KernelFailure(*callee.function, rc);
      if (!status.ok()) return status;
    }
  } else {
    StrataKernelArg args[kMaxDirectKernelArgs];
    int32_t codes[kMaxDirectKernelArgs];
    if (const int32_t* direct_codes = MarshalKernelArgsDirect(operands, nargs, regs, args, codes)) {
      const int32_t rc = callee.kernel(args, direct_codes, static_cast<int32_t>(nargs));
      if (rc != 0) [[unlikely]]
        return KernelFailure(*callee.function, rc);
    } else if (Status status = CallKernel(*callee.function, operands, nargs, regs); !status.ok()) {
      return status;
    }
  }
  // A kernel returns nothing: its outputs are the tensors passed in.
  if (dst != kVoidRegister) regs[dst] = Value();
  return Status::Ok();
}

inline Status VirtualMachine::LaunchDeviceTarget(const CallTarget& callee, const int64_t* operands, int64_t nargs,
                                                 Value* regs, int64_t dst) {
  const VMFunction& function = *callee.function;
  device_args_.clear();
  STRATA_RETURN_IF_ERROR(MarshalDeviceArgs(function, operands, nargs, regs, &device_args_));
  STRATA_RETURN_IF_ERROR(function.device->Launch(function.device_kernel, function.symbol, device_args_));
  // Asynchronous: the outputs are the device tensors passed in.
  if (dst != kVoidRegister) regs[dst] = Value();
  return Status::Ok();
}

// A bytecode callee: its frame goes above the caller's registers, its
// arguments into its first registers; *regs then points at them.
inline Status VirtualMachine::PushFrame(const VMFunction& function, const int64_t* pc, Value** regs) {
  const Frame& caller = frames_.back();
  if (frames_.size() >= static_cast<size_t>(kMaxCallDepth)) {
    return InstructionError(caller, pc,
                            ErrorStatus(StatusCode::kResourceExhausted)
                                << "call stack overflow calling '" << function.name << "' (depth " << kMaxCallDepth
                                << ")");
  }
  const int64_t base = caller.base + caller.function->num_registers;
  const int64_t top = base + function.num_registers;
  if (top > kMaxStackRegisters) {
    return InstructionError(caller, pc,
                            ErrorStatus(StatusCode::kResourceExhausted)
                                << "register stack overflow calling '" << function.name << "' (" << top
                                << " registers)");
  }
  if (registers_.size() < static_cast<size_t>(top)) {
    registers_.resize(static_cast<size_t>(top));
    *regs = registers_.data() + caller.base;
  }
  const int64_t nargs = pc[3];
  const int64_t* const operands = pc + 4;
  Value* callee_regs = registers_.data() + base;
  for (int64_t i = 0; i < nargs; ++i) callee_regs[i] = *OperandValue(operands[i], *regs);
  frames_.push_back(Frame{&function, operands + nargs, base, pc[1]});
  *regs = callee_regs;
  return Status::Ok();
}

Status VirtualMachine::Run(const VMFunction& entry, Value* out_result) {
  if (profiler_ == nullptr) [[likely]]
    return RunLoop<false>(entry, out_result);
  profiler_->BeginRun(static_cast<int32_t>(&entry - executable_->functions().data()), Profiler::Now());
  Status status = RunLoop<true>(entry, out_result);
  profiler_->EndRun(Profiler::Now());
  return status;
}

template <bool kProfile>
Status VirtualMachine::RunLoop(const VMFunction& entry, Value* out_result) {
  const CallTarget* const targets = call_targets_.data();
  // Whether backward jumps and bytecode calls charge a step: fixed for the call
  // (steps_left_ only counts down to the error that ends it).
  const bool bounded = cancel_flag_ != nullptr || steps_left_ >= 0;
  const int64_t* pc = entry.dispatch_code.data();
  Value* regs = registers_.data();
  // Profiling reads the clock once per instruction: its end is the next one's
  // start, so the instructions' times add up to the run's.
  [[maybe_unused]] Profiler* const profiler = profiler_;
  [[maybe_unused]] int64_t start = kProfile ? Profiler::Now() : 0;
  [[maybe_unused]] auto record = [&](InstructionKind kind, int64_t callee) {
    const int64_t end = Profiler::Now();
    profiler->RecordInstruction(kind, static_cast<int32_t>(callee), start, end);
    start = end;
    return end;
  };

  for (;;) {
    switch (static_cast<Opcode>(*pc)) {
      case Opcode::kCall: {
        const int64_t func = pc[2];
        const CallTarget& callee = targets[func];
        const int64_t nargs = pc[3];
        const int64_t* const operands = pc + 4;
        // The kinds in the order they are common, each returning to the loop on its own.
        if (callee.kind == FunctionKind::kLibrary) [[likely]] {
          if (Status error; !CallLibraryTarget(callee, operands, nargs, regs, pc[1], &error)) [[unlikely]]
            return InstructionError(frames_.back(), pc, error);
          if constexpr (kProfile) record(InstructionKind::kCallLibrary, func);
          pc = operands + nargs;
          break;
        }
        if (callee.kind == FunctionKind::kCompiledKernel) {
          if (Status status = CallKernelTarget(callee, operands, nargs, regs, pc[1]); !status.ok()) [[unlikely]]
            return InstructionError(frames_.back(), pc, status);
          if constexpr (kProfile) record(InstructionKind::kCallCompiledKernel, func);
          pc = operands + nargs;
          break;
        }
        if (callee.kind == FunctionKind::kDevice) {
          if (Status status = LaunchDeviceTarget(callee, operands, nargs, regs, pc[1]); !status.ok()) [[unlikely]]
            return InstructionError(frames_.back(), pc, status);
          if constexpr (kProfile) record(InstructionKind::kCallDevice, func);
          pc = operands + nargs;
          break;
        }
        if (bounded) STRATA_RETURN_IF_ERROR(Step(pc));
        STRATA_RETURN_IF_ERROR(PushFrame(*callee.function, pc, &regs));
        pc = callee.function->dispatch_code.data();
        if constexpr (kProfile) {
          const int64_t call_start = start;
          record(InstructionKind::kCallBytecode, func);
          profiler->EnterBytecodeCall(static_cast<int32_t>(func), call_start);
        }
        break;
      }
      case Opcode::kRet: {
        Value result = std::move(regs[pc[1]]);
        const Frame frame = frames_.back();
        frames_.pop_back();
        for (int32_t i = 0; i < frame.function->num_registers; ++i) regs[i] = Value();
        if (frames_.empty()) {
          *out_result = std::move(result);
          if constexpr (kProfile) record(InstructionKind::kRet, -1);
          return Status::Ok();
        }
        regs = registers_.data() + frames_.back().base;
        if (frame.caller_dst != kVoidRegister) regs[frame.caller_dst] = std::move(result);
        pc = frame.return_pc;
        if constexpr (kProfile) profiler->ExitBytecodeCall(record(InstructionKind::kRet, -1));
        break;
      }
      case Opcode::kGoto:
        if (pc[1] <= 0 && bounded) STRATA_RETURN_IF_ERROR(Step(pc));
        pc += pc[1];
        if constexpr (kProfile) record(InstructionKind::kGoto, -1);
        break;
      case Opcode::kIf: {
        const Value& condition = regs[pc[1]];
        bool truth;
        if (condition.is_int()) [[likely]] {
          truth = condition.int_value() != 0;
        } else if (!ConditionTruth(condition, &truth)) {
          return InstructionError(frames_.back(), pc,
                                  ErrorStatus() << "condition register r" << pc[1] << " holds " << condition.Describe()
                                                << "; expected an Int or a 0-d bool or integer tensor");
        }
        if (!truth && pc[2] <= 0 && bounded) STRATA_RETURN_IF_ERROR(Step(pc));
        pc += truth ? 3 : pc[2];
        if constexpr (kProfile) record(InstructionKind::kIf, -1);
        break;
      }
      default:
        return InstructionError(frames_.back(), pc, ErrorStatus(StatusCode::kInternal) << "invalid opcode " << *pc);
    }
  }
}

}  // namespace strata::vm
