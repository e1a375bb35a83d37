// The built-in operator families. Each returns its OpDefs; the registry takes
// them all on first use (op_registry.cc). One file per family.
#pragma once

#include <vector>

#include "compiler/op/op_registry.h"

namespace strata::op {

std::vector<OpDef> ElementwiseOps();    // elementwise.cc: arithmetic, comparisons, unary math, cast, clip, where
std::vector<OpDef> LinearAlgebraOps();  // linear_algebra.cc: matmul, dense, bias_add
std::vector<OpDef> NeuralNetworkOps();  // nn.cc: conv2d, pools, softmax, norms, dropout
std::vector<OpDef> ReductionOps();      // reduction.cc: sum, mean, max, min, prod
std::vector<OpDef> ManipulationOps();   // manipulation.cc: transpose, concat, split, take, ..., zeros/ones/full
std::vector<OpDef> ReshapeOps();        // reshape.cc: reshape, flatten, expand_dims, squeeze
std::vector<OpDef> ShapeValueOps();     // shape_values.cc: shape_to_tensor
std::vector<OpDef> ConvTransposeOps();  // conv_transpose.cc: conv2d_transpose
std::vector<OpDef> DepthToSpaceOps();   // depth_to_space.cc: depth_to_space, depth_to_space_nchwc
std::vector<OpDef> PadOps();            // pad.cc: pad (constant, edge, reflect, wrap; symbolic widths)
std::vector<OpDef> SelectionOps();      // selection.cc: topk, one_hot
std::vector<OpDef> ResizeOps();         // resize.cc: resize2d (nearest, bilinear)
std::vector<OpDef> IndexingOps();       // indexing.cc: gather_elements, gather_nd, cumsum, argmax, argmin
std::vector<OpDef> Conv2dNchwcOps();    // conv2d_nchwc.cc: conv2d_nchwc (blocked layout, packed weights)
std::vector<OpDef> NchwcLayoutOps();    // nchwc_layout.cc: to_nchwc, from_nchwc, max_pool2d_nchwc, avg_pool2d_nchwc

// All of the above.
std::vector<OpDef> BuiltinOps();

}  // namespace strata::op
