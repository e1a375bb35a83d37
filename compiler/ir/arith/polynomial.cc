// Polynomial arithmetic and the conversion back to an expression tree.
#include "compiler/ir/arith/polynomial.h"

#include <algorithm>
#include <cassert>
#include <utility>

#include "compiler/ir/arith/expr_order.h"

namespace strata::arith {

using tir::PrimExpr;

int64_t WrapInt(DataType t, uint64_t value) {
  int bits = t.is_bool() ? 1 : t.bits();
  if (bits >= 64) return static_cast<int64_t>(value);
  uint64_t mask = (uint64_t{1} << bits) - 1;
  value &= mask;
  if (t.is_int() && (value >> (bits - 1)) != 0) value |= ~mask;  // sign-extend
  return static_cast<int64_t>(value);
}

int CompareMonomials(const Monomial& a, const Monomial& b) {
  if (a.atoms.size() != b.atoms.size()) return a.atoms.size() > b.atoms.size() ? -1 : 1;
  for (size_t i = 0; i < a.atoms.size(); ++i) {
    if (int c = CompareExprs(a.atoms[i], b.atoms[i])) return c;
  }
  return 0;
}

Polynomial::Polynomial(DataType dtype, int64_t constant) : dtype_(dtype) {
  assert(dtype.is_int() && "polynomials model signed integer expressions");
  constant_ = Wrap(static_cast<uint64_t>(constant));
}

Polynomial Polynomial::Atom(const PrimExpr& atom) {
  Polynomial p(atom.dtype());
  p.terms_.push_back(Monomial{{atom}, 1});
  return p;
}

Polynomial Polynomial::FromTerms(DataType dtype, std::vector<Monomial> terms, int64_t constant) {
  Polynomial p(dtype, constant);
  p.terms_ = std::move(terms);
  p.Canonicalize();
  return p;
}

bool Polynomial::Equals(const Polynomial& other) const {
  if (dtype_ != other.dtype_ || constant_ != other.constant_ || terms_.size() != other.terms_.size()) return false;
  for (size_t i = 0; i < terms_.size(); ++i) {
    if (terms_[i].coeff != other.terms_[i].coeff || CompareMonomials(terms_[i], other.terms_[i]) != 0) return false;
  }
  return true;
}

void Polynomial::Canonicalize() {
  std::stable_sort(terms_.begin(), terms_.end(),
                   [](const Monomial& a, const Monomial& b) { return CompareMonomials(a, b) < 0; });
  std::vector<Monomial> merged;
  merged.reserve(terms_.size());
  for (Monomial& m : terms_) {
    if (!merged.empty() && CompareMonomials(merged.back(), m) == 0) {
      merged.back().coeff = Wrap(static_cast<uint64_t>(merged.back().coeff) + static_cast<uint64_t>(m.coeff));
    } else {
      m.coeff = Wrap(static_cast<uint64_t>(m.coeff));
      merged.push_back(std::move(m));
    }
  }
  merged.erase(std::remove_if(merged.begin(), merged.end(), [](const Monomial& m) { return m.coeff == 0; }),
               merged.end());
  terms_ = std::move(merged);
}

Polynomial Polynomial::operator+(const Polynomial& other) const {
  assert(dtype_ == other.dtype_ && "adding polynomials of different dtypes");
  Polynomial result = *this;
  result.constant_ = Wrap(static_cast<uint64_t>(constant_) + static_cast<uint64_t>(other.constant_));
  result.terms_.insert(result.terms_.end(), other.terms_.begin(), other.terms_.end());
  result.Canonicalize();
  return result;
}

Polynomial Polynomial::operator-(const Polynomial& other) const { return *this + other.Scale(-1); }

Polynomial Polynomial::Scale(int64_t factor) const {
  Polynomial result = *this;
  result.constant_ = Wrap(static_cast<uint64_t>(constant_) * static_cast<uint64_t>(factor));
  for (Monomial& m : result.terms_) m.coeff = Wrap(static_cast<uint64_t>(m.coeff) * static_cast<uint64_t>(factor));
  result.Canonicalize();  // drops terms that wrapped to zero
  return result;
}

Polynomial Polynomial::AddConstant(int64_t value) const {
  Polynomial result = *this;
  result.constant_ = Wrap(static_cast<uint64_t>(constant_) + static_cast<uint64_t>(value));
  return result;
}

std::optional<Polynomial> Polynomial::Multiply(const Polynomial& other) const {
  assert(dtype_ == other.dtype_ && "multiplying polynomials of different dtypes");
  size_t expanded = (terms_.size() + 1) * (other.terms_.size() + 1);
  if (expanded > kMaxTerms) return std::nullopt;
  Polynomial result(dtype_);
  auto mul = [this](int64_t a, int64_t b) { return Wrap(static_cast<uint64_t>(a) * static_cast<uint64_t>(b)); };
  result.constant_ = mul(constant_, other.constant_);
  for (const Monomial& m : terms_) result.terms_.push_back(Monomial{m.atoms, mul(m.coeff, other.constant_)});
  for (const Monomial& m : other.terms_) result.terms_.push_back(Monomial{m.atoms, mul(m.coeff, constant_)});
  for (const Monomial& a : terms_) {
    for (const Monomial& b : other.terms_) {
      Monomial product;
      product.coeff = mul(a.coeff, b.coeff);
      product.atoms.reserve(a.atoms.size() + b.atoms.size());
      std::merge(a.atoms.begin(), a.atoms.end(), b.atoms.begin(), b.atoms.end(), std::back_inserter(product.atoms),
                 [](const PrimExpr& x, const PrimExpr& y) { return CompareExprs(x, y) < 0; });
      result.terms_.push_back(std::move(product));
    }
  }
  result.Canonicalize();
  return result;
}

namespace {

PrimExpr MonomialExpr(const Monomial& m, int64_t coeff, DataType dtype) {
  PrimExpr product = m.atoms[0];
  for (size_t i = 1; i < m.atoms.size(); ++i) {
    product = tir::BinaryOpNode::make(tir::PrimExprKind::kMul, product, m.atoms[i]);
  }
  if (coeff == 1) return product;
  return tir::BinaryOpNode::make(tir::PrimExprKind::kMul, product, tir::IntImm(dtype, coeff));
}

}  // namespace

PrimExpr Polynomial::ToExpr() const {
  if (terms_.empty()) return tir::IntImm(dtype_, constant_);
  if (terms_.size() == 1 && constant_ == 0 && terms_[0].coeff == 1 && terms_[0].atoms.size() == 1) {
    return terms_[0].atoms[0];
  }
  // Elements in canonical order; index terms_.size() stands for the constant.
  size_t count = terms_.size() + (constant_ != 0 ? 1 : 0);
  auto coeff_of = [&](size_t i) { return i < terms_.size() ? terms_[i].coeff : constant_; };
  auto magnitude = [&](size_t i, int64_t c) {
    return i < terms_.size() ? MonomialExpr(terms_[i], c, dtype_) : tir::IntImm(dtype_, c);
  };
  // Lead with the first positive element so the sum reads `4 - n`, not `n * -1 + 4`.
  size_t lead = count;
  for (size_t i = 0; i < count; ++i) {
    if (coeff_of(i) > 0) {
      lead = i;
      break;
    }
  }
  PrimExpr sum = lead < count ? magnitude(lead, coeff_of(lead)) : tir::IntImm(dtype_, 0);
  for (size_t i = 0; i < count; ++i) {
    if (i == lead) continue;
    int64_t c = coeff_of(i);
    // The most negative value of the dtype has no positive counterpart; add it as is.
    int64_t negated = Wrap(uint64_t{0} - static_cast<uint64_t>(c));
    if (c > 0 || negated <= 0) {
      sum = tir::BinaryOpNode::make(tir::PrimExprKind::kAdd, sum, magnitude(i, c));
    } else {
      sum = tir::BinaryOpNode::make(tir::PrimExprKind::kSub, sum, magnitude(i, negated));
    }
  }
  return sum;
}

}  // namespace strata::arith
