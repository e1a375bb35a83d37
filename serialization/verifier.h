// The semantic and bytecode verifier: everything the VM trusts without checking.
//
// Runs on a buffer the flatbuffers verifier accepted. After it succeeds:
//   - every function has a valid kind; a bytecode function has 0 <= num_params
//     <= num_registers <= kMaxRegisters, param_names absent or one per parameter,
//     and code in which every instruction decodes completely inside the array,
//     has a valid opcode, registers < num_registers (a Call's dst may be
//     kVoidRegister), constant and function indices in range, operand kinds
//     valid, jump targets on instruction boundaries inside the function, calls to
//     bytecode functions with exactly their parameter count, and a last
//     instruction that is Ret or Goto (no falling off the end);
//   - kernel functions name a native module in range and a symbol;
//   - library functions have a name;
//   - constants have a value of a known type; tensor constants a valid dtype,
//     dims >= 0 and exactly product(shape) * dtype bytes of data;
//   - native modules have code; entry points name bytecode functions.
// Every error names the section and index, e.g.
//   functions[2] 'main': instruction at word 17 (call): argument 1: register 9 out of range (num_registers 8)
//
// Thread-safety: pure function.
#pragma once

#include <cstdint>

#include "serialization/executable_generated.h"
#include "support/status.h"

namespace strata::serialization {

// Registers per bytecode function: bounds the VM's memory per frame.
inline constexpr int32_t kMaxRegisters = 1 << 16;

Status VerifyExecutableSemantics(const fb::Executable& exe);

}  // namespace strata::serialization
