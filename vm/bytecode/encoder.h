// Writes instruction streams in the layout bytecode.h defines, so the compiler's
// VM backend and hand-assembled test programs cannot disagree with the verifier
// and the interpreter about where an instruction's words go.
//
// Jumps are emitted before their target is known: Goto and If return a
// PendingJump, and PatchJump writes the offset once the target's word position is.
//   BytecodeEncoder code;
//   auto to_else = code.If(cond);
//   ...then...
//   auto to_end = code.Goto();
//   code.PatchJump(to_else, code.size());
//   ...else...
//   code.PatchJump(to_end, code.size());
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "vm/bytecode/bytecode.h"

namespace strata::vm {

class BytecodeEncoder {
 public:
  // A jump whose offset word is still zero.
  struct PendingJump {
    int64_t instruction;  // word position of the Goto / If
    int64_t offset_slot;  // word position of its offset operand
  };

  // Call dst func operands...; dst may be kVoidRegister.
  void Call(int64_t dst, int64_t func, std::span<const int64_t> operands) {
    Append({static_cast<int64_t>(Opcode::kCall), dst, func, static_cast<int64_t>(operands.size())});
    words_.insert(words_.end(), operands.begin(), operands.end());
  }
  void Call(int64_t dst, int64_t func, std::initializer_list<int64_t> operands) {
    Call(dst, func, std::span<const int64_t>(operands.begin(), operands.size()));
  }

  void Ret(int64_t reg) { Append({static_cast<int64_t>(Opcode::kRet), reg}); }

  PendingJump Goto() {
    const int64_t at = size();
    Append({static_cast<int64_t>(Opcode::kGoto), 0});
    return {at, at + 1};
  }

  // Falls through when R[reg] is true, jumps when it is false.
  PendingJump If(int64_t reg) {
    const int64_t at = size();
    Append({static_cast<int64_t>(Opcode::kIf), reg, 0});
    return {at, at + 2};
  }

  // Offsets are relative to the jumping instruction, in words.
  void PatchJump(PendingJump jump, int64_t target) {
    words_[static_cast<size_t>(jump.offset_slot)] = target - jump.instruction;
  }

  // Words appended as they are, for streams that are deliberately malformed.
  void AppendRaw(std::span<const int64_t> words) { words_.insert(words_.end(), words.begin(), words.end()); }

  int64_t size() const { return static_cast<int64_t>(words_.size()); }
  const std::vector<int64_t>& words() const { return words_; }
  std::vector<int64_t> Take() && { return std::move(words_); }

 private:
  // One push_back per word: GCC 12 misreads insert(end, {...}) into an empty
  // vector as an overflow (-Wstringop-overflow).
  void Append(std::initializer_list<int64_t> words) {
    for (int64_t word : words) words_.push_back(word);
  }

  std::vector<int64_t> words_;
};

}  // namespace strata::vm
