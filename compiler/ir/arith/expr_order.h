// A total order on scalar expressions that does not depend on pointer values.
//
// The simplifier sorts the terms of a sum and the operands of commutative atoms
// by this order, so its output is the same from run to run and from machine to
// machine, and golden files stay stable. Variables order by name; two distinct
// variables with the same name order by creation: Var's constructor (and
// MakeBuffer) records a creation index in a side table, because VarNode has no
// field for it. Nodes built without going through those functions get an index
// the first time the order looks at them. Thread-safe.
#pragma once

#include <cstdint>
#include <memory>

#include "compiler/ir/prim_expr.h"

namespace strata::arith {

// <0, 0, >0 as a is before, structurally equal to, or after b. Compares kind,
// dtype, then contents; distinct same-named variables compare by creation index.
int CompareExprs(const tir::PrimExpr& a, const tir::PrimExpr& b);

// The creation index of a node (a variable or buffer), assigned on first request.
// Indices increase with creation order and are never reused while the node lives.
uint64_t CreationIndex(const std::shared_ptr<const void>& node);

}  // namespace strata::arith
