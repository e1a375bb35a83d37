// ShapeText: short text of a shape expression for kernel error messages.
//
// Argument-check messages quote the expected dimension the way the user wrote it
// ("expected n * 2 = 6, got 5"). The codegen must not depend on the text printer
// (it is a separate layer), and only integer shape arithmetic needs printing here.
#pragma once

#include <string>

#include "compiler/ir/prim_expr.h"

namespace strata::codegen {

// "n", "16", "n * 2 + 1", "min(m, 4)"; nested operators are parenthesized.
std::string ShapeText(const tir::PrimExpr& expr);

}  // namespace strata::codegen
