// Disassembler: the listing of a bytecode function, one instruction per line.
//
//   call r3 = vm.builtin.match_shape(r0, c2, 2, ...)     operands: rN register, cN constant,
//   if r4 else +12  (to 30)                              plain integer immediate, @name function
//   goto -10  (to 8)
//   ret r5
//
// It reads the instruction stream only (vm/executable_description.h describes a
// whole loaded executable with it). The code must have passed the bytecode
// verifier (vm/bytecode/verifier.h): function indices are trusted.
//
// Thread-safety: a pure function.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace strata::vm {

// "    12: ret r5" lines; `function_names[i]` names function i of the executable.
std::string DisassembleCode(std::span<const int64_t> code, std::span<const std::string> function_names);

}  // namespace strata::vm
