// FuseOpsByPattern: groups every match of a list of fusion patterns into a
// composite function, the first step of BYOC.
//
//   y = relu(add(dense(x, W), b))   with pattern "dnnl.dense_bias_relu" becomes
//
//   func @dnnl_dense_bias_relu_0(x: Tensor[(n, 64), f32], const0: ..., const1: ...) -> Tensor[(n, 128), f32]
//       attrs {composite = "dnnl.dense_bias_relu"} { dataflow { ... } return gv }
//   y = @dnnl_dense_bias_relu_0(x, const(...), const(...))
//
// Patterns are tried in the order given (list the larger ones first), and for
// each pattern the bindings from last to first, so a match takes the longest
// chain ending at its root. A binding belongs to at most one match. A match is
// rejected, and its bindings stay as they were, when an intermediate value of it
// is used outside it (the composite could not provide it) or when outlining it
// would create a cycle (outline.h). Only the top-level blocks of graph functions
// are searched; functions that are composites or offloaded already are skipped.
//
// The result is still an ordinary module: without MergeCompositeFunctions and
// RunCodegen the composites compile and run like any graph function.
#pragma once

#include <vector>

#include "compiler/ir/module.h"
#include "compiler/pattern/pattern_matcher.h"
#include "compiler/transform/outline.h"
#include "support/status.h"

namespace strata::byoc {

// Attribute names on the functions the BYOC passes create (transform/outline.h).
using transform::kCodegenAttr;
using transform::kCompositeAttr;

StatusOr<ir::IRModule> FuseOpsByPattern(ir::IRModule module, const std::vector<pattern::FusionPattern>& patterns);

}  // namespace strata::byoc
