// MergeCompositeFunctions: groups neighbouring composite calls of one backend
// into one offloaded function, the unit a backend's codegen receives.
//
//   a = @dnnl_conv2d_bias_relu_0(x, W1, b1)          r = @dnnl_main_0(x, W1, b1, W2, b2)
//   b = @dnnl_conv2d_bias_1(a, W2, b2)         ->
//
//   func @dnnl_main_0(...) attrs {codegen = "dnnl"} {
//     a = @dnnl_conv2d_bias_relu_0(x, W1, b1); b = @dnnl_conv2d_bias_1(a, W2, b2); return b }
//
// A composite call joins the group of a composite call of the same backend that
// produces one of its arguments, unless the merged group would not be convex (a
// binding of another backend, or of no backend, lies between them: merging would
// create a cycle). Every composite call ends up in exactly one offloaded
// function, alone if it has no such neighbour; offloaded functions are named
// "<backend>_<caller>_<n>". Values of a group used after it are its results (a
// tuple when there are several).
#pragma once

#include "compiler/ir/module.h"
#include "support/status.h"

namespace strata::byoc {

StatusOr<ir::IRModule> MergeCompositeFunctions(ir::IRModule module);

}  // namespace strata::byoc
