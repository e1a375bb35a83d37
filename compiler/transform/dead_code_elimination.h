// DeadCodeElimination: bindings whose value is never used and whose computation
// has no effect are removed.
//
// Liveness runs backwards from each function's result through every binding
// that stays (nested if branches included), so a chain of dead bindings goes in
// one run. What may go is decided by PurityAnalysis (purity.h): operator calls,
// call_tir, call_dps_packed, tuples and calls of pure graph functions. call_packed
// and other calls with unknown effects stay even when unused, and so does a
// match_cast unless it provably succeeds and binds no new symbolic variable: it
// is a run-time check of the shapes the caller passed. Functions are never
// removed (every function of a module may be an entry point of the executable).
//
// Before:  %t = transpose(%x); %y = relu(%x); return %y
// After:   %y = relu(%x); return %y
#pragma once

#include "compiler/ir/module.h"
#include "support/status.h"

namespace strata::transform {

StatusOr<ir::IRModule> DeadCodeElimination(ir::IRModule module);

}  // namespace strata::transform
