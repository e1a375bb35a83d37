// Canonicalize: local rewrites that put graph functions in a canonical form
// before the passes that pattern-match them (FoldBatchNorm, dispatch, BYOC,
// fusion) and that remove work which does nothing.
//
//   reshape(reshape(x, s1), s2)      -> reshape(x, s2)   (s2 as the inferred dims,
//                                       so a 0 or -1 in s2 keeps its meaning)
//   reshape(x, s), s == shape of x   -> x
//   transpose(transpose(x, p), q)    -> transpose(x, p o q), or x when that is
//                                       the identity; transpose(x, identity) -> x
//   multiply(x, 1), multiply(1, x), divide(x, 1)       -> x
//   add(x, 0), add(0, x), subtract(x, 0)               -> x
//   power(x, 1) -> x; power(x, 2) -> multiply(x, x); power(x, 3) -> (x * x) * x;
//   power(x, 0.5) -> sqrt(x)
//
// 1 and 0 are constants (or variables bound to constants) whose every element
// is that value. A rewrite to x only fires when x's struct info provably equals
// the result's (same dtype, every dimension provably equal, symbolic ones
// included): a multiply by ones that broadcasts x to a larger shape stays. For
// floats, x + 0 is x except that -0.0 + 0.0 is +0.0; like TVM and XLA we ignore
// the sign of a zero here. Uses of a removed value are redirected to x; where
// x is a dataflow variable and the value a block output, `y = x` stays instead.
// The inner reshape or transpose stays for its other users, otherwise
// DeadCodeElimination removes it.
//
// Transposes and reshapes of constants are not evaluated here: FoldConstants
// computes every operator call on constants, these included.
#pragma once

#include "compiler/ir/module.h"
#include "support/status.h"

namespace strata::transform {

StatusOr<ir::IRModule> Canonicalize(ir::IRModule module);

}  // namespace strata::transform
