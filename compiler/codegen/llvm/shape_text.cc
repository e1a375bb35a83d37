// ShapeText: see shape_text.h.
#include "compiler/codegen/llvm/shape_text.h"

namespace strata::codegen {
namespace {

using tir::PrimExprKind;

std::string Text(const tir::PrimExpr& expr, bool nested) {
  if (const auto* imm = expr.as<tir::IntImmNode>()) return std::to_string(imm->value);
  if (const auto* var = expr.as<tir::VarNode>()) return var->name;
  if (const auto* cast = expr.as<tir::CastNode>()) {
    return "cast<" + cast->dtype.ToString() + ">(" + Text(cast->value, false) + ")";
  }
  if (const auto* bin = expr.as<tir::BinaryOpNode>()) {
    std::string op(tir::BinaryOpName(bin->kind));
    if (bin->kind == PrimExprKind::kMin || bin->kind == PrimExprKind::kMax) {
      return op + "(" + Text(bin->a, false) + ", " + Text(bin->b, false) + ")";
    }
    std::string text = Text(bin->a, true) + " " + op + " " + Text(bin->b, true);
    return nested ? "(" + text + ")" : text;
  }
  return "<expr>";
}

}  // namespace

std::string ShapeText(const tir::PrimExpr& expr) { return Text(expr, false); }

}  // namespace strata::codegen
