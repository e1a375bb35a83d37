// EliminateCommonSubexpr: a pure value computed twice in one binding block is
// computed once, and the second binding reuses the first.
//
// Two values are the same when they are structurally equal (ir::StructuralEqual):
// the same callee, the very same argument variables, equal constants (compared by
// value), attributes and declared struct info. Only values PurityAnalysis calls
// pure are shared (purity.h): never call_packed or another call with unknown
// effects, and nothing is shared across one, since it may have written into a
// tensor an earlier value read. Each block (dataflow or not, if branches
// included) has its own table: a value is not reused from another block.
// Uses of the duplicate are redirected to the first binding; when the duplicate
// is a block output and the first a dataflow variable (invisible outside the
// block), it is kept as an alias `%y = %x` instead.
//
// Before:  %a = add(%x, %y); %b = add(%x, %y); %c = multiply(%a, %b)
// After:   %a = add(%x, %y); %c = multiply(%a, %a)
#pragma once

#include "compiler/ir/module.h"
#include "support/status.h"

namespace strata::transform {

StatusOr<ir::IRModule> EliminateCommonSubexpr(ir::IRModule module);

}  // namespace strata::transform
