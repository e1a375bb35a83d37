// FuseOps: groups call_tir bindings whose kernels can become one kernel, and
// outlines each group into a primitive graph function (attrs {primitive = 1})
// named after what it fuses (`fused_conv2d_add_relu`). FuseTIR then turns each
// primitive function into one tensor program.
//
// It runs after LegalizeOps, on every block of every graph function that is not
// a BYOC function, with symbolic shapes. A binding is a candidate when it is a
// call_tir of a module kernel with one tensor result and a fusion pattern (the
// kernel's `op_pattern` attribute, stamped by LegalizeOps; a kernel from
// --tir-library is opaque unless it declares one). Library calls, BYOC and
// device calls are never candidates, so fusion leaves them alone.
//
// A producer joins its consumer's group only when every user of its result is
// in that group (a value used by two groups, or after its block, would have to
// be materialized anyway); the sweep repeats until nothing merges, so the two
// uses of x in a decomposed GELU, x * (erf(x / sqrt(2)) + 1) * 0.5, join once
// the erf chain has. Every merge is one of:
//
//  - chain: a group of light ops (elementwise, broadcast, injective) whose
//    kernels are all elementwise nests (tir_inline.h) is computed inline in a
//    consumer that is not output-fusable (recomputing a light op at each load is
//    cheap; inside the inner loop of a conv2d or matmul it is not);
//  - epilogue: a consumer that is a light elementwise nest over exactly the
//    producer group's result shape, reading it only at its own position (with
//    several readers, the consumer group must be all light nests, which FuseTIR
//    collapses into one), is applied at the group's final stores (conv2d + bias + add + relu, matmul +
//    bias + gelu, a reduction + its scale). The producer must store each result
//    element once and never read it back; a group holds at most one such host.
//
// Only a group's root result leaves it, so every group is convex by
// construction: no path leaves a group and comes back.
#pragma once

#include "compiler/ir/module.h"
#include "support/status.h"

namespace strata::transform {

StatusOr<ir::IRModule> FuseOps(ir::IRModule module);

}  // namespace strata::transform
