// How much work a parallel loop does, to run it serially when forking would
// cost more than it saves.
//
// Starting a parallel loop on the runtime's pool costs about a microsecond of
// wake-up and join; a loop of a few thousand vectorized iterations is over
// before the other threads start. The estimate is the number of innermost
// statements the loop executes: its extent times the iterations of the loops
// nested in its body (sequences add up, both branches of an if count, a nested
// loop whose extent depends on an enclosing loop variable is counted at that
// variable's first value). It is an expression over values known before the
// loop, evaluated at run time.
#pragma once

#include <optional>

#include "compiler/ir/tir.h"

namespace strata::codegen {

// Parallel loops doing fewer innermost iterations than this run serially.
inline constexpr int64_t kMinParallelWork = int64_t{1} << 17;

// The work of `for loop_var in parallel(min, extent) { body }`, or nullopt when
// it cannot be expressed in terms of values bound before the loop.
std::optional<tir::PrimExpr> ParallelLoopWork(const tir::ForNode& loop);

}  // namespace strata::codegen
