// A minimal infix printer for scalar expressions, so the arithmetic tests can
// state canonical forms as text without depending on the IR printer.
#pragma once

#include <string>

#include "compiler/ir/prim_expr.h"

namespace strata::testing {

inline int Precedence(tir::PrimExprKind kind) {
  switch (kind) {
    case tir::PrimExprKind::kOr: return 1;
    case tir::PrimExprKind::kAnd: return 2;
    case tir::PrimExprKind::kEQ:
    case tir::PrimExprKind::kNE: return 3;
    case tir::PrimExprKind::kLT:
    case tir::PrimExprKind::kLE:
    case tir::PrimExprKind::kGT:
    case tir::PrimExprKind::kGE: return 4;
    case tir::PrimExprKind::kAdd:
    case tir::PrimExprKind::kSub: return 5;
    case tir::PrimExprKind::kMul:
    case tir::PrimExprKind::kDiv:
    case tir::PrimExprKind::kFloorDiv:
    case tir::PrimExprKind::kFloorMod: return 6;
    default: return 7;  // atoms and calls
  }
}

inline std::string ExprText(const tir::PrimExpr& e) {
  using tir::PrimExprKind;
  if (const auto* imm = e.as<tir::IntImmNode>()) {
    if (e.dtype().is_bool()) return imm->value ? "true" : "false";
    return std::to_string(imm->value);
  }
  if (const auto* imm = e.as<tir::FloatImmNode>()) return std::to_string(imm->value);
  if (const auto* var = e.as<tir::VarNode>()) return var->name;
  if (const auto* op = e.as<tir::BinaryOpNode>()) {
    if (op->kind == PrimExprKind::kMin || op->kind == PrimExprKind::kMax) {
      return std::string(tir::BinaryOpName(op->kind)) + "(" + ExprText(op->a) + ", " + ExprText(op->b) + ")";
    }
    int p = Precedence(op->kind);
    std::string a = ExprText(op->a), b = ExprText(op->b);
    if (Precedence(op->a->kind) < p) a = "(" + a + ")";
    if (Precedence(op->b->kind) <= p) b = "(" + b + ")";  // left-associative
    return a + " " + std::string(tir::BinaryOpName(op->kind)) + " " + b;
  }
  if (const auto* op = e.as<tir::NotNode>()) return "!(" + ExprText(op->a) + ")";
  if (const auto* op = e.as<tir::SelectNode>()) {
    return "select(" + ExprText(op->condition) + ", " + ExprText(op->true_value) + ", " + ExprText(op->false_value) +
           ")";
  }
  if (const auto* op = e.as<tir::CastNode>()) return "cast<" + op->dtype.ToString() + ">(" + ExprText(op->value) + ")";
  if (const auto* op = e.as<tir::CallNode>()) {
    std::string s = std::string(tir::IntrinsicName(op->op)) + "(";
    for (size_t i = 0; i < op->args.size(); ++i) s += (i ? ", " : "") + ExprText(op->args[i]);
    return s + ")";
  }
  if (const auto* op = e.as<tir::BufferLoadNode>()) {
    std::string s = op->buffer->name + "[";
    for (size_t i = 0; i < op->indices.size(); ++i) s += (i ? ", " : "") + ExprText(op->indices[i]);
    return s + "]";
  }
  return "?";
}

}  // namespace strata::testing
