// VM entry: the second exported function of a tensor program, the one the VM
// calls (kernel_abi.h):
//
//   int32_t <symbol>__vm(const void* registers, const int64_t* operands, int32_t num_operands)
//
// It decodes each operand word into the VM Value it denotes, reads the tensor,
// int or float the parameter takes straight out of the Value, and then runs the
// main entry's checks and body on them (the main entry inlined: its argument
// array and type codes become SSA values and constants). An operand of another
// kind, a tensor off the CPU, or a wrong operand count returns
// STRATA_VM_ENTRY_FALLBACK before anything is checked or written, so the VM
// makes the call through the main entry and reports it in the one way it always
// has.
#pragma once

#include <string>

#include <llvm/IR/Function.h>

#include "compiler/codegen/llvm/kernel_module.h"
#include "compiler/ir/tir.h"

namespace strata::codegen {

// The name of the VM entry of the kernel `symbol`.
std::string VmEntrySymbol(const std::string& symbol);

// Emits the VM entry of `main_entry`, the entry EmitKernel made for `func`.
llvm::Function* EmitVmEntry(KernelModule& km, const std::string& symbol, const tir::PrimFunc& func,
                            llvm::Function* main_entry);

}  // namespace strata::codegen
