// How much work a parallel loop does, to run it serially when forking would
// cost more than it saves.
//
// The estimate is the number of innermost statements the loop executes: its
// extent times the iterations of the loops nested in its body (sequences add
// up, both branches of an if count, a nested loop whose extent depends on an
// enclosing loop variable is counted at that variable's first value; a call
// of a transcendental function counts as kTranscendentalCost more), less a
// charge for every byte it stores to memory shared with other threads (a
// buffer not allocated inside the loop), up to a cache's worth. It is an
// expression over values known before the loop, evaluated at run time.
//
// Why the charge: forking costs a wake-up and a join (1.5-4 us measured on a
// 2-vCPU cloud VM), and what a worker writes sits in its core's cache, from
// where the next kernel, usually on the calling thread, pulls it line by line
// (about 10 ns per 64-byte line there). Measured on that VM, a conv2d of
// 3x3x32x24 -> 8 channels (700 k statements, 74 KiB of output) ran slower in
// a model on two threads than on one. A statement is about 1/16 cycle of
// vectorized work, so a byte moved costs about as much as 8 statements.
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
// Statements charged per byte a loop stores to shared memory, for at most
// kSharedStoreBytesCharged bytes: beyond the caches, stores go to memory from
// either core, and a long memory-bound loop gains from a second core's bandwidth.
inline constexpr int64_t kSharedStoreByteCost = 8;
inline constexpr int64_t kSharedStoreBytesCharged = int64_t{256} << 10;

// The estimate of `for loop_var in parallel(min, extent) { body }`, or nullopt
// when it cannot be expressed in terms of values bound before the loop.
std::optional<tir::PrimExpr> ParallelLoopWork(const tir::ForNode& loop);

}  // namespace strata::codegen
