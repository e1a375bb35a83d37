// Symbolic arithmetic on scalar expressions: canonical simplification and the
// small set of proofs shape inference and the lowering passes need.
//
// Signed integer expressions are put in a canonical form: a sum of monomials (a
// product of atoms times an integer coefficient) plus a constant. Atoms are
// variables and whatever the polynomial cannot see into (a floordiv that does
// not divide out, min/max, loads, calls, casts, selects), with their own
// children simplified first. Two expressions that are equal as polynomials
// simplify to the same tree, which is what makes ProveEqual work.
//
// Output shape, chosen for printing: monomials by descending degree, then by
// CompareExprs of their atoms (names, not pointers: see expr_order.h); the
// coefficient after the atoms, the constant last, negative terms as
// subtraction: `n * m + n * 2 - 1`. When every term is negative the sum starts
// from the first positive one (`4 - n`), or from 0 (`0 - n - 1`).
//
// Floats and unsigned integers only get constant folding (reassociating floats
// changes results; unsigned wrap-around makes sign reasoning wrong). Integer
// arithmetic is assumed not to overflow, as in every shape computation.
//
// Proofs assume every i64 variable is >= 0: i64 variables are shape dimensions
// and loop indices (loops start at 0 in Strata's lowering). Proofs answer
// "proven" or "unknown": false never means "disproven".
#pragma once

#include <cstdint>
#include <optional>

#include "compiler/ir/prim_expr.h"

namespace strata::arith {

// The canonical form of `e`. Deterministic; Simplify(Simplify(e)) is Simplify(e)
// structurally. Returns `e` itself when `e` is a variable or a lone atom already
// in canonical form.
tir::PrimExpr Simplify(const tir::PrimExpr& e);

// True when a and b are equal for every value of their variables (a - b
// simplifies to 0). Integer constants adopt the other side's dtype.
bool ProveEqual(const tir::PrimExpr& a, const tir::PrimExpr& b);

// The integer (or bool, as 0/1) value of `e` after simplification, if constant.
std::optional<int64_t> AsConstant(const tir::PrimExpr& e);

// True when e >= 0 for all non-negative values of the i64 variables in it.
bool ProveNonNegative(const tir::PrimExpr& e);

// True when the bool expression `cond` simplifies to true (comparisons are
// decided through the difference of their operands and ProveNonNegative).
bool CanProve(const tir::PrimExpr& cond);

}  // namespace strata::arith
