// VMShapeLower: symbolic shapes become shape-heap operations the VM runs.
//
// Each graph function gets a shape heap, an i64 tensor with one slot per
// symbolic variable it needs at run time plus one per composite expression:
//   shape_heap = call_packed("vm.builtin.alloc_shape_heap", K)
// (vm.builtin.null when K is 0). At entry every parameter is checked
// (check_tensor_info / check_shape_info / check_prim_info / check_tuple_info with
// an error context naming the function and parameter) and matched against its
// shape with vm.builtin.match_shape, storing first occurrences of variables and
// asserting the rest. A match_cast becomes the same checks (the binding itself
// stays, as a plain alias for codegen); its context names the parameter when the
// matched value is a parameter or shape_of(parameter), else the binding.
// Every non-constant shape value (alloc_tensor shapes, tir_vars, shape(...)
// values and results) becomes vm.builtin.make_shape of heap slots; composite
// expressions (n * 2 + 1) are computed into extra slots by generated tensor
// programs `shape_func_<fn>_<i>(H: Buffer[(K,), i64])`, called before use. Each
// expression is computed and each shape made once per scope.
//
// Afterwards no symbolic variable remains in a value computation (struct info
// may still mention them). A function that already starts with its shape heap
// is left as it is, so the pass is idempotent.
#pragma once

#include "compiler/ir/module.h"
#include "support/status.h"

namespace strata::backend {

StatusOr<ir::IRModule> VMShapeLower(ir::IRModule module);

}  // namespace strata::backend
