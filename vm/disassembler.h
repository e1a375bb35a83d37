// Disassembler: a readable description of an executable, for `strata inspect`.
//
//   call r3 = vm.builtin.match_shape(r0, c2, 2, ...)     operands: rN register, cN constant,
//   if r4 else +12                                       plain integer immediate, @name function
//   goto -10
//   ret r5
//
// Thread-safety: pure functions of an immutable Executable.
#pragma once

#include <string>

#include "vm/executable.h"

namespace strata::vm {

// Format version, producer, entry points, functions with their bytecode listing,
// constants and native modules.
std::string DescribeExecutable(const Executable& executable);

// The listing of one bytecode function, one instruction per line ("  12: ret r5").
std::string DisassembleFunction(const Executable& executable, const VMFunction& function);

}  // namespace strata::vm
