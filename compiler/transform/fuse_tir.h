// FuseTIR: each primitive function FuseOps outlined becomes one tensor program,
// and every call of it a call_tir of that program.
//
// The fused kernel's parameters are the function's tensor parameters, then its
// result; its symbolic variables are bound from those buffers (KernelBuilder),
// and a variable no buffer binds comes in as a scalar (call_tir's tir_vars).
// Each member kernel is instantiated with its parameters replaced by the fused
// buffers and its variables by the fused kernel's expressions (a dimension the
// substitution cannot prove equal gets a run-time assert), its loop variables
// renamed, and its leading checks hoisted to the entry. Then:
//
//  1. light members (elementwise nests) are computed inline at their loads, last
//     member first, so a chain collapses into its consumer;
//  2. an elementwise member that reads a result only at its own position is
//     inlined into that result's final stores (the epilogue of conv2d, matmul or
//     a reduction), first member first, so epilogues stack;
//  3. any intermediate left is a local buffer of the kernel.
//
// So intermediates of a group disappear from memory planning and from the VM's
// instruction stream. Identical fused kernels are emitted once; member kernels
// nothing calls any more are removed. Fused kernels carry attrs {op = name,
// fused_ops = "conv2d,add,relu", op_pattern = "opaque"}.
#pragma once

#include "compiler/ir/module.h"
#include "support/status.h"

namespace strata::transform {

StatusOr<ir::IRModule> FuseTIR(ir::IRModule module);

}  // namespace strata::transform
