// The Strata bytecode, defined once.
//
// Every function body is a flat array of 64-bit words. The first word of an
// instruction is its opcode; the words that follow are fixed per opcode except
// for Call, whose operand count is in the instruction. The enum, the names, the
// encoder (compiler side), the verifier, the interpreter and the disassembler all
// read this one table, so they cannot disagree.
//
//   Call  dst func nargs a0 .. a{nargs-1}   R[dst] = F[func](a0, ...); dst == kVoidRegister discards
//   Ret   r                                  return R[r] to the caller
//   Goto  offset                             pc += offset (offset in words, from this instruction)
//   If    r offset                           if R[r] is false: pc += offset, else pc += 3
//
// Operands (the a_i of Call) are one word each: the kind in the top 8 bits and a
// value in the low 56 bits (sign-extended for immediates).
#pragma once

#include <cstdint>
#include <string_view>

namespace strata::vm {

// X(name, text, fixed_words): fixed_words counts the opcode word and all fixed
// fields; Call adds nargs operand words to it.
#define STRATA_OPCODES(X) \
  X(Call, "call", 4)      \
  X(Ret, "ret", 2)        \
  X(Goto, "goto", 2)      \
  X(If, "if", 3)

enum class Opcode : int64_t {
#define STRATA_OPCODE_ENUM(name, text, words) k##name,
  STRATA_OPCODES(STRATA_OPCODE_ENUM)
#undef STRATA_OPCODE_ENUM
      kNumOpcodes
};

inline constexpr std::string_view OpcodeName(Opcode op) {
  switch (op) {
#define STRATA_OPCODE_NAME(name, text, words) \
  case Opcode::k##name: return text;
    STRATA_OPCODES(STRATA_OPCODE_NAME)
#undef STRATA_OPCODE_NAME
    default: return "<invalid>";
  }
}

// Words an instruction occupies before any variable-length operands.
inline constexpr int64_t OpcodeFixedWords(Opcode op) {
  switch (op) {
#define STRATA_OPCODE_WORDS(name, text, words) \
  case Opcode::k##name: return words;
    STRATA_OPCODES(STRATA_OPCODE_WORDS)
#undef STRATA_OPCODE_WORDS
    default: return 0;
  }
}

// Destination register meaning "discard the result".
inline constexpr int64_t kVoidRegister = -1;

enum class OperandKind : uint8_t {
  kRegister = 0,   // R[value]
  kImmediate = 1,  // the integer value itself (56-bit signed)
  kConstant = 2,   // constant pool entry value
  kFunction = 3,   // the function table entry value, as a callable value
};
inline constexpr int kNumOperandKinds = 4;

inline constexpr int kOperandValueBits = 56;
inline constexpr int64_t kOperandValueMask = (int64_t{1} << kOperandValueBits) - 1;
inline constexpr int64_t kMaxImmediate = (int64_t{1} << (kOperandValueBits - 1)) - 1;
inline constexpr int64_t kMinImmediate = -(int64_t{1} << (kOperandValueBits - 1));

inline constexpr int64_t EncodeOperand(OperandKind kind, int64_t value) {
  return static_cast<int64_t>((static_cast<uint64_t>(kind) << kOperandValueBits) |
                              (static_cast<uint64_t>(value) & static_cast<uint64_t>(kOperandValueMask)));
}
inline constexpr OperandKind DecodeOperandKind(int64_t word) {
  return static_cast<OperandKind>(static_cast<uint64_t>(word) >> kOperandValueBits);
}
inline constexpr int64_t DecodeOperandValue(int64_t word) {
  // Shift left then arithmetic-shift right to sign-extend the 56-bit value.
  return static_cast<int64_t>(static_cast<uint64_t>(word) << (64 - kOperandValueBits)) >> (64 - kOperandValueBits);
}

}  // namespace strata::vm
