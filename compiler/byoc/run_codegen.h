// RunCodegen: the last BYOC step. Every offloaded function (attrs {codegen =
// "backend"}, from MergeCompositeFunctions) goes to its backend's codegen
// (backend.h); its call sites are replaced by the external calls the codegen
// chose, the generated code is added to the module's external modules, and the
// offloaded and composite functions are removed.
//
//   r = @dnnl_main_0(x, W1, b1, W2, b2)     becomes
//   a = call_dps_packed("strata.dnnl.conv2d_bias_relu", (x, W1, b1, ...), Tensor[...])
//   r = call_dps_packed("strata.dnnl.conv2d_bias", (a, W2, b2, ...), Tensor[...])
//
// A codegen error, or a codegen that leaves a composite without a function, is an
// error naming the offloaded function and the backend.
#pragma once

#include "compiler/ir/module.h"
#include "support/status.h"

namespace strata::byoc {

StatusOr<ir::IRModule> RunCodegen(ir::IRModule module);

}  // namespace strata::byoc
