// The bytecode verifier: everything the interpreter trusts about an instruction
// stream without checking it again.
//
// Runs on an executable serialization/'s reader accepted (the flatbuffers
// verifier, then the semantic verifier: a bytecode function has 0 <= num_params
// <= num_registers <= kMaxRegisters and aligned, non-empty code). After it
// succeeds, the code of every bytecode function has instructions that decode
// completely inside the array, valid opcodes, registers < num_registers (a
// Call's dst may be kVoidRegister), constant and function indices in range,
// valid operand kinds, jump targets on instruction boundaries inside the
// function, calls to bytecode functions with exactly their parameter count, and
// a last instruction that is Ret or Goto (no falling off the end). Every error
// is DATA_LOSS and names the function, the instruction and the index, e.g.
//   functions[2] 'main': instruction at word 17 (call): argument 1: register 9 out of range (num_registers 8)
//
// Thread-safety: a pure function.
#pragma once

#include "serialization/executable_generated.h"
#include "support/status.h"

namespace strata::vm {

Status VerifyBytecode(const fb::Executable& exe);

}  // namespace strata::vm
