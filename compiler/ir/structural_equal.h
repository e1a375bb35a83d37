// StructuralEqual: whether two pieces of IR mean the same program.
//
// Variables (graph vars, scalar vars, buffers) are equal when they are defined
// at corresponding positions, whatever their names: alpha-equivalence through a
// definition map, checked in both directions so two different variables never
// map to one. Inside a function, a scalar variable is defined where it first
// appears (a parameter, a shape, a loop, a let), as the parser declares it.
// When comparing bare expressions or struct info outside any function, free
// variables must be the very same variable.
//
// Compared: dtypes, struct info of variables and parameters, the declared struct
// info of calls (sinfo_args), match_cast patterns, attrs, constant bytes, and the
// order of functions. Not compared: names of local variables, and the struct
// info that normalization caches on non-variable expressions (it is derived).
// Binding blocks compare by content: an empty plain block, or a plain block split
// in two, is the same program (the text format cannot tell them apart). A
// sequence with no bindings equals its result expression. Floats compare by bit
// pattern, except that every NaN equals every NaN.
//
// `why_not`, when given, receives the first difference as a short path:
// "function @main: binding 3: call arg 1: shape dim 0: m vs n".
#pragma once

#include <string>

#include "compiler/ir/module.h"

namespace strata::ir {

bool StructuralEqual(const IRModule& a, const IRModule& b, std::string* why_not = nullptr);
bool StructuralEqual(const graph::Expr& a, const graph::Expr& b, std::string* why_not = nullptr);
bool StructuralEqual(const tir::PrimFunc& a, const tir::PrimFunc& b, std::string* why_not = nullptr);
bool StructuralEqual(const tir::PrimExpr& a, const tir::PrimExpr& b, std::string* why_not = nullptr);
bool StructuralEqual(const graph::StructInfo& a, const graph::StructInfo& b, std::string* why_not = nullptr);

}  // namespace strata::ir
