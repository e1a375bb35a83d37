// The listing of a bytecode function; operand syntax mirrors the comment in vm/bytecode/bytecode.h.
#include "vm/bytecode/disassembler.h"

#include <iomanip>
#include <sstream>

#include "vm/bytecode/bytecode.h"

namespace strata::vm {
namespace {

std::string Operand(std::span<const std::string> function_names, int64_t word) {
  int64_t v = DecodeOperandValue(word);
  switch (DecodeOperandKind(word)) {
    case OperandKind::kRegister: return "r" + std::to_string(v);
    case OperandKind::kImmediate: return std::to_string(v);
    case OperandKind::kConstant: return "c" + std::to_string(v);
    case OperandKind::kFunction: return "@" + function_names[static_cast<size_t>(v)];
  }
  return "?";
}

std::string Offset(int64_t offset) { return (offset >= 0 ? "+" : "") + std::to_string(offset); }

}  // namespace

std::string DisassembleCode(std::span<const int64_t> words, std::span<const std::string> function_names) {
  std::ostringstream out;
  const int64_t* code = words.data();
  int64_t size = static_cast<int64_t>(words.size());
  int width = static_cast<int>(std::to_string(size).size());
  int64_t pc = 0;
  while (pc < size) {
    Opcode op = static_cast<Opcode>(code[pc]);
    out << "    " << std::setw(width) << pc << ": ";
    switch (op) {
      case Opcode::kCall: {
        int64_t dst = code[pc + 1], nargs = code[pc + 3];
        out << "call ";
        if (dst != kVoidRegister) out << "r" << dst << " = ";
        out << function_names[static_cast<size_t>(code[pc + 2])] << "(";
        for (int64_t i = 0; i < nargs; ++i) out << (i ? ", " : "") << Operand(function_names, code[pc + 4 + i]);
        out << ")";
        pc += 4 + nargs;
        break;
      }
      case Opcode::kRet:
        out << "ret r" << code[pc + 1];
        pc += 2;
        break;
      case Opcode::kGoto:
        out << "goto " << Offset(code[pc + 1]) << "  (to " << pc + code[pc + 1] << ")";
        pc += 2;
        break;
      case Opcode::kIf:
        out << "if r" << code[pc + 1] << " else " << Offset(code[pc + 2]) << "  (to " << pc + code[pc + 2] << ")";
        pc += 3;
        break;
      default:
        out << "<invalid opcode " << code[pc] << ">";
        pc = size;
        break;
    }
    out << "\n";
  }
  return out.str();
}

}  // namespace strata::vm
