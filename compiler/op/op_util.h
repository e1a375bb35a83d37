// Helpers shared by the operator definitions: reading tensor arguments,
// numpy broadcasting over symbolic shapes, axis normalization, and the error
// messages that name the operator, the argument and the shapes.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/op/op_registry.h"
#include "support/status.h"

namespace strata::op {

using graph::StructInfo;
using graph::TensorStructInfoNode;
using tir::PrimExpr;

// Argument i as a tensor: "add: argument 'y' must be a tensor, got Shape[(n,)]".
StatusOr<const TensorStructInfoNode*> TensorArg(const OpCall& call, size_t i);
// Argument i as a tuple of tensors (the inputs of concat).
StatusOr<std::vector<const TensorStructInfoNode*>> TensorTupleArg(const OpCall& call, size_t i);
// Argument i as a shape value of known length (reshape's new shape, zeros' shape):
// its dims (symbolic) when known.
StatusOr<std::vector<PrimExpr>> ShapeArg(const OpCall& call, size_t i);

// "x: Tensor[(n, 4), f32]": an argument and its struct info, for messages.
std::string ArgText(const OpCall& call, size_t i);

// Broadcasts two shapes as numpy does, right-aligned. A pair of dimensions is
// compatible when provably equal or one is the constant 1; a constant and a
// symbolic dimension broadcast to the constant (checked at run time); two
// constants that differ are an error naming both arguments and shapes. Two
// symbolic dimensions x and y that cannot be proven equal broadcast to
// select(x == 1, y, x), exact for every pair the kernel accepts at run time.
StatusOr<std::vector<std::optional<PrimExpr>>> BroadcastShapes(const OpCall& call, size_t lhs, size_t rhs,
                                                               const std::vector<PrimExpr>& a,
                                                               const std::vector<PrimExpr>& b);

// A tensor struct info from dims that may be unknown: the shape when every dim
// is known, otherwise only the rank.
StructInfo TensorFromDims(const std::vector<std::optional<PrimExpr>>& dims, DataType dtype);

// The dtype two operands promote to; both must be the same (no implicit
// promotion: a graph that mixes dtypes says so with cast). Unknown (void)
// adopts the other side.
StatusOr<DataType> SameDtype(const OpCall& call, size_t lhs, size_t rhs, DataType a, DataType b);

// axis in [-ndim, ndim) -> [0, ndim); an error naming the attribute otherwise.
StatusOr<int64_t> NormalizeAxis(const OpCall& call, const std::string& attr, int64_t axis, int64_t ndim);

// Simplified dimension and product of dimensions.
PrimExpr SimplifyDim(const PrimExpr& dim);
PrimExpr Product(const std::vector<PrimExpr>& dims);

}  // namespace strata::op
