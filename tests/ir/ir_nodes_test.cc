// Tests of the IR node constructors: the struct info make() computes, the
// constant-dtype conversion of the operators, sequence flattening and op interning.
#include <gtest/gtest.h>

#include "compiler/ir/graph.h"
#include "compiler/ir/prim_expr.h"
#include "compiler/ir/tir.h"

namespace strata {
namespace {

using tir::PrimExpr;
using tir::PrimExprKind;

TEST(PrimExpr, IntLiteralIsI64Constant) {
  PrimExpr e = 7;
  ASSERT_NE(tir::AsConstInt(e), nullptr);
  EXPECT_EQ(*tir::AsConstInt(e), 7);
  EXPECT_EQ(e.dtype(), DataType::I64());
}

TEST(PrimExpr, OperatorsBuildNodesWithoutSimplifying) {
  tir::Var n("n");
  PrimExpr e = n * 1 + 0;
  const auto* add = e.as<tir::BinaryOpNode>();
  ASSERT_NE(add, nullptr);
  EXPECT_EQ(add->kind, PrimExprKind::kAdd);
  EXPECT_EQ(add->a->kind, PrimExprKind::kMul);
}

TEST(PrimExpr, ConstantTakesTheOtherOperandsDtype) {
  tir::Var n("n", DataType::I32());
  PrimExpr e = n * 2;
  EXPECT_EQ(e.dtype(), DataType::I32());
  EXPECT_EQ(e.as<tir::BinaryOpNode>()->b.dtype(), DataType::I32());
  tir::Var x("x", DataType::F32());
  PrimExpr f = 2 * x;
  EXPECT_EQ(f.dtype(), DataType::F32());
  EXPECT_NE(f.as<tir::BinaryOpNode>()->a.as<tir::FloatImmNode>(), nullptr);
}

TEST(PrimExpr, ComparisonsYieldBool) {
  tir::Var n("n");
  EXPECT_TRUE((tir::BinaryOpNode::make(PrimExprKind::kLT, n, 3)).dtype().is_bool());
}

TEST(PrimExpr, NegatingALiteralGivesALiteral) {
  PrimExpr e = -PrimExpr(3);
  ASSERT_NE(tir::AsConstInt(e), nullptr);
  EXPECT_EQ(*tir::AsConstInt(e), -3);
  tir::Var n("n");
  EXPECT_EQ((-n)->kind, PrimExprKind::kSub);
}

TEST(PrimExpr, IntrinsicNamesRoundTrip) {
  for (auto op : {tir::Intrinsic::kExp, tir::Intrinsic::kPow, tir::Intrinsic::kCeil, tir::Intrinsic::kRound,
                  tir::Intrinsic::kSin, tir::Intrinsic::kCos, tir::Intrinsic::kFmod}) {
    tir::Intrinsic parsed;
    ASSERT_TRUE(tir::ParseIntrinsic(tir::IntrinsicName(op), &parsed));
    EXPECT_EQ(parsed, op);
  }
  tir::Intrinsic unused;
  EXPECT_FALSE(tir::ParseIntrinsic("sinh", &unused));
  EXPECT_EQ(tir::IntrinsicArity(tir::Intrinsic::kPow), 2);
  EXPECT_EQ(tir::IntrinsicArity(tir::Intrinsic::kFmod), 2);
  EXPECT_EQ(tir::IntrinsicArity(tir::Intrinsic::kRound), 1);
}

TEST(SeqStmt, FlattensNestedSequences) {
  tir::Var n("n");
  auto ev = [&](int v) { return tir::EvaluateNode::make(n + v); };
  tir::Stmt inner = tir::SeqStmtNode::make({ev(1), ev(2)});
  tir::Stmt outer = tir::SeqStmtNode::make({ev(0), inner, ev(3)});
  const auto* seq = outer.as<tir::SeqStmtNode>();
  ASSERT_NE(seq, nullptr);
  ASSERT_EQ(seq->stmts.size(), 4u);
  for (const tir::Stmt& s : seq->stmts) EXPECT_EQ(s->kind, tir::StmtKind::kEvaluate);
  EXPECT_TRUE(seq->stmts[1].same_as(inner.as<tir::SeqStmtNode>()->stmts[0]));
}

TEST(SeqStmt, SingleElementIsReturnedItself) {
  tir::Stmt only = tir::EvaluateNode::make(PrimExpr(1));
  EXPECT_TRUE(tir::SeqStmtNode::make({only}).same_as(only));
}

TEST(GraphNodes, LeafStructInfo) {
  tir::Var n("n");
  graph::Expr shape = graph::ShapeExprNode::make({n, n * 2});
  const auto* ssi = shape->struct_info.as<graph::ShapeStructInfoNode>();
  ASSERT_NE(ssi, nullptr);
  EXPECT_EQ(ssi->ndim, 2);
  EXPECT_TRUE((*ssi->values)[0].same_as(n));

  graph::Expr prim = graph::PrimValueNode::make(n);
  ASSERT_NE(prim->struct_info.as<graph::PrimStructInfoNode>(), nullptr);
  EXPECT_EQ(prim->struct_info.as<graph::PrimStructInfoNode>()->dtype, DataType::I64());

  EXPECT_NE(graph::StringImmNode::make("x")->struct_info.as<graph::ObjectStructInfoNode>(), nullptr);
  EXPECT_FALSE(graph::GlobalVarNode::make("f")->struct_info.defined());
}

TEST(GraphNodes, ConstantHasConcreteTensorStructInfo) {
  auto data = std::make_shared<graph::HostTensor>();
  data->dtype = DataType::F32();
  data->shape = {2, 3};
  data->bytes.resize(24);
  graph::Expr c = graph::ConstantNode::make(data);
  const auto* tsi = c->struct_info.as<graph::TensorStructInfoNode>();
  ASSERT_NE(tsi, nullptr);
  EXPECT_EQ(tsi->ndim, 2);
  EXPECT_EQ(tsi->dtype, DataType::F32());
  EXPECT_EQ(*tir::AsConstInt((*tsi->shape)[1]), 3);
}

TEST(GraphNodes, TupleAndItemStructInfo) {
  graph::Var x("x", graph::TensorStructInfoNode::make_ndim(2, DataType::F32()));
  graph::Var y("y", graph::PrimStructInfoNode::make(DataType::I64()));
  graph::Expr t = graph::TupleNode::make({x, y});
  const auto* tsi = t->struct_info.as<graph::TupleStructInfoNode>();
  ASSERT_NE(tsi, nullptr);
  ASSERT_EQ(tsi->fields.size(), 2u);
  graph::Expr item = graph::TupleGetItemNode::make(t, 1);
  EXPECT_TRUE(item->struct_info.same_as(y->struct_info));

  graph::Var unknown("u", graph::StructInfo());
  EXPECT_FALSE(graph::TupleNode::make({x, unknown})->struct_info.defined());
}

TEST(GraphNodes, OpsAreInterned) {
  graph::Expr a = graph::OpNode::Get("call_tir");
  graph::Expr b = graph::OpNode::Get(graph::ops::kCallTIR);
  EXPECT_TRUE(a.same_as(b));
  EXPECT_FALSE(a.same_as(graph::OpNode::Get("shape_of")));
}

TEST(GraphNodes, CallHasNoStructInfoUntilNormalized) {
  graph::Var x("x", graph::TensorStructInfoNode::make_ndim(2, DataType::F32()));
  graph::Expr call = graph::CallNode::make(graph::OpNode::Get("shape_of"), {x});
  EXPECT_FALSE(call->struct_info.defined());
}

}  // namespace
}  // namespace strata
