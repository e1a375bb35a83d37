// The simplifier: rewrite rules on top of the polynomial canonical form.
//
// Signed integer expressions go through ToPoly, which turns +, -, * into
// polynomial arithmetic and every other node into an atom after simplifying its
// children (and applying that node's own rules: division by a constant, min/max
// of comparable operands, constant folding). Everything else (bool, float and
// unsigned expressions) goes through SimplifyOther, which folds constants and
// decides integer comparisons through the sign of the operands' difference.
#include "compiler/ir/arith/simplify.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <numeric>
#include <utility>

#include "compiler/ir/arith/expr_order.h"
#include "compiler/ir/arith/polynomial.h"
#include "compiler/ir/tir_visitor.h"

namespace strata::arith {

namespace {

using tir::BinaryOpNode;
using tir::PrimExpr;
using tir::PrimExprKind;

PrimExpr SimplifyExpr(const PrimExpr& e);
Polynomial ToPoly(const PrimExpr& e);
bool NonNegative(const Polynomial& p);

// ---------------------------------------------------------------- helpers

// Floor division and modulo on int64 (b != 0), wrapping INT64_MIN / -1.
int64_t FloorDivInt(int64_t a, int64_t b) {
  if (b == -1) return static_cast<int64_t>(uint64_t{0} - static_cast<uint64_t>(a));
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t FloorModInt(int64_t a, int64_t b) {
  if (b == -1) return 0;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

// `built`, or `self` when the two are structurally equal, so simplifying an
// expression already in canonical form returns the very same handle.
PrimExpr Reuse(const PrimExpr& self, PrimExpr built) {
  if (self.defined() && CompareExprs(self, built) == 0) return self;
  return built;
}

PrimExpr Bool(bool value) { return tir::IntImm(DataType::Bool(), value ? 1 : 0); }

// The value rounded to the float dtype, or nullopt for dtypes we do not fold (f16).
std::optional<double> RoundFloat(DataType t, double v) {
  if (t.bits() == 64) return v;
  if (t.bits() == 32) return static_cast<double>(static_cast<float>(v));
  return std::nullopt;
}

PrimExpr FoldedFloat(DataType t, double v) {
  std::optional<double> rounded = RoundFloat(t, v);
  return rounded ? tir::FloatImm(t, *rounded) : PrimExpr();
}

// The atom of a polynomial that is exactly `1 * atom`, else nullptr.
const PrimExpr* LoneAtom(const Polynomial& p) {
  if (p.terms().size() != 1 || p.constant() != 0) return nullptr;
  const Monomial& m = p.terms()[0];
  return m.coeff == 1 && m.atoms.size() == 1 ? &m.atoms[0] : nullptr;
}

// Orders the operands of a commutative atom (min, max, an unexpanded product).
PrimExpr MakeCommutative(PrimExprKind kind, PrimExpr a, PrimExpr b) {
  if (CompareExprs(b, a) < 0) std::swap(a, b);
  return BinaryOpNode::make(kind, std::move(a), std::move(b));
}

// ---------------------------------------------------------------- constants

// Folds a cast of an immediate; null when `value` is not foldable.
PrimExpr FoldCast(DataType to, const PrimExpr& value) {
  DataType from = value.dtype();
  if (const auto* imm = value.as<tir::IntImmNode>()) {
    if (to.is_bool()) return Bool(imm->value != 0);
    if (to.is_integral()) return tir::IntImm(to, WrapInt(to, static_cast<uint64_t>(imm->value)));
    if (to.is_float()) {
      double v =
          from.is_uint() ? static_cast<double>(static_cast<uint64_t>(imm->value)) : static_cast<double>(imm->value);
      return FoldedFloat(to, v);
    }
    return PrimExpr();
  }
  if (const auto* imm = value.as<tir::FloatImmNode>()) {
    double v = imm->value;
    if (to.is_bool()) return Bool(v != 0.0);
    if (to.is_float()) return FoldedFloat(to, v);
    if (to.is_integral()) {
      // Out-of-range conversions are undefined in the generated code too; keep them.
      if (std::isnan(v) || v <= -9.2e18 || v >= 9.2e18 || (to.is_uint() && v <= -1.0)) return PrimExpr();
      return tir::IntImm(to, WrapInt(to, static_cast<uint64_t>(static_cast<int64_t>(std::trunc(v)))));
    }
  }
  return PrimExpr();
}

// Folds a binary operator whose operands are both immediates (of any dtype);
// null when they are not, or when folding would hide a division by zero.
PrimExpr FoldBinary(PrimExprKind kind, const PrimExpr& a, const PrimExpr& b) {
  DataType t = a.dtype();
  if (const auto* fa = a.as<tir::FloatImmNode>()) {
    const auto* fb = b.as<tir::FloatImmNode>();
    if (!fb) return PrimExpr();
    double x = fa->value, y = fb->value;
    switch (kind) {
      case PrimExprKind::kAdd: return FoldedFloat(t, x + y);
      case PrimExprKind::kSub: return FoldedFloat(t, x - y);
      case PrimExprKind::kMul: return FoldedFloat(t, x * y);
      case PrimExprKind::kDiv: return FoldedFloat(t, x / y);
      case PrimExprKind::kMin: return FoldedFloat(t, std::fmin(x, y));
      case PrimExprKind::kMax: return FoldedFloat(t, std::fmax(x, y));
      case PrimExprKind::kEQ: return Bool(x == y);
      case PrimExprKind::kNE: return Bool(x != y);
      case PrimExprKind::kLT: return Bool(x < y);
      case PrimExprKind::kLE: return Bool(x <= y);
      case PrimExprKind::kGT: return Bool(x > y);
      case PrimExprKind::kGE: return Bool(x >= y);
      default: return PrimExpr();
    }
  }
  const auto* ia = a.as<tir::IntImmNode>();
  const auto* ib = b.as<tir::IntImmNode>();
  if (!ia || !ib) return PrimExpr();
  if (t.is_int()) {
    int64_t x = ia->value, y = ib->value;
    auto wrap = [&](uint64_t v) { return tir::IntImm(t, WrapInt(t, v)); };
    switch (kind) {
      case PrimExprKind::kAdd: return wrap(static_cast<uint64_t>(x) + static_cast<uint64_t>(y));
      case PrimExprKind::kSub: return wrap(static_cast<uint64_t>(x) - static_cast<uint64_t>(y));
      case PrimExprKind::kMul: return wrap(static_cast<uint64_t>(x) * static_cast<uint64_t>(y));
      case PrimExprKind::kFloorDiv: return y == 0 ? PrimExpr() : wrap(static_cast<uint64_t>(FloorDivInt(x, y)));
      case PrimExprKind::kFloorMod: return y == 0 ? PrimExpr() : wrap(static_cast<uint64_t>(FloorModInt(x, y)));
      case PrimExprKind::kMin: return tir::IntImm(t, std::min(x, y));
      case PrimExprKind::kMax: return tir::IntImm(t, std::max(x, y));
      case PrimExprKind::kEQ: return Bool(x == y);
      case PrimExprKind::kNE: return Bool(x != y);
      case PrimExprKind::kLT: return Bool(x < y);
      case PrimExprKind::kLE: return Bool(x <= y);
      case PrimExprKind::kGT: return Bool(x > y);
      case PrimExprKind::kGE: return Bool(x >= y);
      default: return PrimExpr();
    }
  }
  // Unsigned integers and bools: compare and divide as unsigned values.
  uint64_t x = static_cast<uint64_t>(ia->value), y = static_cast<uint64_t>(ib->value);
  if (t.is_bool()) {
    switch (kind) {
      case PrimExprKind::kEQ: return Bool(x == y);
      case PrimExprKind::kNE: return Bool(x != y);
      case PrimExprKind::kAnd: return Bool(x && y);
      case PrimExprKind::kOr: return Bool(x || y);
      default: return PrimExpr();
    }
  }
  auto wrap = [&](uint64_t v) { return tir::IntImm(t, WrapInt(t, v)); };
  switch (kind) {
    case PrimExprKind::kAdd: return wrap(x + y);
    case PrimExprKind::kSub: return wrap(x - y);
    case PrimExprKind::kMul: return wrap(x * y);
    case PrimExprKind::kFloorDiv: return y == 0 ? PrimExpr() : wrap(x / y);
    case PrimExprKind::kFloorMod: return y == 0 ? PrimExpr() : wrap(x % y);
    case PrimExprKind::kMin: return wrap(std::min(x, y));
    case PrimExprKind::kMax: return wrap(std::max(x, y));
    case PrimExprKind::kEQ: return Bool(x == y);
    case PrimExprKind::kNE: return Bool(x != y);
    case PrimExprKind::kLT: return Bool(x < y);
    case PrimExprKind::kLE: return Bool(x <= y);
    case PrimExprKind::kGT: return Bool(x > y);
    case PrimExprKind::kGE: return Bool(x >= y);
    default: return PrimExpr();
  }
}

// Folds an intrinsic call whose arguments are all immediates; null otherwise.
PrimExpr FoldCall(tir::Intrinsic op, const std::vector<PrimExpr>& args) {
  DataType t = args[0].dtype();
  if (const auto* imm = args[0].as<tir::IntImmNode>()) {
    if (op != tir::Intrinsic::kAbs) return PrimExpr();
    uint64_t v = static_cast<uint64_t>(imm->value);
    return tir::IntImm(t, WrapInt(t, imm->value < 0 ? uint64_t{0} - v : v));
  }
  std::vector<double> x;
  for (const PrimExpr& arg : args) {
    const auto* imm = arg.as<tir::FloatImmNode>();
    if (!imm) return PrimExpr();
    x.push_back(imm->value);
  }
  switch (op) {
    case tir::Intrinsic::kExp: return FoldedFloat(t, std::exp(x[0]));
    case tir::Intrinsic::kLog: return FoldedFloat(t, std::log(x[0]));
    case tir::Intrinsic::kSqrt: return FoldedFloat(t, std::sqrt(x[0]));
    case tir::Intrinsic::kTanh: return FoldedFloat(t, std::tanh(x[0]));
    case tir::Intrinsic::kErf: return FoldedFloat(t, std::erf(x[0]));
    case tir::Intrinsic::kPow: return FoldedFloat(t, std::pow(x[0], x[1]));
    case tir::Intrinsic::kAbs: return FoldedFloat(t, std::fabs(x[0]));
    case tir::Intrinsic::kFloor: return FoldedFloat(t, std::floor(x[0]));
    case tir::Intrinsic::kCeil: return FoldedFloat(t, std::ceil(x[0]));
    case tir::Intrinsic::kRound: return FoldedFloat(t, std::nearbyint(x[0]));  // default rounding: half to even
    case tir::Intrinsic::kSin: return FoldedFloat(t, std::sin(x[0]));
    case tir::Intrinsic::kCos: return FoldedFloat(t, std::cos(x[0]));
    case tir::Intrinsic::kFmod: return FoldedFloat(t, std::fmod(x[0], x[1]));
  }
  return PrimExpr();
}

// ---------------------------------------------------------------- atoms shared by both paths

// Whether a select on `condition` (simplified) with branches t and f
// (simplified) is one of its branches whatever the condition: the same
// branches; or a condition `v == e` (e free of v) under which both branches
// agree, as broadcasting writes them: select(n == 1, min(512, n), n) is n,
// because at n = 1 both sides are 1. Likewise select(v != e, t, f) is t.
// Returns that branch, or null.
PrimExpr BranchTheSelectAlwaysIs(const PrimExpr& condition, const PrimExpr& t, const PrimExpr& f) {
  if (CompareExprs(t, f) == 0) return t;
  const auto* cmp = condition.as<BinaryOpNode>();
  if (cmp == nullptr || (cmp->kind != PrimExprKind::kEQ && cmp->kind != PrimExprKind::kNE) ||
      !cmp->a.dtype().is_int() || !t.dtype().is_int()) {
    return PrimExpr();
  }
  for (int side = 0; side < 2; ++side) {
    const auto* var = (side == 0 ? cmp->a : cmp->b).as<tir::VarNode>();
    const PrimExpr& value = side == 0 ? cmp->b : cmp->a;
    if (var == nullptr) continue;
    auto at_value = [&](const PrimExpr& e) {
      return tir::Substitute(e, [&](const tir::VarNode* v) { return v == var ? value : PrimExpr(); });
    };
    if (!at_value(value).same_as(value)) continue;  // v == e(v) binds nothing
    if (CompareExprs(SimplifyExpr(at_value(t)), SimplifyExpr(at_value(f))) == 0) {
      return cmp->kind == PrimExprKind::kEQ ? f : t;
    }
  }
  return PrimExpr();
}

// Simplifies the children of a select, cast, call or load; folds it when possible.
// `self` comes back when nothing changed.
PrimExpr SimplifySelect(const PrimExpr& self, const tir::SelectNode* op) {
  PrimExpr condition = SimplifyExpr(op->condition);
  if (const int64_t* c = tir::AsConstInt(condition)) return SimplifyExpr(*c ? op->true_value : op->false_value);
  PrimExpr t = SimplifyExpr(op->true_value);
  PrimExpr f = SimplifyExpr(op->false_value);
  if (PrimExpr branch = BranchTheSelectAlwaysIs(condition, t, f)) return branch;
  if (condition.same_as(op->condition) && t.same_as(op->true_value) && f.same_as(op->false_value)) return self;
  return tir::SelectNode::make(std::move(condition), std::move(t), std::move(f));
}

PrimExpr SimplifyCast(const PrimExpr& self, const tir::CastNode* op) {
  PrimExpr value = SimplifyExpr(op->value);
  if (value.dtype() == op->dtype) return value;
  if (PrimExpr folded = FoldCast(op->dtype, value)) return folded;
  if (value.same_as(op->value)) return self;
  return tir::CastNode::make(op->dtype, std::move(value));
}

PrimExpr SimplifyCall(const PrimExpr& self, const tir::CallNode* op) {
  std::vector<PrimExpr> args;
  bool changed = false;
  for (const PrimExpr& arg : op->args) {
    args.push_back(SimplifyExpr(arg));
    changed |= !args.back().same_as(arg);
  }
  if (PrimExpr folded = FoldCall(op->op, args)) return folded;
  if (!changed) return self;
  return tir::CallNode::make(op->op, std::move(args));
}

PrimExpr SimplifyLoad(const PrimExpr& self, const tir::BufferLoadNode* op) {
  std::vector<PrimExpr> indices;
  bool changed = false;
  for (const PrimExpr& index : op->indices) {
    indices.push_back(SimplifyExpr(index));
    changed |= !indices.back().same_as(index);
  }
  if (!changed) return self;
  return tir::BufferLoadNode::make(op->buffer, std::move(indices));
}

// ---------------------------------------------------------------- signed integers

// A polynomial that is `expr` if `expr` is an immediate, else the atom `expr`.
Polynomial AtomOrConstant(const PrimExpr& expr) {
  if (const int64_t* c = tir::AsConstInt(expr)) return Polynomial(expr.dtype(), *c);
  return Polynomial::Atom(expr);
}

// floordiv / floormod of a polynomial by anything. With a positive constant
// divisor c, a = c * q + r where q collects the terms whose coefficients c
// divides (and the constant's quotient), so a // c = q + r // c and a % c = r % c,
// and r is divided by the gcd of its coefficients and c before it becomes an atom.
Polynomial DivMod(PrimExprKind kind, const Polynomial& a, const Polynomial& b, const PrimExpr& self) {
  bool is_div = kind == PrimExprKind::kFloorDiv;
  DataType t = a.dtype();
  auto opaque = [&]() { return Polynomial::Atom(Reuse(self, BinaryOpNode::make(kind, a.ToExpr(), b.ToExpr()))); };
  if (!b.IsConstant()) return opaque();
  int64_t c = b.constant();
  if (c == 0) return opaque();  // a division by zero stays visible
  if (c < 0) {
    if (!a.IsConstant()) return opaque();
    return Polynomial(t, is_div ? FloorDivInt(a.constant(), c) : FloorModInt(a.constant(), c));
  }
  std::vector<Monomial> quotient, rest;
  for (const Monomial& m : a.terms()) {
    if (m.coeff % c == 0) {
      quotient.push_back(Monomial{m.atoms, m.coeff / c});
    } else {
      rest.push_back(m);
    }
  }
  Polynomial q = Polynomial::FromTerms(t, std::move(quotient), FloorDivInt(a.constant(), c));
  int64_t rest_constant = FloorModInt(a.constant(), c);
  if (rest.empty()) return is_div ? q : Polynomial(t, rest_constant);  // 0 <= rest < c

  int64_t g = std::gcd(c, rest_constant);
  for (const Monomial& m : rest) g = std::gcd(g, m.coeff);
  for (Monomial& m : rest) m.coeff /= g;
  Polynomial r = Polynomial::FromTerms(t, std::move(rest), rest_constant / g);
  int64_t divisor = c / g;

  // Nested divisions by constants: (x // c2) // d is x // (c2 * d), and
  // (x % c2) % d is x % d when d divides c2, or x % c2 when c2 <= d.
  Polynomial inner = Polynomial(t);
  bool nested = false;
  if (const PrimExpr* atom = LoneAtom(r)) {
    const auto* bin = atom->as<BinaryOpNode>();
    const int64_t* c2 = bin ? tir::AsConstInt(bin->b) : nullptr;
    if (c2 && *c2 > 0 && bin->kind == kind) {
      int64_t product;
      if (is_div && !__builtin_mul_overflow(*c2, divisor, &product)) {
        inner = DivMod(kind, ToPoly(bin->a), Polynomial(t, product), PrimExpr());
        nested = true;
      } else if (!is_div && *c2 % divisor == 0) {
        inner = DivMod(kind, ToPoly(bin->a), Polynomial(t, divisor), PrimExpr());
        nested = true;
      } else if (!is_div && *c2 <= divisor) {
        inner = r;
        nested = true;
      }
    }
  }
  if (!nested) {
    PrimExpr built = BinaryOpNode::make(kind, r.ToExpr(), tir::IntImm(t, divisor));
    // `self` is reusable only when nothing was factored out around the atom.
    bool whole = is_div ? q.IsZero() && g == 1 : g == 1;
    inner = Polynomial::Atom(whole ? Reuse(self, std::move(built)) : built);
  }
  if (is_div) return q + inner;
  return inner.Scale(g);
}

// min / max: decided when the sign of a - b is provable, else an atom with its
// operands in canonical order.
Polynomial MinMax(PrimExprKind kind, const Polynomial& a, const Polynomial& b, const PrimExpr& self) {
  bool is_max = kind == PrimExprKind::kMax;
  Polynomial diff = a - b;
  if (NonNegative(diff)) return is_max ? a : b;
  if (NonNegative(diff.Scale(-1))) return is_max ? b : a;
  return Polynomial::Atom(Reuse(self, MakeCommutative(kind, a.ToExpr(), b.ToExpr())));
}

Polynomial ToPoly(const PrimExpr& e) {
  assert(e.dtype().is_int() && "ToPoly of a non-signed-integer expression");
  DataType t = e.dtype();
  switch (e->kind) {
    case PrimExprKind::kIntImm: return Polynomial(t, e.as<tir::IntImmNode>()->value);
    case PrimExprKind::kVar: return Polynomial::Atom(e);
    case PrimExprKind::kSelect: {
      // Like SimplifySelect, but a decided select expands its branch in place.
      const auto* op = e.as<tir::SelectNode>();
      PrimExpr condition = SimplifyExpr(op->condition);
      if (const int64_t* c = tir::AsConstInt(condition)) return ToPoly(*c ? op->true_value : op->false_value);
      Polynomial t_poly = ToPoly(op->true_value);
      Polynomial f_poly = ToPoly(op->false_value);
      if (t_poly.Equals(f_poly)) return t_poly;
      PrimExpr t = t_poly.ToExpr();
      PrimExpr f = f_poly.ToExpr();
      if (PrimExpr branch = BranchTheSelectAlwaysIs(condition, t, f)) return branch.same_as(t) ? t_poly : f_poly;
      return Polynomial::Atom(Reuse(e, tir::SelectNode::make(condition, std::move(t), std::move(f))));
    }
    case PrimExprKind::kCast: {
      PrimExpr simplified = SimplifyCast(e, e.as<tir::CastNode>());
      // A cast that vanished leaves a signed integer expression to expand.
      if (!simplified.as<tir::CastNode>() && !simplified.as<tir::IntImmNode>()) return ToPoly(simplified);
      return AtomOrConstant(simplified);
    }
    case PrimExprKind::kCall: return AtomOrConstant(SimplifyCall(e, e.as<tir::CallNode>()));
    case PrimExprKind::kBufferLoad: return Polynomial::Atom(SimplifyLoad(e, e.as<tir::BufferLoadNode>()));
    default: break;
  }
  const auto* op = e.as<BinaryOpNode>();
  assert(op && "unexpected signed integer expression kind");
  Polynomial a = ToPoly(op->a);
  Polynomial b = ToPoly(op->b);
  switch (op->kind) {
    case PrimExprKind::kAdd: return a + b;
    case PrimExprKind::kSub: return a - b;
    case PrimExprKind::kMul: {
      if (std::optional<Polynomial> product = a.Multiply(b)) return *product;
      return Polynomial::Atom(MakeCommutative(PrimExprKind::kMul, a.ToExpr(), b.ToExpr()));
    }
    case PrimExprKind::kFloorDiv:
    case PrimExprKind::kFloorMod: return DivMod(op->kind, a, b, e);
    case PrimExprKind::kMin:
    case PrimExprKind::kMax: return MinMax(op->kind, a, b, e);
    default: break;
  }
  assert(false && "unexpected signed integer binary operator");
  return Polynomial(t);
}

// ---------------------------------------------------------------- non-negativity

bool NonNegativeAtom(const PrimExpr& atom);

bool NonNegativeExpr(const PrimExpr& e) {
  if (e.dtype().is_uint() || e.dtype().is_bool()) return true;
  if (!e.dtype().is_int()) return false;
  return NonNegative(ToPoly(e));
}

// Atoms that cannot be negative when every i64 variable is non-negative.
bool NonNegativeAtom(const PrimExpr& atom) {
  switch (atom->kind) {
    case PrimExprKind::kVar: return atom.dtype() == DataType::I64();
    case PrimExprKind::kFloorDiv:
    case PrimExprKind::kFloorMod: {
      const auto* op = atom.as<BinaryOpNode>();
      const int64_t* c = tir::AsConstInt(op->b);
      if (!c || *c <= 0) return false;
      return atom->kind == PrimExprKind::kFloorMod || NonNegativeExpr(op->a);
    }
    case PrimExprKind::kMin: {
      const auto* op = atom.as<BinaryOpNode>();
      return NonNegativeExpr(op->a) && NonNegativeExpr(op->b);
    }
    case PrimExprKind::kMax: {
      const auto* op = atom.as<BinaryOpNode>();
      return NonNegativeExpr(op->a) || NonNegativeExpr(op->b);
    }
    case PrimExprKind::kMul: {  // an unexpanded product
      const auto* op = atom.as<BinaryOpNode>();
      return NonNegativeExpr(op->a) && NonNegativeExpr(op->b);
    }
    case PrimExprKind::kSelect: {
      const auto* op = atom.as<tir::SelectNode>();
      return NonNegativeExpr(op->true_value) && NonNegativeExpr(op->false_value);
    }
    case PrimExprKind::kCall: return atom.as<tir::CallNode>()->op == tir::Intrinsic::kAbs;
    default: return false;
  }
}

// A monomial with a non-negative coefficient is non-negative when each atom is,
// or when every atom occurs an even number of times (a square).
bool NonNegativeMonomial(const Monomial& m) {
  if (m.coeff < 0) return false;
  bool all_atoms = true;
  for (const PrimExpr& atom : m.atoms) {
    if (!NonNegativeAtom(atom)) {
      all_atoms = false;
      break;
    }
  }
  if (all_atoms) return true;
  for (size_t i = 0; i < m.atoms.size();) {  // atoms are sorted: repeats are adjacent
    size_t j = i;
    while (j < m.atoms.size() && CompareExprs(m.atoms[i], m.atoms[j]) == 0) ++j;
    if ((j - i) % 2 != 0) return false;
    i = j;
  }
  return true;
}

bool NonNegative(const Polynomial& p) {
  if (p.constant() < 0) return false;
  for (const Monomial& m : p.terms()) {
    if (!NonNegativeMonomial(m)) return false;
  }
  return true;
}

// ---------------------------------------------------------------- bool, float, unsigned

PrimExprKind Inverse(PrimExprKind kind) {
  switch (kind) {
    case PrimExprKind::kEQ: return PrimExprKind::kNE;
    case PrimExprKind::kNE: return PrimExprKind::kEQ;
    case PrimExprKind::kLT: return PrimExprKind::kGE;
    case PrimExprKind::kLE: return PrimExprKind::kGT;
    case PrimExprKind::kGT: return PrimExprKind::kLE;
    case PrimExprKind::kGE: return PrimExprKind::kLT;
    default: break;
  }
  assert(false && "Inverse of a non-comparison");
  return kind;
}

// The truth of `d kind 0` when the sign of d is provable.
std::optional<bool> DecideAgainstZero(PrimExprKind kind, const Polynomial& d) {
  auto ge0 = [&] { return NonNegative(d); };
  auto gt0 = [&] { return NonNegative(d.AddConstant(-1)); };
  auto le0 = [&] { return NonNegative(d.Scale(-1)); };
  auto lt0 = [&] { return NonNegative(d.Scale(-1).AddConstant(-1)); };
  switch (kind) {
    case PrimExprKind::kEQ:
    case PrimExprKind::kNE: {
      if (d.IsZero()) return kind == PrimExprKind::kEQ;
      if (gt0() || lt0()) return kind == PrimExprKind::kNE;
      return std::nullopt;
    }
    case PrimExprKind::kLT:
      if (lt0()) return true;
      if (ge0()) return false;
      return std::nullopt;
    case PrimExprKind::kLE:
      if (le0()) return true;
      if (gt0()) return false;
      return std::nullopt;
    case PrimExprKind::kGT:
      if (gt0()) return true;
      if (le0()) return false;
      return std::nullopt;
    case PrimExprKind::kGE:
      if (ge0()) return true;
      if (lt0()) return false;
      return std::nullopt;
    default: return std::nullopt;
  }
}

PrimExpr SimplifyComparison(const PrimExpr& self, const BinaryOpNode* op) {
  if (op->a.dtype().is_int()) {
    Polynomial a = ToPoly(op->a);
    Polynomial b = ToPoly(op->b);
    if (std::optional<bool> known = DecideAgainstZero(op->kind, a - b)) return Bool(*known);
    return Reuse(self, BinaryOpNode::make(op->kind, a.ToExpr(), b.ToExpr()));
  }
  PrimExpr a = SimplifyExpr(op->a);
  PrimExpr b = SimplifyExpr(op->b);
  if (PrimExpr folded = FoldBinary(op->kind, a, b)) return folded;
  if (a.same_as(op->a) && b.same_as(op->b)) return self;
  return BinaryOpNode::make(op->kind, std::move(a), std::move(b));
}

PrimExpr SimplifyLogic(const PrimExpr& self, const BinaryOpNode* op) {
  bool is_and = op->kind == PrimExprKind::kAnd;
  PrimExpr a = SimplifyExpr(op->a);
  PrimExpr b = SimplifyExpr(op->b);
  // x && true = x, x && false = false; x || false = x, x || true = true.
  for (int side = 0; side < 2; ++side) {
    const PrimExpr& constant = side == 0 ? a : b;
    const PrimExpr& other = side == 0 ? b : a;
    if (const int64_t* c = tir::AsConstInt(constant)) {
      bool absorbing = is_and ? *c == 0 : *c != 0;
      return absorbing ? Bool(*c != 0) : other;
    }
  }
  if (CompareExprs(a, b) == 0) return a;
  if (a.same_as(op->a) && b.same_as(op->b)) return self;
  return BinaryOpNode::make(op->kind, std::move(a), std::move(b));
}

PrimExpr SimplifyNot(const PrimExpr& self, const tir::NotNode* op) {
  PrimExpr a = SimplifyExpr(op->a);
  if (const int64_t* c = tir::AsConstInt(a)) return Bool(*c == 0);
  if (const auto* inner = a.as<tir::NotNode>()) return inner->a;
  // Integer comparisons invert exactly (float ones do not, because of NaN).
  if (const auto* cmp = a.as<BinaryOpNode>(); cmp && IsComparison(cmp->kind) && cmp->a.dtype().is_integral()) {
    return BinaryOpNode::make(Inverse(cmp->kind), cmp->a, cmp->b);
  }
  if (a.same_as(op->a)) return self;
  return tir::NotNode::make(std::move(a));
}

PrimExpr SimplifyArithmetic(const PrimExpr& self, const BinaryOpNode* op) {
  PrimExpr a = SimplifyExpr(op->a);
  PrimExpr b = SimplifyExpr(op->b);
  if (PrimExpr folded = FoldBinary(op->kind, a, b)) return folded;
  if (a.same_as(op->a) && b.same_as(op->b)) return self;
  return BinaryOpNode::make(op->kind, std::move(a), std::move(b));
}

PrimExpr SimplifyExpr(const PrimExpr& e) {
  assert(e.defined() && "simplifying a null expression");
  if (e.dtype().is_int()) return ToPoly(e).ToExpr();
  switch (e->kind) {
    case PrimExprKind::kIntImm:
    case PrimExprKind::kFloatImm:
    case PrimExprKind::kVar: return e;
    case PrimExprKind::kNot: return SimplifyNot(e, e.as<tir::NotNode>());
    case PrimExprKind::kSelect: return SimplifySelect(e, e.as<tir::SelectNode>());
    case PrimExprKind::kCast: return SimplifyCast(e, e.as<tir::CastNode>());
    case PrimExprKind::kCall: return SimplifyCall(e, e.as<tir::CallNode>());
    case PrimExprKind::kBufferLoad: return SimplifyLoad(e, e.as<tir::BufferLoadNode>());
    default: break;
  }
  const auto* op = e.as<BinaryOpNode>();
  assert(op && "unknown PrimExpr kind");
  if (IsComparison(op->kind)) return SimplifyComparison(e, op);
  if (op->kind == PrimExprKind::kAnd || op->kind == PrimExprKind::kOr) return SimplifyLogic(e, op);
  return SimplifyArithmetic(e, op);
}

// Gives an integer immediate the dtype of the other side, as the operators do.
bool UnifyDtypes(PrimExpr* a, PrimExpr* b) {
  if (a->dtype() == b->dtype()) return true;
  if (const int64_t* c = tir::AsConstInt(*b); c && a->dtype().is_integral()) {
    *b = tir::IntImm(a->dtype(), *c);
    return true;
  }
  if (const int64_t* c = tir::AsConstInt(*a); c && b->dtype().is_integral()) {
    *a = tir::IntImm(b->dtype(), *c);
    return true;
  }
  return false;
}

}  // namespace

// ---------------------------------------------------------------- public API

PrimExpr Simplify(const PrimExpr& e) { return SimplifyExpr(e); }

bool ProveEqual(const PrimExpr& a, const PrimExpr& b) {
  assert(a.defined() && b.defined() && "ProveEqual of a null expression");
  PrimExpr x = a, y = b;
  if (!UnifyDtypes(&x, &y)) return false;
  if (x.dtype().is_int()) return (ToPoly(x) - ToPoly(y)).IsZero();
  return CompareExprs(SimplifyExpr(x), SimplifyExpr(y)) == 0;
}

std::optional<int64_t> AsConstant(const PrimExpr& e) {
  PrimExpr simplified = SimplifyExpr(e);
  if (const int64_t* c = tir::AsConstInt(simplified)) return *c;
  return std::nullopt;
}

bool ProveNonNegative(const PrimExpr& e) {
  assert(e.defined() && "ProveNonNegative of a null expression");
  if (e.dtype().is_float()) {
    const auto* imm = SimplifyExpr(e).as<tir::FloatImmNode>();
    return imm && imm->value >= 0.0;
  }
  return NonNegativeExpr(e);
}

bool CanProve(const PrimExpr& cond) {
  assert(cond.defined() && cond.dtype().is_bool() && "CanProve needs a bool condition");
  PrimExpr simplified = SimplifyExpr(cond);
  const int64_t* value = tir::AsConstInt(simplified);  // points into `simplified`
  return value && *value != 0;
}

}  // namespace strata::arith
