// Helpers shared by the data-movement operators (manipulation.cc:
// transpose, concat, split, strided_slice, take, broadcast_to, fills;
// reshape.cc: reshape, flatten, expand_dims, squeeze; indexing.cc).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ir/tir.h"
#include "compiler/op/kernel_builder.h"
#include "compiler/op/op_registry.h"
#include "compiler/op/tir_build.h"
#include "support/status.h"

namespace strata::op::movement {

using tir::PrimExpr;

using build::Bin;
using build::Eq;

// An attribute that takes an int or a list of ints: its values, and whether it
// was written as a single int.
std::pair<std::vector<int64_t>, bool> IntOrInts(const OpCall& call, const std::string& name);

// Distinct axes of a rank-`ndim` tensor, negative ones counted from the end.
StatusOr<std::vector<int64_t>> DistinctAxes(const OpCall& call, const std::string& attr,
                                            const std::vector<int64_t>& axes, int64_t ndim);

// A shape argument: its dims, or nullopt when only its rank is known (`ndim`).
StatusOr<std::optional<std::vector<PrimExpr>>> ShapeDims(const OpCall& call, size_t i, int* ndim);

// The baseline loop nest over `shape`, without loops for dimensions of constant
// extent 1 (their index is 0).
tir::Stmt CopyNest(KernelBuilder& b, const std::vector<PrimExpr>& shape,
                   const std::function<tir::Stmt(const std::vector<PrimExpr>& index)>& body);

// A store / load with simplified indices.
using build::Load;
using build::Store;

// Row-major position of `index` in `dims`, and back.
PrimExpr Ravel(const std::vector<PrimExpr>& index, const std::vector<PrimExpr>& dims);
std::vector<PrimExpr> Unravel(const PrimExpr& flat, const std::vector<PrimExpr>& dims);

// `checks` followed by `body`.
std::vector<tir::Stmt> Checks(std::vector<tir::Stmt> checks, tir::Stmt body);

}  // namespace strata::op::movement
