// SpeculateInvariantLoads: loads that do not change across a vectorized loop's
// iterations, but sit under a condition inside it, move in front of the loop.
//
// LLVM's loop vectorizer turns such a load (a bias read once per output channel
// in a fused conv2d epilogue that stores only the lanes of one output row) into
// a masked gather of one address, which costs as much as the whole epilogue
// should; measured, it made a fused conv2d + bias + relu slower than the three
// unfused kernels. In front of the loop the load is one scalar read and a
// broadcast.
//
// Moving the load out of its condition executes it where the program may not
// have, so its indices are clamped into the buffer: the value read where the
// condition is false is never used, and no read leaves the buffer. A load
// qualifies when its indices use no variable bound inside the loop and contain
// no load, nothing in the loop stores to or allocates its buffer, and every
// dimension of the buffer is provably at least 1 (so the clamped index exists).
#pragma once

#include "compiler/ir/tir.h"

namespace strata::codegen {

// `loop` (a vectorized For) with its qualifying conditional loads bound to
// variables in front of it; `loop` itself when there are none.
tir::Stmt SpeculateInvariantLoads(const tir::Stmt& loop);

}  // namespace strata::codegen
