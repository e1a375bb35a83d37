// VM codegen: a lowered module -> the executable's function table, bytecode and
// constant pool.
//
// Runs after CallTIRRewrite and VMShapeLower (no call_tir, call_dps_packed or
// symbolic value may remain). The function table lists, in this order:
//   - every graph function (Bytecode; all are entry points; parameters in
//     registers 0..n-1);
//   - every tensor program (Kernel, module_index 0, symbol = its name: the
//     driver replaces it with the symbol LLVM codegen exported);
//   - every library function called (Library, by registry name, e.g.
//     "vm.builtin.alloc_tensor"), in order of first use.
// Op calls map to builtins (shape_of -> vm.builtin.shape_of, alloc_tensor ->
// vm.builtin.alloc_tensor, tuples -> vm.builtin.tuple / tuple_getitem);
// call_packed("f", ...) calls f; @prim_func(...) calls the kernel and
// @graph_fn(...) the bytecode function. Variables live in registers (one each,
// numbered in program order); small integers are immediates; shapes of
// constants, floats, strings, dtypes and tensor constants go to the constant
// pool, deduplicated. `if` becomes If/Goto with both branches writing one
// result register through vm.builtin.copy. Instructions are encoded with the
// vm/bytecode/bytecode.h helpers only.
#pragma once

#include "compiler/ir/module.h"
#include "serialization/executable_spec.h"
#include "support/status.h"

namespace strata::backend {

StatusOr<serialization::ExecutableSpec> CodegenVM(const ir::IRModule& module);

}  // namespace strata::backend
