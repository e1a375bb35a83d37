// Inlining between tensor programs: the two rewrites FuseTIR builds fused
// kernels from, and the kernel traits FuseOps decides with.
//
// Both rewrites need a kernel in one canonical form, an elementwise nest:
//
//     assert ...                          (leading checks, shapes only)
//     for i0 in (0, d0) { ... for ik in (0, dk) { Out[i0, ..., ik] = value } }
//
// or the baseline schedule of a rank-1 tensor, whose index is outer * C + inner.
// Matching abstracts the store's index away: `value` is written in placeholder
// variables p0..pk standing for the output position, so the producer's value
// at any position is a substitution.
//
//  - Compute inline (a light producer into its consumer): every load T[idx] in
//    the consumer becomes the producer's value at idx. The producer is computed
//    again at each load, so only light nests (elementwise, broadcast,
//    injective) are inlined, and never into the inner loop of a heavy kernel.
//  - Store inline (an epilogue into its producer): the producer's final stores
//    T[idx] = v become `let t = v; Out[idx] = epilogue(t, ...)`, where the
//    epilogue is an elementwise nest over T's shape that reads T only at its own
//    position. "Final" means the producer never reads T back, so each element is
//    stored once, with its finished value.
#pragma once

#include <optional>
#include <vector>

#include "compiler/ir/tir.h"

namespace strata::transform {

struct ElementwiseNest {
  std::vector<tir::Stmt> checks;  // leading asserts
  tir::Buffer out;
  // The stored value, in `position` placeholders (one per output dimension).
  tir::PrimExpr value;
  std::vector<tir::Var> position;

  // `value` at output position `index`.
  tir::PrimExpr ValueAt(const std::vector<tir::PrimExpr>& index) const;
};

// Matches a kernel body (or the statements after its checks) as an elementwise
// nest writing `out` over its full shape; nullopt for anything else.
std::optional<ElementwiseNest> MatchElementwiseNest(const tir::Stmt& body, const tir::Buffer& out);

// Whether `expr` (or any statement of `stmt`) loads `buffer`.
bool LoadsBuffer(const tir::PrimExpr& expr, const tir::Buffer& buffer);
bool LoadsBuffer(const tir::Stmt& stmt, const tir::Buffer& buffer);
// Whether every load of `buffer` in `expr` is at exactly `index` (same variables).
bool LoadsOnlyAt(const tir::PrimExpr& expr, const tir::Buffer& buffer, const std::vector<tir::Var>& index);

// Replaces every load of `producer.out` in `stmt` by the producer's value there.
tir::Stmt InlineLoads(const tir::Stmt& stmt, const ElementwiseNest& producer);
tir::PrimExpr InlineLoads(const tir::PrimExpr& expr, const ElementwiseNest& producer);

// Rewrites every store to `epilogue`'s input `input` in `stmt` into a store of
// the epilogue's result to `epilogue.out` (see the top of the file). The
// epilogue must read `input` only at its own position.
tir::Stmt InlineIntoStores(const tir::Stmt& stmt, const tir::Buffer& input, const ElementwiseNest& epilogue);

// Leading asserts of a body, and the rest.
void SplitLeadingChecks(const tir::Stmt& body, std::vector<tir::Stmt>* checks, tir::Stmt* rest);

}  // namespace strata::transform
