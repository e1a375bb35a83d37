// PrimExpr node constructors and the math-like operators that build them.
//
// Every make() checks the typing rules of the scalar language with asserts: a
// malformed node is a compiler bug, not a user error (the parser reports user
// errors before it builds anything).
#include "compiler/ir/prim_expr.h"

#include <cassert>
#include <memory>
#include <utility>

#include "compiler/ir/arith/expr_order.h"

namespace strata::tir {

std::string_view BinaryOpName(PrimExprKind kind) {
  switch (kind) {
    case PrimExprKind::kAdd: return "+";
    case PrimExprKind::kSub: return "-";
    case PrimExprKind::kMul: return "*";
    case PrimExprKind::kDiv: return "/";
    case PrimExprKind::kFloorDiv: return "//";
    case PrimExprKind::kFloorMod: return "%";
    case PrimExprKind::kMin: return "min";
    case PrimExprKind::kMax: return "max";
    case PrimExprKind::kEQ: return "==";
    case PrimExprKind::kNE: return "!=";
    case PrimExprKind::kLT: return "<";
    case PrimExprKind::kLE: return "<=";
    case PrimExprKind::kGT: return ">";
    case PrimExprKind::kGE: return ">=";
    case PrimExprKind::kAnd: return "&&";
    case PrimExprKind::kOr: return "||";
    default: break;
  }
  assert(false && "BinaryOpName of a kind that is not a binary operator");
  return "?";
}

PrimExpr::PrimExpr(int64_t value) : PrimExpr(IntImmNode::make(DataType::I64(), value)) {}

PrimExpr IntImmNode::make(DataType dtype, int64_t value) {
  assert((dtype.is_integral() || dtype.is_bool()) && "IntImm needs an integer or bool dtype");
  assert((!dtype.is_bool() || value == 0 || value == 1) && "a bool IntImm is 0 or 1");
  return PrimExpr(std::make_shared<const IntImmNode>(dtype, value));
}

PrimExpr FloatImmNode::make(DataType dtype, double value) {
  assert(dtype.is_float() && "FloatImm needs a float dtype");
  return PrimExpr(std::make_shared<const FloatImmNode>(dtype, value));
}

// Records the creation index now, so same-named variables order by creation.
Var::Var(std::string name, DataType dtype) : PrimExpr(std::make_shared<const VarNode>(std::move(name), dtype)) {
  arith::CreationIndex(node_ptr());
}

Var Var::FromNode(const PrimExpr& expr) {
  assert(expr.as<VarNode>() && "Var::FromNode of an expression that is not a variable");
  Var var;
  static_cast<PrimExpr&>(var) = expr;
  return var;
}

namespace {

[[maybe_unused]] bool IsNumeric(DataType t) { return t.is_integral() || t.is_float(); }

}  // namespace

PrimExpr BinaryOpNode::make(PrimExprKind kind, PrimExpr a, PrimExpr b) {
  assert(IsBinaryOp(kind) && "BinaryOpNode::make with a kind that is not a binary operator");
  assert(a.defined() && b.defined() && "binary operator with a null operand");
  DataType t = a.dtype();
  assert(t == b.dtype() && "binary operator operands must have the same dtype");
  DataType result = t;
  switch (kind) {
    case PrimExprKind::kAdd:
    case PrimExprKind::kSub:
    case PrimExprKind::kMul:
    case PrimExprKind::kMin:
    case PrimExprKind::kMax: assert(IsNumeric(t) && "arithmetic needs integer or float operands"); break;
    case PrimExprKind::kDiv:
      assert(t.is_float() && "true division '/' is for floats; use FloorDiv for integers");
      break;
    case PrimExprKind::kFloorDiv:
    case PrimExprKind::kFloorMod: assert(t.is_integral() && "floordiv and floormod are for integers"); break;
    case PrimExprKind::kEQ:
    case PrimExprKind::kNE:
      assert((IsNumeric(t) || t.is_bool()) && "equality needs scalar operands");
      result = DataType::Bool();
      break;
    case PrimExprKind::kLT:
    case PrimExprKind::kLE:
    case PrimExprKind::kGT:
    case PrimExprKind::kGE:
      assert(IsNumeric(t) && "ordering comparisons need integer or float operands");
      result = DataType::Bool();
      break;
    case PrimExprKind::kAnd:
    case PrimExprKind::kOr:
      assert(t.is_bool() && "&& and || need bool operands");
      result = DataType::Bool();
      break;
    default: break;
  }
  return PrimExpr(std::make_shared<const BinaryOpNode>(kind, result, std::move(a), std::move(b)));
}

PrimExpr NotNode::make(PrimExpr a) {
  assert(a.defined() && a.dtype().is_bool() && "! needs a bool operand");
  return PrimExpr(std::make_shared<const NotNode>(std::move(a)));
}

PrimExpr SelectNode::make(PrimExpr condition, PrimExpr true_value, PrimExpr false_value) {
  assert(condition.defined() && true_value.defined() && false_value.defined() && "select with a null operand");
  assert(condition.dtype().is_bool() && "select condition must be bool");
  assert(true_value.dtype() == false_value.dtype() && "select branches must have the same dtype");
  return PrimExpr(
      std::make_shared<const SelectNode>(std::move(condition), std::move(true_value), std::move(false_value)));
}

PrimExpr CastNode::make(DataType dtype, PrimExpr value) {
  assert(value.defined() && "cast of a null expression");
  assert(!dtype.is_void() && "cast to void");
  return PrimExpr(std::make_shared<const CastNode>(dtype, std::move(value)));
}

std::string_view IntrinsicName(Intrinsic op) {
  switch (op) {
    case Intrinsic::kExp: return "exp";
    case Intrinsic::kLog: return "log";
    case Intrinsic::kSqrt: return "sqrt";
    case Intrinsic::kTanh: return "tanh";
    case Intrinsic::kErf: return "erf";
    case Intrinsic::kPow: return "pow";
    case Intrinsic::kAbs: return "abs";
    case Intrinsic::kFloor: return "floor";
    case Intrinsic::kCeil: return "ceil";
    case Intrinsic::kRound: return "round";
    case Intrinsic::kSin: return "sin";
    case Intrinsic::kCos: return "cos";
    case Intrinsic::kFmod: return "fmod";
  }
  assert(false && "unknown intrinsic");
  return "?";
}

int IntrinsicArity(Intrinsic op) { return op == Intrinsic::kPow || op == Intrinsic::kFmod ? 2 : 1; }

bool ParseIntrinsic(std::string_view name, Intrinsic* out) {
  static constexpr Intrinsic kAll[] = {Intrinsic::kExp,  Intrinsic::kLog,   Intrinsic::kSqrt, Intrinsic::kTanh,
                                       Intrinsic::kErf,  Intrinsic::kPow,   Intrinsic::kAbs,  Intrinsic::kFloor,
                                       Intrinsic::kCeil, Intrinsic::kRound, Intrinsic::kSin,  Intrinsic::kCos,
                                       Intrinsic::kFmod};
  for (Intrinsic op : kAll) {
    if (IntrinsicName(op) == name) {
      *out = op;
      return true;
    }
  }
  return false;
}

PrimExpr CallNode::make(Intrinsic op, std::vector<PrimExpr> args) {
  assert(static_cast<int>(args.size()) == IntrinsicArity(op) && "intrinsic called with the wrong number of arguments");
  DataType t = args[0].dtype();
  for ([[maybe_unused]] const PrimExpr& arg : args) {
    assert(arg.defined() && "intrinsic with a null argument");
    assert(arg.dtype() == t && "intrinsic arguments must share one dtype");
  }
  assert((t.is_float() || (op == Intrinsic::kAbs && t.is_integral())) &&
         "intrinsics take float arguments (abs also takes integers)");
  return PrimExpr(std::make_shared<const CallNode>(t, op, std::move(args)));
}

Buffer MakeBuffer(std::string name, DataType dtype, std::vector<PrimExpr> shape) {
  for ([[maybe_unused]] const PrimExpr& dim : shape) {
    assert(dim.defined() && dim.dtype().is_integral() && "buffer dimensions must be integers");
  }
  assert(!dtype.is_void() && "a buffer needs a known element dtype");
  Buffer buffer = std::make_shared<const BufferNode>(std::move(name), dtype, std::move(shape));
  arith::CreationIndex(buffer);  // same-named buffers order by creation
  return buffer;
}

PrimExpr BufferLoadNode::make(Buffer buffer, std::vector<PrimExpr> indices) {
  assert(buffer && "load from a null buffer");
  assert(indices.size() == buffer->shape.size() && "load needs one index per buffer dimension");
  for ([[maybe_unused]] const PrimExpr& index : indices) {
    assert(index.defined() && index.dtype().is_integral() && "buffer indices must be integers");
  }
  return PrimExpr(std::make_shared<const BufferLoadNode>(std::move(buffer), std::move(indices)));
}

namespace {

// Gives an immediate operand the dtype of the other operand, so `n * 2` works
// whatever integer dtype n has, and `x * 2` works for a float x. Non-constant
// operands of different dtypes are a bug at the call site.
void UnifyConstants(PrimExpr* a, PrimExpr* b) {
  if (a->dtype() == b->dtype()) return;
  auto convert = [](const PrimExpr& imm, DataType to) -> PrimExpr {
    if (const auto* i = imm.as<IntImmNode>()) {
      if (to.is_float()) return FloatImmNode::make(to, static_cast<double>(i->value));
      if (to.is_integral()) return IntImmNode::make(to, i->value);
    }
    if (const auto* f = imm.as<FloatImmNode>()) {
      if (to.is_float()) return FloatImmNode::make(to, f->value);
    }
    return PrimExpr();
  };
  if (PrimExpr converted = convert(*b, a->dtype())) {
    *b = converted;
    return;
  }
  if (PrimExpr converted = convert(*a, b->dtype())) {
    *a = converted;
    return;
  }
  assert(false && "operands of different dtypes (and neither is a convertible constant)");
}

PrimExpr MakeBinary(PrimExprKind kind, PrimExpr a, PrimExpr b) {
  UnifyConstants(&a, &b);
  return BinaryOpNode::make(kind, std::move(a), std::move(b));
}

}  // namespace

PrimExpr operator+(PrimExpr a, PrimExpr b) { return MakeBinary(PrimExprKind::kAdd, std::move(a), std::move(b)); }
PrimExpr operator-(PrimExpr a, PrimExpr b) { return MakeBinary(PrimExprKind::kSub, std::move(a), std::move(b)); }
PrimExpr operator*(PrimExpr a, PrimExpr b) { return MakeBinary(PrimExprKind::kMul, std::move(a), std::move(b)); }

// Negating a literal gives the negative literal (so the parser's `-1` is the
// constant -1, not 0 - 1); anything else becomes `0 - a`.
PrimExpr operator-(PrimExpr a) {
  if (const auto* i = a.as<IntImmNode>()) {
    if (!a.dtype().is_bool()) return IntImmNode::make(a.dtype(), -i->value);
  }
  if (const auto* f = a.as<FloatImmNode>()) return FloatImmNode::make(a.dtype(), -f->value);
  PrimExpr zero = a.dtype().is_float() ? FloatImmNode::make(a.dtype(), 0.0) : IntImmNode::make(a.dtype(), 0);
  return BinaryOpNode::make(PrimExprKind::kSub, std::move(zero), std::move(a));
}

PrimExpr FloorDiv(PrimExpr a, PrimExpr b) { return MakeBinary(PrimExprKind::kFloorDiv, std::move(a), std::move(b)); }
PrimExpr FloorMod(PrimExpr a, PrimExpr b) { return MakeBinary(PrimExprKind::kFloorMod, std::move(a), std::move(b)); }
PrimExpr Min(PrimExpr a, PrimExpr b) { return MakeBinary(PrimExprKind::kMin, std::move(a), std::move(b)); }
PrimExpr Max(PrimExpr a, PrimExpr b) { return MakeBinary(PrimExprKind::kMax, std::move(a), std::move(b)); }
PrimExpr IntImm(DataType dtype, int64_t value) { return IntImmNode::make(dtype, value); }
PrimExpr FloatImm(DataType dtype, double value) { return FloatImmNode::make(dtype, value); }

const int64_t* AsConstInt(const PrimExpr& expr) {
  const auto* imm = expr.as<IntImmNode>();
  return imm ? &imm->value : nullptr;
}

}  // namespace strata::tir
