// A readable description of a loaded executable, for `strata inspect`: format
// version, producer, entry points, functions with their bytecode listing
// (vm/bytecode/disassembler.h) and memory plans, devices, constants and native
// modules.
//
// Thread-safety: pure functions of an immutable Executable.
#pragma once

#include <string>

#include "vm/executable.h"

namespace strata::vm {

std::string DescribeExecutable(const Executable& executable);

// The listing of one bytecode function, one instruction per line ("  12: ret r5").
std::string DisassembleFunction(const Executable& executable, const VMFunction& function);

}  // namespace strata::vm
