// CallTIRRewrite: make destination passing explicit.
//
//   y = call_tir(@f, (a, b), OUT_SI[, shape(tir_vars...)])
// becomes, per output tensor of OUT_SI (a Tensor or a Tuple of Tensors),
//   out = alloc_tensor(shape(dims...), dtype(D))
// then the kernel call and the result:
//   _ = @f(a, b, out[, shape(tir_vars...)])
//   y = out                        (or y = (out, out1) for tuple outputs)
// and call_dps_packed("f", (a, b), OUT_SI) likewise becomes allocations,
// `_ = call_packed("f", a, b, out)` and `y = out`.
// Every output shape must be known (symbolic is fine). The output is normalized.
#pragma once

#include "compiler/ir/module.h"
#include "support/status.h"

namespace strata::transform {

StatusOr<ir::IRModule> CallTIRRewrite(ir::IRModule module);

}  // namespace strata::transform
