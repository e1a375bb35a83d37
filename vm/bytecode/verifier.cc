// The bytecode verifier: every instruction stream is safe to run (see verifier.h).
#include "vm/bytecode/verifier.h"

#include <string>
#include <vector>

#include "serialization/verifier.h"
#include "vm/bytecode/bytecode.h"

namespace strata::vm {
namespace {

using serialization::SizeOf;

// A damaged file: every verifier error is DATA_LOSS.
ErrorStatus Corrupt() { return ErrorStatus(StatusCode::kDataLoss); }

class FunctionCodeVerifier {
 public:
  FunctionCodeVerifier(const fb::Executable& exe, uint32_t index, const fb::Function* f)
      : exe_(exe), label_(serialization::FunctionLabel(index, f)) {
    code_ = f->code()->data();
    size_ = f->code()->size();
    num_registers_ = f->num_registers();
  }

  Status Verify() {
    boundary_.assign(size_, false);

    Opcode last = Opcode::kNumOpcodes;
    int64_t pc = 0;
    while (pc < size_) {
      boundary_[static_cast<size_t>(pc)] = true;
      int64_t words = 0;
      STRATA_RETURN_IF_ERROR(VerifyInstruction(pc, &last, &words));
      pc += words;
    }
    if (last != Opcode::kRet && last != Opcode::kGoto) {
      return Status(Corrupt() << label_ << ": the last instruction (" << OpcodeName(last)
                              << ") falls off the end of the code; a function must end in ret or goto");
    }
    for (const Jump& jump : jumps_) {
      if (jump.offset < -jump.pc || jump.offset >= size_ - jump.pc) {
        return Status(Corrupt() << label_ << ": instruction at word " << jump.pc << " (" << OpcodeName(jump.op)
                                << "): jump offset " << jump.offset << " lands outside the function (" << size_
                                << " words)");
      }
      int64_t target = jump.pc + jump.offset;
      if (!boundary_[static_cast<size_t>(target)]) {
        return Status(Corrupt() << label_ << ": instruction at word " << jump.pc << " (" << OpcodeName(jump.op)
                                << "): jump target word " << target << " is not the start of an instruction");
      }
    }
    return Status::Ok();
  }

 private:
  struct Jump {
    int64_t pc;
    int64_t offset;
    Opcode op;
  };

  ErrorStatus At(int64_t pc, Opcode op) {
    ErrorStatus error(StatusCode::kDataLoss);
    error << label_ << ": instruction at word " << pc << " (" << OpcodeName(op) << "): ";
    return error;
  }

  Status CheckRegister(int64_t pc, Opcode op, int64_t reg, const char* what) {
    if (reg >= 0 && reg < num_registers_) return Status::Ok();
    return At(pc, op) << what << "register " << reg << " out of range (num_registers " << num_registers_ << ")";
  }

  Status VerifyInstruction(int64_t pc, Opcode* out_op, int64_t* out_words) {
    int64_t raw = code_[pc];
    if (raw < 0 || raw >= static_cast<int64_t>(Opcode::kNumOpcodes)) {
      return Status(Corrupt() << label_ << ": instruction at word " << pc << ": invalid opcode " << raw);
    }
    Opcode op = static_cast<Opcode>(raw);
    *out_op = op;
    int64_t fixed = OpcodeFixedWords(op);
    int64_t left = size_ - pc;
    if (left < fixed) {
      return At(pc, op) << "truncated: needs " << fixed << " words, " << left << " left in the function";
    }
    switch (op) {
      case Opcode::kCall: {
        int64_t dst = code_[pc + 1], func = code_[pc + 2], nargs = code_[pc + 3];
        if (nargs < 0 || nargs > left - fixed) {
          return At(pc, op) << "truncated: " << nargs << " arguments but " << (left - fixed)
                            << " words left in the function";
        }
        if (dst != kVoidRegister) STRATA_RETURN_IF_ERROR(CheckRegister(pc, op, dst, "destination "));
        uint32_t num_functions = SizeOf(exe_.functions());
        if (func < 0 || func >= static_cast<int64_t>(num_functions)) {
          return At(pc, op) << "function " << func << " out of range (" << num_functions << " functions)";
        }
        const fb::Function* callee = exe_.functions()->Get(static_cast<::flatbuffers::uoffset_t>(func));
        if (callee->kind() == fb::FunctionKind::Bytecode && nargs != callee->num_params()) {
          return At(pc, op) << "call to " << serialization::FunctionLabel(static_cast<uint32_t>(func), callee)
                            << " passes " << nargs << " arguments, it takes " << callee->num_params();
        }
        for (int64_t i = 0; i < nargs; ++i) STRATA_RETURN_IF_ERROR(VerifyOperand(pc, op, i, code_[pc + fixed + i]));
        *out_words = fixed + nargs;
        return Status::Ok();
      }
      case Opcode::kRet: STRATA_RETURN_IF_ERROR(CheckRegister(pc, op, code_[pc + 1], "")); break;
      case Opcode::kGoto: jumps_.push_back({pc, code_[pc + 1], op}); break;
      case Opcode::kIf:
        STRATA_RETURN_IF_ERROR(CheckRegister(pc, op, code_[pc + 1], "condition "));
        jumps_.push_back({pc, code_[pc + 2], op});
        break;
      default: break;
    }
    *out_words = fixed;
    return Status::Ok();
  }

  Status VerifyOperand(int64_t pc, Opcode op, int64_t arg, int64_t word) {
    auto kind = static_cast<uint8_t>(DecodeOperandKind(word));
    int64_t value = DecodeOperandValue(word);
    switch (static_cast<OperandKind>(kind)) {
      case OperandKind::kRegister:
        if (value < 0 || value >= num_registers_) {
          return At(pc, op) << "argument " << arg << ": register " << value << " out of range (num_registers "
                            << num_registers_ << ")";
        }
        return Status::Ok();
      case OperandKind::kImmediate: return Status::Ok();
      case OperandKind::kConstant: {
        uint32_t n = SizeOf(exe_.constants());
        if (value < 0 || value >= static_cast<int64_t>(n)) {
          return At(pc, op) << "argument " << arg << ": constant " << value << " out of range (" << n << " constants)";
        }
        return Status::Ok();
      }
      case OperandKind::kFunction: {
        uint32_t n = SizeOf(exe_.functions());
        if (value < 0 || value >= static_cast<int64_t>(n)) {
          return At(pc, op) << "argument " << arg << ": function " << value << " out of range (" << n << " functions)";
        }
        return Status::Ok();
      }
    }
    return At(pc, op) << "argument " << arg << ": invalid operand kind " << static_cast<int>(kind);
  }

  const fb::Executable& exe_;
  std::string label_;
  const int64_t* code_ = nullptr;
  int64_t size_ = 0;
  int64_t num_registers_ = 0;
  std::vector<bool> boundary_;
  std::vector<Jump> jumps_;
};

}  // namespace

Status VerifyBytecode(const fb::Executable& exe) {
  for (uint32_t i = 0; i < SizeOf(exe.functions()); ++i) {
    const fb::Function* f = exe.functions()->Get(i);
    if (f->kind() == fb::FunctionKind::Bytecode) STRATA_RETURN_IF_ERROR(FunctionCodeVerifier(exe, i, f).Verify());
  }
  return Status::Ok();
}

}  // namespace strata::vm
