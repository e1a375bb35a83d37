// Kernel entry: the exported function of one tensor program.
//
//   int32_t <symbol>(const StrataKernelArg* args, const int32_t* type_codes, int32_t num_args)
//
// It checks everything the body relies on, in this order: the argument count;
// every slot's type code (tensor, int, float); each buffer's tensor (non-null, CPU, ndim, dtype, compact strides); then
// binds the symbolic shape variables and checks every other dimension against them. Only then does it call the body
// (outlined, with noalias buffer pointers). Any mismatch sets an error naming the program, the parameter and the
// dimension, and returns 1.
#pragma once

#include <string>

#include <llvm/IR/Function.h>

#include "compiler/codegen/llvm/kernel_module.h"
#include "compiler/ir/tir.h"
#include "support/status.h"

namespace strata::codegen {

// Emits the entry function `symbol` and the functions of its body into `km`.
// Errors name what in the program could not be compiled.
StatusOr<llvm::Function*> EmitKernel(KernelModule& km, const std::string& program, const std::string& symbol,
                                     const tir::PrimFunc& func);

}  // namespace strata::codegen
