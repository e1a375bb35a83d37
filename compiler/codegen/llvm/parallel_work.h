// How much work a parallel loop does, to run it serially when forking would
// cost more than it saves.
//
// The estimate is the number of innermost statements the loop executes: its
// extent times the iterations of the loops nested in its body (sequences add
// up, both branches of an if count, a nested loop whose extent depends on an
// enclosing loop variable is counted at that variable's first value; a call
// of a transcendental function counts as kTranscendentalCost more). It is an
// expression over values known before the loop, evaluated at run time.
//
// Forking costs a wake-up and a join (1.5-4 us measured on a 2-vCPU cloud
// VM); a statement is about 1/16 cycle of vectorized work. An earlier version
// also charged every byte stored to memory shared with other threads (the
// next kernel pulls what a worker wrote from the worker's cache): measured
// again once the pool and the kernels had changed, the charge only kept
// MobileNetV3's depthwise and small 1x1 convolutions serial, 14% of its time
// at 2 threads, and made no model of the zoo faster, so it is gone.
#pragma once

#include <optional>

#include "compiler/ir/tir.h"

namespace strata::codegen {

// Parallel loops whose estimate is below this run serially (about the fork
// cost, in statements).
inline constexpr int64_t kMinParallelWork = int64_t{1} << 17;
// Statements one call of exp, erf, tanh, log, pow, sin, cos or fmod counts for
// (a vectorized erf is about 2 cycles per element, a scalar one about 18).
inline constexpr int64_t kTranscendentalCost = 32;

// The estimate of `for loop_var in parallel(min, extent) { body }`, or nullopt
// when it cannot be expressed in terms of values bound before the loop.
std::optional<tir::PrimExpr> ParallelLoopWork(const tir::ForNode& loop);

}  // namespace strata::codegen
