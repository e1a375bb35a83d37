// KillAfterLastUse: release every tensor, storage, shape and tuple right after
// its last use.
//
// The VM keeps a value in its register until the function returns. Without this
// pass an intermediate tensor would hold its memory for the whole call, however
// early its last reader ran, and the memory plan's reuse would only happen on
// paper. For every top-level binding whose value is an object made by the
// function (a call, tuple, tuple_getitem or if), the pass inserts `kill(x)` after
// the last binding that reads x or any alias of it (var-to-var bindings and
// match_cast share x's register). VM codegen turns kill(x) into a write of Null
// to x's register: the reference drops and, when it was the last one, the memory
// goes back to the VM's pool at once.
//
// Never killed: parameters (the caller owns them), constants (no register), the
// values the function returns, and values defined inside if branches (their
// registers die with the branch result).
//
// Runs after VMShapeLower, so the shape heap and the shapes it makes are killed too.
#pragma once

#include "compiler/ir/module.h"
#include "support/status.h"

namespace strata::backend {

StatusOr<ir::IRModule> KillAfterLastUse(ir::IRModule module);

}  // namespace strata::backend
