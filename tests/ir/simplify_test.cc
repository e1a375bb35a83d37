// Tests of the symbolic arithmetic: proofs, canonical forms, constant folding.
#include "compiler/ir/arith/simplify.h"

#include <vector>

#include <gtest/gtest.h>

#include "compiler/ir/arith/expr_order.h"
#include "tests/ir/expr_text.h"

namespace strata {
namespace {

using arith::AsConstant;
using arith::CanProve;
using arith::ProveEqual;
using arith::ProveNonNegative;
using arith::Simplify;
using testing::ExprText;
using tir::PrimExpr;
using tir::PrimExprKind;

PrimExpr Cmp(PrimExprKind kind, PrimExpr a, PrimExpr b) {
  return tir::BinaryOpNode::make(kind, std::move(a), std::move(b));
}
std::string S(const PrimExpr& e) { return ExprText(Simplify(e)); }

class SimplifyTest : public ::testing::Test {
 protected:
  tir::Var n{"n"}, m{"m"}, k{"k"};
};

// ---------------------------------------------------------------- proofs

TEST_F(SimplifyTest, ProvesDoublingEqualsSelfAddition) { EXPECT_TRUE(ProveEqual(n * 2, n + n)); }

TEST_F(SimplifyTest, ProvesFloorDivOfMultipleCancels) { EXPECT_TRUE(ProveEqual(tir::FloorDiv(n * 4, 4), n)); }

TEST_F(SimplifyTest, ProvesMultiplicationCommutes) { EXPECT_TRUE(ProveEqual(m * n, n * m)); }

TEST_F(SimplifyTest, ProvesDifferenceOfSquares) { EXPECT_TRUE(ProveEqual((n + 1) * (n - 1), n * n - 1)); }

TEST_F(SimplifyTest, ProvesDistributionAndReassociation) {
  EXPECT_TRUE(ProveEqual((n + m) * k, k * m + n * k));
  EXPECT_TRUE(ProveEqual(n - (m - k), (k + n) - m));
  EXPECT_TRUE(ProveEqual(tir::FloorDiv(n * 4 + 8, 4), n + 2));
}

TEST_F(SimplifyTest, DoesNotProveDistinctVariablesEqual) { EXPECT_FALSE(ProveEqual(n, m)); }

TEST_F(SimplifyTest, DoesNotProveDoublingIsIdentity) { EXPECT_FALSE(ProveEqual(n * 2, n)); }

TEST_F(SimplifyTest, DoesNotProveFloorDivIsExactDivision) {
  // (n // 2) * 2 == n only for even n.
  EXPECT_FALSE(ProveEqual(tir::FloorDiv(n, 2) * 2, n));
  EXPECT_FALSE(ProveEqual(tir::FloorDiv(n + 1, 2), tir::FloorDiv(n, 2)));
}

TEST_F(SimplifyTest, ProveEqualAdoptsConstantDtype) {
  tir::Var i("i", DataType::I32());
  EXPECT_TRUE(ProveEqual(i * 2 - i, i));
  EXPECT_TRUE(ProveEqual(i - i, PrimExpr(0)));  // i64 literal against an i32 expression
}

TEST_F(SimplifyTest, SameNamedVariablesAreStillDistinct) {
  tir::Var other_n("n");
  EXPECT_FALSE(ProveEqual(n, other_n));
  EXPECT_FALSE(ProveEqual(n - other_n, PrimExpr(0)));
}

// ---------------------------------------------------------------- canonical forms

TEST_F(SimplifyTest, ConstantGoesLastAndCoefficientAfterVariable) {
  EXPECT_EQ(S(1 + 2 * n), "n * 2 + 1");
  EXPECT_EQ(S(n + (-1)), "n - 1");
  EXPECT_EQ(S(n * m * 2 + n), "m * n * 2 + n");
}

TEST_F(SimplifyTest, HigherDegreeTermsComeFirst) {
  EXPECT_EQ(S((n + 1) * (n - 1)), "n * n - 1");
  EXPECT_EQ(S(n + n * n * 3), "n * n * 3 + n");
}

TEST_F(SimplifyTest, NegativeLeadingTermIsWrittenAsSubtraction) {
  EXPECT_EQ(S(4 - n), "4 - n");
  EXPECT_EQ(S(m - n * 3), "m - n * 3");
  EXPECT_EQ(S(n * 2 - m), "n * 2 - m");
  EXPECT_EQ(S(0 - n - 1), "0 - n - 1");
}

TEST_F(SimplifyTest, CanonicalFormIgnoresConstructionOrder) {
  std::vector<PrimExpr> same = {n * m + k + 1, 1 + k + m * n, (k + 1) + n * m, k + (m * n + 1),
                                (n + 1) * (m + 1) - n - m + k};
  std::string expected = S(same[0]);
  EXPECT_EQ(expected, "m * n + k + 1");
  for (const PrimExpr& e : same) {
    EXPECT_EQ(S(e), expected);
    EXPECT_EQ(arith::CompareExprs(Simplify(e), Simplify(same[0])), 0);
  }
}

TEST_F(SimplifyTest, CommutativeAtomsHaveCanonicalOperandOrder) {
  EXPECT_EQ(S(tir::Min(n, m)), "min(m, n)");
  EXPECT_EQ(S(tir::Min(m, n)), "min(m, n)");
  EXPECT_TRUE(ProveEqual(tir::Max(n + 1, m), tir::Max(m, 1 + n)));
}

TEST_F(SimplifyTest, SimplifyIsIdempotent) {
  std::vector<PrimExpr> cases = {(n + 1) * (m - 2),
                                 tir::FloorDiv(n + 5, 4),
                                 tir::FloorMod(n * 6, 4),
                                 tir::Min(n, m) * 2 - tir::Max(k, n),
                                 4 - n * m,
                                 0 - n - 1};
  for (const PrimExpr& e : cases) {
    PrimExpr once = Simplify(e);
    PrimExpr twice = Simplify(once);
    EXPECT_EQ(arith::CompareExprs(once, twice), 0) << ExprText(once) << " vs " << ExprText(twice);
  }
}

TEST_F(SimplifyTest, SameNamedVariablesOrderByCreation) {
  tir::Var first("x"), second("x");
  for (PrimExpr e : {PrimExpr(first + second), PrimExpr(second + first)}) {
    PrimExpr simplified = Simplify(e);
    const auto* add = simplified.as<tir::BinaryOpNode>();
    ASSERT_NE(add, nullptr);
    EXPECT_TRUE(add->a.same_as(first));
    EXPECT_TRUE(add->b.same_as(second));
  }
}

TEST_F(SimplifyTest, CanonicalInputComesBackAsTheSameHandle) {
  EXPECT_TRUE(Simplify(n).same_as(n));
  PrimExpr min = tir::Min(m, n);
  EXPECT_TRUE(Simplify(min).same_as(min));
  PrimExpr div = tir::FloorDiv(n, 4);
  EXPECT_TRUE(Simplify(div).same_as(div));
}

// ---------------------------------------------------------------- identities

TEST_F(SimplifyTest, TrivialIdentities) {
  EXPECT_TRUE(Simplify(n + 0).same_as(n));
  EXPECT_TRUE(Simplify(n * 1).same_as(n));
  EXPECT_EQ(S(n * 0), "0");
  EXPECT_EQ(S(n - n), "0");
  EXPECT_TRUE(Simplify(tir::FloorDiv(n, 1)).same_as(n));
  EXPECT_EQ(S(tir::FloorMod(n, 1)), "0");
}

TEST_F(SimplifyTest, FloorDivAndModByConstant) {
  EXPECT_EQ(S(tir::FloorDiv(n * 4 + 8, 4)), "n + 2");
  EXPECT_EQ(S(tir::FloorMod(n * 4, 4)), "0");
  EXPECT_EQ(S(tir::FloorMod(n * 4 + 7, 4)), "3");
  EXPECT_EQ(S(tir::FloorDiv(n * 4 + m, 4)), "n + m // 4");
  EXPECT_EQ(S(tir::FloorMod(n * 4 + m, 4)), "m % 4");
  EXPECT_EQ(S(tir::FloorDiv(n * 2, 4)), "n // 2");
  EXPECT_EQ(S(tir::FloorDiv(n * 2 + 2, 4)), "(n + 1) // 2");
  EXPECT_EQ(S(tir::FloorDiv(n + 5, 4)), "(n + 1) // 4 + 1");
  EXPECT_EQ(S(tir::FloorDiv(tir::FloorDiv(n, 4), 2)), "n // 8");
  EXPECT_EQ(S(tir::FloorMod(tir::FloorMod(n, 8), 4)), "n % 4");
  EXPECT_EQ(S(tir::FloorMod(tir::FloorMod(n, 4), 8)), "n % 4");
  EXPECT_TRUE(ProveEqual(tir::FloorMod(n * 6, 4), tir::FloorMod(n * 3, 2) * 2));
}

TEST_F(SimplifyTest, FloorDivByUnknownStaysOpaque) {
  EXPECT_EQ(S(tir::FloorDiv(n * 2, m)), "n * 2 // m");
  EXPECT_EQ(S(tir::FloorDiv(n, 0)), "n // 0");  // a division by zero is not folded away
}

TEST_F(SimplifyTest, AtomsInsideThePolynomialCombine) {
  PrimExpr d = tir::FloorDiv(n, 4);
  EXPECT_EQ(S(d + d * 3 - n), "n // 4 * 4 - n");
  EXPECT_TRUE(ProveEqual(d + d, tir::FloorDiv(n + 0, 4) * 2));
}

TEST_F(SimplifyTest, MinMaxOfComparableOperands) {
  EXPECT_TRUE(Simplify(tir::Min(n, n + 1)).same_as(n));
  EXPECT_EQ(S(tir::Max(n, n + 1)), "n + 1");
  EXPECT_TRUE(Simplify(tir::Max(n, 0)).same_as(n));  // shape variables are non-negative
  EXPECT_EQ(S(tir::Min(n * 2, n)), "n");
  EXPECT_EQ(S(tir::Min(n, m)), "min(m, n)");
}

// ---------------------------------------------------------------- constant folding

TEST(ConstantFolding, IntegerArithmetic) {
  EXPECT_EQ(AsConstant(PrimExpr(3) * 4 + 1), 13);
  EXPECT_EQ(AsConstant(tir::FloorDiv(-7, 2)), -4);
  EXPECT_EQ(AsConstant(tir::FloorMod(-7, 2)), 1);
  EXPECT_EQ(AsConstant(tir::FloorMod(7, -2)), -1);
  EXPECT_EQ(AsConstant(tir::Min(3, 5)), 3);
  EXPECT_EQ(AsConstant(tir::Max(3, 5)), 5);
}

TEST(ConstantFolding, WrapsToTheDtypeWidth) {
  PrimExpr big = tir::IntImm(DataType::I32(), 2147483647);
  EXPECT_EQ(AsConstant(big + 1), -2147483648LL);
  EXPECT_EQ(AsConstant(tir::IntImm(DataType::UInt(32), 0) - 1), 4294967295LL);
  EXPECT_EQ(AsConstant(tir::CastNode::make(DataType::Int(8), PrimExpr(300))), 44);
}

TEST(ConstantFolding, FloatsAndCasts) {
  PrimExpr sum = Simplify(tir::FloatImm(DataType::F32(), 1.5) + tir::FloatImm(DataType::F32(), 2.5));
  ASSERT_NE(sum.as<tir::FloatImmNode>(), nullptr);
  EXPECT_EQ(sum.as<tir::FloatImmNode>()->value, 4.0);
  PrimExpr cast = Simplify(tir::CastNode::make(DataType::F32(), PrimExpr(3)));
  ASSERT_NE(cast.as<tir::FloatImmNode>(), nullptr);
  EXPECT_EQ(cast.as<tir::FloatImmNode>()->value, 3.0);
  EXPECT_EQ(AsConstant(tir::CastNode::make(DataType::I64(), tir::FloatImm(DataType::F32(), -2.75))), -2);
  PrimExpr root = Simplify(tir::CallNode::make(tir::Intrinsic::kSqrt, {tir::FloatImm(DataType::F64(), 9.0)}));
  ASSERT_NE(root.as<tir::FloatImmNode>(), nullptr);
  EXPECT_EQ(root.as<tir::FloatImmNode>()->value, 3.0);
}

TEST(ConstantFolding, FloatExpressionsAreNotReassociated) {
  tir::Var x("x", DataType::F32());
  PrimExpr e = (x + 1) + 2;
  EXPECT_TRUE(Simplify(e).same_as(e));
}

TEST(ConstantFolding, ComparisonsAndLogic) {
  tir::Var n("n"), m("m");
  EXPECT_EQ(AsConstant(Cmp(PrimExprKind::kLT, 3, 4)), 1);
  EXPECT_EQ(AsConstant(Cmp(PrimExprKind::kEQ, n + 1, 1 + n)), 1);
  EXPECT_EQ(AsConstant(Cmp(PrimExprKind::kGT, n + 1, n)), 1);
  EXPECT_EQ(AsConstant(Cmp(PrimExprKind::kLT, n * 2 + 1, n)), 0);
  PrimExpr lt = Cmp(PrimExprKind::kLT, n, m);
  EXPECT_TRUE(Simplify(Cmp(PrimExprKind::kAnd, lt, tir::IntImm(DataType::Bool(), 1))).same_as(lt));
  EXPECT_EQ(AsConstant(Cmp(PrimExprKind::kOr, lt, tir::IntImm(DataType::Bool(), 1))), 1);
  EXPECT_EQ(ExprText(Simplify(tir::NotNode::make(lt))), "n >= m");
}

TEST(ConstantFolding, SelectWithKnownCondition) {
  tir::Var n("n"), m("m");
  EXPECT_TRUE(Simplify(tir::SelectNode::make(Cmp(PrimExprKind::kLE, n, n * 2), n, m)).same_as(n));
  EXPECT_EQ(ExprText(Simplify(tir::SelectNode::make(Cmp(PrimExprKind::kLT, n, m), n + 0, 0 + n))), "n");
  EXPECT_EQ(ExprText(Simplify(tir::SelectNode::make(tir::IntImm(DataType::Bool(), 0), n, m + 1) * 2)), "m * 2 + 2");
}

TEST_F(SimplifyTest, SelectWhoseBranchesAgreeWhereTheConditionHolds) {
  // Broadcasting (n vs min(512, n)) writes select(n == 1, min(512, n), n):
  // at n = 1 both branches are 1, so it is n whatever n is.
  PrimExpr clipped = tir::Min(tir::IntImm(DataType::I64(), 512), n);
  PrimExpr one = tir::IntImm(DataType::I64(), 1);
  EXPECT_EQ(ExprText(Simplify(tir::SelectNode::make(Cmp(PrimExprKind::kEQ, n, one), clipped, n))), "n");
  EXPECT_EQ(ExprText(Simplify(tir::SelectNode::make(Cmp(PrimExprKind::kEQ, one, n), clipped, n))), "n");
  EXPECT_EQ(ExprText(Simplify(tir::SelectNode::make(Cmp(PrimExprKind::kNE, n, one), n, clipped))), "n");
  // Nested, as twelve layers of residual adds nest them; and inside arithmetic.
  PrimExpr nested = clipped;
  for (int layer = 0; layer < 12; ++layer) nested = tir::SelectNode::make(Cmp(PrimExprKind::kEQ, n, one), nested, n);
  EXPECT_EQ(ExprText(Simplify(nested * 768)), "n * 768");
  // A condition on another variable than the result: at m = 2 both are n + 2.
  EXPECT_EQ(ExprText(Simplify(
                tir::SelectNode::make(Cmp(PrimExprKind::kEQ, m, tir::IntImm(DataType::I64(), 2)), n + m, n + 2))),
            "n + 2");
}

TEST_F(SimplifyTest, SelectWhoseBranchesDifferWhereTheConditionHoldsStays) {
  PrimExpr one = tir::IntImm(DataType::I64(), 1);
  // At n = 1: 1 vs m. Not decided.
  EXPECT_EQ(ExprText(Simplify(tir::SelectNode::make(Cmp(PrimExprKind::kEQ, n, one), m, n))), "select(n == 1, m, n)");
  // n == n + m binds nothing: n := n + m would be circular.
  EXPECT_EQ(ExprText(Simplify(tir::SelectNode::make(Cmp(PrimExprKind::kEQ, n, n + m), n * 2, n + n + m))),
            "select(n == m + n, n * 2, m + n * 2)");
  // Not an equality: n < 2 does not pin n.
  EXPECT_EQ(ExprText(Simplify(tir::SelectNode::make(Cmp(PrimExprKind::kLT, n, tir::IntImm(DataType::I64(), 2)),
                                                    tir::Min(tir::IntImm(DataType::I64(), 1), n), n))),
            "select(n < 2, min(1, n), n)");
}

TEST(ConstantFolding, LoadIndicesAreSimplified) {
  tir::Var n("n"), i("i");
  tir::Buffer b = tir::MakeBuffer("B", DataType::F32(), {n});
  PrimExpr load = tir::BufferLoadNode::make(b, {i * 1 + 0});
  EXPECT_EQ(ExprText(Simplify(load)), "B[i]");
  PrimExpr canonical = tir::BufferLoadNode::make(b, {i});
  EXPECT_TRUE(Simplify(canonical).same_as(canonical));
}

// ---------------------------------------------------------------- signs and conditions

TEST_F(SimplifyTest, NonNegativityOfShapePolynomials) {
  EXPECT_TRUE(ProveNonNegative(n * m + 1));
  EXPECT_TRUE(ProveNonNegative(tir::FloorDiv(n, 4) + tir::FloorMod(m, 3)));
  tir::Var i("i", DataType::I32());
  EXPECT_TRUE(ProveNonNegative(i * i * 3 + 1));       // an even power of any integer
  EXPECT_FALSE(ProveNonNegative((n - m) * (n - m)));  // the square is lost once expanded
  EXPECT_FALSE(ProveNonNegative(n - 1));
  EXPECT_FALSE(ProveNonNegative(n - m));
  EXPECT_FALSE(ProveNonNegative(i));  // only i64 vars are shapes
}

TEST_F(SimplifyTest, CanProveComparisons) {
  EXPECT_TRUE(CanProve(Cmp(PrimExprKind::kGT, n + 1, n)));
  EXPECT_TRUE(CanProve(Cmp(PrimExprKind::kGE, n * 2, n)));
  EXPECT_TRUE(CanProve(Cmp(PrimExprKind::kLE, n, n * m + n)));
  EXPECT_TRUE(CanProve(Cmp(PrimExprKind::kEQ, tir::FloorDiv(n * 4, 4), n)));
  EXPECT_TRUE(CanProve(Cmp(PrimExprKind::kNE, n + 1, n)));
  EXPECT_TRUE(CanProve(Cmp(PrimExprKind::kAnd, Cmp(PrimExprKind::kGE, n, 0), Cmp(PrimExprKind::kLT, n, n + 1))));
}

TEST_F(SimplifyTest, CannotProveUnknownComparisons) {
  EXPECT_FALSE(CanProve(Cmp(PrimExprKind::kLT, n, m)));
  EXPECT_FALSE(CanProve(Cmp(PrimExprKind::kEQ, n, m)));
  EXPECT_FALSE(CanProve(Cmp(PrimExprKind::kGT, n * 2, n)));  // n may be 0
  EXPECT_FALSE(CanProve(Cmp(PrimExprKind::kLT, n + 1, n)));  // false, not merely unknown
}

TEST_F(SimplifyTest, AsConstantAfterSimplifying) {
  EXPECT_EQ(AsConstant((n + 3) - n), 3);
  EXPECT_EQ(AsConstant(tir::FloorMod(n * 8 + 5, 4)), 1);
  EXPECT_FALSE(AsConstant(n).has_value());
  EXPECT_FALSE(AsConstant(tir::FloorDiv(n, 4)).has_value());
}

}  // namespace
}  // namespace strata
