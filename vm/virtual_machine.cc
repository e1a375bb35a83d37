// The interpreter loop: a switch over the four opcodes of vm/bytecode.h.
//
// Invariant: every register above the live frames is Null. Ret clears the frame
// it pops and an error resets the whole stack, so tensors do not outlive the
// call that made them and a VM can run again after any failure.
#include "vm/virtual_machine.h"

#include <new>
#include <string>

#include "support/printable_text.h"
#include "vm/bytecode.h"
#include "vm/kernel_runtime.h"

namespace strata::vm {
namespace {

// The Value an operand denotes. Immediates and functions are built in
// `scratch` (raw storage; Int and Function Values need no destructor).
inline const Value* OperandValue(int64_t word, const Value* regs, const Value* consts, Value* scratch) {
  const int64_t v = DecodeOperandValue(word);
  switch (DecodeOperandKind(word)) {
    case OperandKind::kRegister: return regs + v;
    case OperandKind::kConstant: return consts + v;
    case OperandKind::kImmediate: return new (scratch) Value(Value::FromInt(v));
    case OperandKind::kFunction: return new (scratch) Value(Value::FromFunction(v));
  }
  return new (scratch) Value();  // unreachable after verification
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

VirtualMachine::VirtualMachine(std::shared_ptr<const Executable> executable) : executable_(std::move(executable)) {
  frames_.reserve(16);
}

StatusOr<Value> VirtualMachine::Invoke(std::string_view function_name, std::span<const Value> args) {
  std::optional<int32_t> index = executable_->FindEntryPoint(function_name);
  if (!index) {
    return Status(ErrorStatus() << "no entry point named '" << PrintableText(function_name, 256)
                         << "' in the executable (entry points: " << executable_->EntryPointNames() << ")");
  }
  return InvokeFunction(*index, args);
}

StatusOr<Value> VirtualMachine::InvokeFunction(int32_t function_index, std::span<const Value> args) {
  if (!executable_->resolved()) {
    return Status(ErrorStatus() << "the executable was loaded without resolving its functions "
                            "(LoadOptions::resolve = false) and cannot be run");
  }
  std::span<const VMFunction> functions = executable_->functions();
  if (function_index < 0 || static_cast<size_t>(function_index) >= functions.size()) {
    return Status(ErrorStatus() << "function index " << function_index << " out of range (" << functions.size()
                         << " functions)");
  }
  const VMFunction& f = functions[static_cast<size_t>(function_index)];
  if (f.kind != FunctionKind::kBytecode) {
    return Status(ErrorStatus() << "function '" << f.name << "' is a " << FunctionKindName(f.kind)
                         << " function; only bytecode functions can be invoked");
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
  Value result;
  Status status = Run(f, &result);
  if (!status.ok()) {
    Reset();
    // Messages quote string constants of the file (err_ctx); keep them one line.
    return Status::Error(PrintableText(status.message()));
  }
  return result;
}

void VirtualMachine::Reset() {
  frames_.clear();
  for (Value& r : registers_) r = Value();
}

Status VirtualMachine::InstructionError(const Frame& frame, const int64_t* pc, const Status& cause) const {
  const VMFunction* f = frame.function;
  auto index = f - executable_->functions().data();
  auto word = pc - f->code.data();
  return Status(ErrorStatus() << "functions[" << index << "] '" << f->name << "': instruction at word " << word << " ("
                       << OpcodeName(static_cast<Opcode>(*pc)) << "): " << cause.message());
}

Status VirtualMachine::Step(const int64_t* pc) {
  if (cancel_flag_ != nullptr && cancel_flag_->load(std::memory_order_relaxed)) {
    return InstructionError(frames_.back(), pc, ErrorStatus() << "cancelled");
  }
  if (steps_left_ >= 0 && steps_left_-- == 0) {
    return InstructionError(frames_.back(), pc,
                            ErrorStatus() << "step budget exhausted (" << step_budget_
                                          << " backward jumps and calls)");
  }
  return Status::Ok();
}

Status VirtualMachine::CallKernel(const VMFunction& callee, const int64_t* operands, int64_t nargs,
                                  const Value* regs) {
  const Value* consts = executable_->constants().data();
  // Count the C arguments first: a Shape expands to one i64 per dimension.
  int64_t count = 0;
  for (int64_t i = 0; i < nargs; ++i) {
    int64_t word = operands[i];
    OperandKind kind = DecodeOperandKind(word);
    if (kind == OperandKind::kRegister || kind == OperandKind::kConstant) {
      const Value& v = kind == OperandKind::kRegister ? regs[DecodeOperandValue(word)] : consts[DecodeOperandValue(word)];
      if (v.is_shape()) {
        count += static_cast<int64_t>(v.shape().size());
        continue;
      }
      if (!v.is_tensor() && !v.is_int() && !v.is_float()) {
        return Status(ErrorStatus() << "kernel '" << callee.name << "' argument " << i << ": cannot pass "
                             << v.Describe() << " (expected a Tensor, Shape, Int or Float)");
      }
    } else if (kind == OperandKind::kFunction) {
      return Status(ErrorStatus() << "kernel '" << callee.name << "' argument " << i << ": cannot pass a function");
    }
    ++count;
  }
  if (count > INT32_MAX) return Status(ErrorStatus() << "kernel '" << callee.name << "': too many arguments");
  constexpr int kInlineKernelArgs = 64;
  StrataKernelArg inline_args[kInlineKernelArgs];
  int32_t inline_codes[kInlineKernelArgs];
  std::vector<StrataKernelArg> heap_args;
  std::vector<int32_t> heap_codes;
  StrataKernelArg* args = inline_args;
  int32_t* codes = inline_codes;
  if (count > kInlineKernelArgs) {
    heap_args.resize(static_cast<size_t>(count));
    heap_codes.resize(static_cast<size_t>(count));
    args = heap_args.data();
    codes = heap_codes.data();
  }
  int64_t n = 0;
  auto push_int = [&](int64_t v) {
    codes[n] = STRATA_ARG_INT;
    args[n++].i64 = v;
  };
  for (int64_t i = 0; i < nargs; ++i) {
    int64_t word = operands[i];
    int64_t value = DecodeOperandValue(word);
    switch (DecodeOperandKind(word)) {
      case OperandKind::kImmediate:
        push_int(value);
        break;
      case OperandKind::kRegister:
      case OperandKind::kConstant: {
        const Value& v = DecodeOperandKind(word) == OperandKind::kRegister ? regs[value] : consts[value];
        if (v.is_tensor()) {
          codes[n] = STRATA_ARG_TENSOR;
          args[n++].tensor = v.tensor()->dl();
        } else if (v.is_int()) {
          push_int(v.int_value());
        } else if (v.is_float()) {
          codes[n] = STRATA_ARG_FLOAT;
          args[n++].f64 = v.float_value();
        } else {
          for (int64_t d : v.shape()) push_int(d);
        }
        break;
      }
      case OperandKind::kFunction:
        break;  // rejected above
    }
  }
  int32_t rc = callee.kernel(args, codes, static_cast<int32_t>(n));
  if (rc == 0) return Status::Ok();
  std::string message = TakeKernelError();
  if (message.empty()) message = "returned error code " + std::to_string(rc) + " without a message";
  return Status(ErrorStatus() << "kernel '" << callee.name << "' failed: " << message);
}

Status VirtualMachine::Run(const VMFunction& entry, Value* out_result) {
  const VMFunction* const functions = executable_->functions().data();
  const Value* const consts = executable_->constants().data();
  const int64_t* pc = entry.code.data();
  Value* regs = registers_.data();

  for (;;) {
    switch (static_cast<Opcode>(*pc)) {
      case Opcode::kCall: {
        const int64_t dst = pc[1];
        const VMFunction& callee = functions[pc[2]];
        const int64_t nargs = pc[3];
        const int64_t* operands = pc + 4;
        switch (callee.kind) {
          case FunctionKind::kLibrary: {
            const Value* inline_argv[kMaxInlineArgs];
            alignas(Value) unsigned char inline_scratch[kMaxInlineArgs * sizeof(Value)];
            const Value** argv = inline_argv;
            Value* scratch = reinterpret_cast<Value*>(inline_scratch);
            std::vector<const Value*> heap_argv;
            std::vector<Value> heap_scratch;
            if (nargs > kMaxInlineArgs) {
              heap_argv.resize(static_cast<size_t>(nargs));
              heap_scratch.resize(static_cast<size_t>(nargs));
              argv = heap_argv.data();
              scratch = heap_scratch.data();
            }
            for (int64_t i = 0; i < nargs; ++i) argv[i] = OperandValue(operands[i], regs, consts, scratch + i);
            Value result;
            Status status = callee.library.fn(callee.library.context, argv, static_cast<int32_t>(nargs), &result);
            if (!status.ok()) return status;
            if (dst != kVoidRegister) regs[dst] = std::move(result);
            pc = operands + nargs;
            break;
          }
          case FunctionKind::kKernel: {
            Status status = CallKernel(callee, operands, nargs, regs);
            if (!status.ok()) return status;
            // A kernel returns nothing: its outputs are the tensors passed in.
            if (dst != kVoidRegister) regs[dst] = Value();
            pc = operands + nargs;
            break;
          }
          case FunctionKind::kBytecode: {
            if (cancel_flag_ != nullptr || steps_left_ >= 0) STRATA_RETURN_IF_ERROR(Step(pc));
            const Frame& caller = frames_.back();
            if (frames_.size() >= static_cast<size_t>(kMaxCallDepth)) {
              return InstructionError(caller, pc,
                                      ErrorStatus() << "call stack overflow calling '" << callee.name << "' (depth "
                                                    << kMaxCallDepth << ")");
            }
            const int64_t base = caller.base + caller.function->num_registers;
            const int64_t top = base + callee.num_registers;
            if (top > kMaxStackRegisters) {
              return InstructionError(caller, pc,
                                      ErrorStatus() << "register stack overflow calling '" << callee.name << "' ("
                                                    << top << " registers)");
            }
            if (registers_.size() < static_cast<size_t>(top)) {
              registers_.resize(static_cast<size_t>(top));
              regs = registers_.data() + caller.base;
            }
            Value* callee_regs = registers_.data() + base;
            for (int64_t i = 0; i < nargs; ++i) {
              alignas(Value) unsigned char scratch[sizeof(Value)];
              callee_regs[i] = *OperandValue(operands[i], regs, consts, reinterpret_cast<Value*>(scratch));
            }
            frames_.push_back(Frame{&callee, operands + nargs, base, dst});
            regs = callee_regs;
            pc = callee.code.data();
            break;
          }
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
          return Status::Ok();
        }
        regs = registers_.data() + frames_.back().base;
        if (frame.caller_dst != kVoidRegister) regs[frame.caller_dst] = std::move(result);
        pc = frame.return_pc;
        break;
      }
      case Opcode::kGoto:
        if (pc[1] <= 0 && (cancel_flag_ != nullptr || steps_left_ >= 0)) STRATA_RETURN_IF_ERROR(Step(pc));
        pc += pc[1];
        break;
      case Opcode::kIf: {
        bool truth;
        if (!ConditionTruth(regs[pc[1]], &truth)) {
          return InstructionError(frames_.back(), pc,
                                  ErrorStatus() << "condition register r" << pc[1] << " holds "
                                                << regs[pc[1]].Describe()
                                                << "; expected an Int or a 0-d bool or integer tensor");
        }
        if (!truth && pc[2] <= 0 && (cancel_flag_ != nullptr || steps_left_ >= 0)) STRATA_RETURN_IF_ERROR(Step(pc));
        pc += truth ? 3 : pc[2];
        break;
      }
      default:
        return InstructionError(frames_.back(), pc, ErrorStatus() << "invalid opcode " << *pc);
    }
  }
}

}  // namespace strata::vm
