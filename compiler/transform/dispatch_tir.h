// dispatch-tir: a target dispatch pass that replaces operator calls with
// hand-written tensor programs carried in the module, before LegalizeOps covers
// the rest (so a target plugs its own kernels in without replacing the pipeline).
//
// A tensor program opts in with attributes:
//
//   prim_func @my_concat(A: Buffer[(n, 256), f32], B: Buffer[(n, 256), f32],
//                        C: Buffer[(n, 512), f32]) attrs {dispatch = "concat", when_axis = 1} { ... }
//
// Every call of `concat` whose attributes match each `when_<attr>` (defaults
// applied) and whose tensors unify with the program's buffers (inputs in call
// order, a tuple argument's fields flattened, then the outputs; same dtypes and
// ranks; constant dims equal; each shape variable bound consistently, proven
// with the simplifier) becomes
//
//   y = call_tir(@my_concat, (x, z), Tensor[(n, 512), f32])
//
// The first matching program in module order wins; a call no program matches is
// left as it is. `strata compile --tir-library FILE.sir` adds the tensor programs
// of another file, so kernels can be attached to an imported model the same way.
#pragma once

#include "compiler/ir/module.h"
#include "support/status.h"

namespace strata::transform {

StatusOr<ir::IRModule> DispatchTIR(ir::IRModule module);

// Adds every tensor program of `library` to `module`; an error if a name is
// already used by a different function.
Status MergeTensorPrograms(const ir::IRModule& library, ir::IRModule* module);

}  // namespace strata::transform
