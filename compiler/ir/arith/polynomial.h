// Polynomial: the canonical form of a signed integer expression, used by the
// simplifier (simplify.h).
//
// A polynomial is a constant plus monomials; a monomial is a non-zero integer
// coefficient times a product of atoms (variables or opaque subexpressions). The
// monomials are kept sorted by CompareMonomials and combined, so two polynomials
// are equal exactly when their term lists are structurally equal. Arithmetic
// wraps to the dtype's width, like the machine code it models.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "compiler/ir/prim_expr.h"

namespace strata::arith {

struct Monomial {
  std::vector<tir::PrimExpr> atoms;  // sorted by CompareExprs; repeats are powers
  int64_t coeff = 0;
};

// Descending degree, then atom by atom in CompareExprs order. Ignores coefficients.
int CompareMonomials(const Monomial& a, const Monomial& b);

// `value` truncated to the width of the integer dtype `t` (sign-extended for
// signed types, zero-extended for unsigned ones).
int64_t WrapInt(DataType t, uint64_t value);

class Polynomial {
 public:
  explicit Polynomial(DataType dtype, int64_t constant = 0);
  // The polynomial `1 * atom`.
  static Polynomial Atom(const tir::PrimExpr& atom);
  // The sum of `terms` (any order, repeats allowed) and `constant`.
  static Polynomial FromTerms(DataType dtype, std::vector<Monomial> terms, int64_t constant);

  DataType dtype() const { return dtype_; }
  int64_t constant() const { return constant_; }
  const std::vector<Monomial>& terms() const { return terms_; }
  bool IsConstant() const { return terms_.empty(); }
  bool IsZero() const { return terms_.empty() && constant_ == 0; }
  // Structural equality of the canonical forms.
  bool Equals(const Polynomial& other) const;

  Polynomial operator+(const Polynomial& other) const;
  Polynomial operator-(const Polynomial& other) const;
  Polynomial Scale(int64_t factor) const;
  Polynomial AddConstant(int64_t value) const;
  // The product, or nullopt when expanding it would exceed kMaxTerms monomials
  // (the caller then keeps the product as an atom instead).
  std::optional<Polynomial> Multiply(const Polynomial& other) const;

  // The canonical expression (see simplify.h for its shape). A polynomial that is
  // a lone atom returns that atom's handle itself.
  tir::PrimExpr ToExpr() const;

  static constexpr size_t kMaxTerms = 256;

 private:
  // Sorts, merges equal monomials and drops zero coefficients.
  void Canonicalize();
  int64_t Wrap(uint64_t v) const { return WrapInt(dtype_, v); }

  DataType dtype_;
  int64_t constant_ = 0;
  std::vector<Monomial> terms_;
};

}  // namespace strata::arith
