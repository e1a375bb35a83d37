// LegalizeOps: every operator call still in the module becomes call_tir of a
// default tensor program.
//
//   y: Tensor[(n, 4), f32] = add(x, b)
// becomes
//   y = call_tir(@add, (x, b), Tensor[(n, 4), f32])
// with @add, the operator's default kernel (op_registry.h), added to the module.
// Identical calls share one kernel (programs are compared structurally, so
// add over (n, 4) and add over (m, 4) are the same kernel). A kernel whose
// output needs a graph variable no input binds gets it through tir_vars.
//
// Runs after target dispatch: calls a dispatch pass already rewrote are no
// longer operator calls. Its first steps are ConvertToNchwc (convert_to_nchwc.h:
// convolutions with constant weights move to the blocked layout) and PackWeights (pack_weights.h): a
// matmul or dense with a constant weight gets the packed-weight kernel, so a
// dispatch pass put before LegalizeOps still sees the original call. `overrides` replaces the default legalization of
// an operator for this run (the C++ way to bring your own kernel); an operator without a default, or an argument
// without a known shape, is an error naming the function, the binding and the operator.
#pragma once

#include <map>
#include <string>

#include "compiler/ir/module.h"
#include "compiler/op/op_registry.h"
#include "compiler/transform/convert_to_nchwc.h"
#include "support/status.h"

namespace strata::transform {

struct LegalizeOptions {
  std::map<std::string, op::LegalizeFn> overrides;
  // Constant matmul / dense weights packed first (an overridden matmul or
  // dense is left to its override).
  bool pack_weights = true;
  // Convolutions with constant weights, and the ops around them, converted to
  // the blocked NCHWc layout first (convert_to_nchwc.h; an overridden conv2d is left alone).
  bool nchwc_layout = true;
  NchwcOptions nchwc;
};

StatusOr<ir::IRModule> LegalizeOps(ir::IRModule module, const LegalizeOptions& options = {});

}  // namespace strata::transform
