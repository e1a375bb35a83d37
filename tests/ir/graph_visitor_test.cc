// Tests of the graph visitor and mutator defaults.
#include "compiler/ir/graph_visitor.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace strata {
namespace {

using graph::Expr;

graph::StructInfo Tensor2D() { return graph::TensorStructInfoNode::make_ndim(2, DataType::F32()); }

// fn(x, w) { dataflow { lv0 = call_tir(@mm, (x, w), SI); lv1 = lv0 } return (lv1, x) }
struct Function {
  graph::Var x{"x", Tensor2D()}, w{"w", Tensor2D()};
  graph::Var lv0{"lv0", Tensor2D(), true}, lv1{"lv1", Tensor2D()};
  Expr call =
      graph::CallNode::make(graph::OpNode::Get(graph::ops::kCallTIR),
                            {graph::GlobalVarNode::make("mm"), graph::TupleNode::make({x, w})}, {}, {Tensor2D()});
  Expr body;
  Expr func;
  Function() {
    graph::BindingBlock block;
    block.is_dataflow = true;
    block.bindings.push_back(graph::Binding{graph::BindingKind::kVarBinding, lv0, call, {}, nullptr});
    block.bindings.push_back(graph::Binding{graph::BindingKind::kVarBinding, lv1, lv0, {}, nullptr});
    body = graph::SeqExprNode::make({block}, graph::TupleNode::make({lv1, x}));
    func = graph::FunctionNode::make({x, w}, body, Tensor2D());
  }
};

class NameCollector : public graph::ExprVisitor {
 public:
  std::vector<std::string> events;

 protected:
  void VisitVar(const graph::VarNode* op) override { events.push_back("use " + op->name); }
  void VisitVarDef(const graph::Var& var) override { events.push_back("def " + var->name); }
  void VisitGlobalVar(const graph::GlobalVarNode* op) override { events.push_back("@" + op->name); }
};

TEST(ExprVisitor, VisitsInSourceOrderWithDefinitionsAfterValues) {
  Function f;
  NameCollector collector;
  collector.VisitExpr(f.func);
  EXPECT_EQ(collector.events, (std::vector<std::string>{"def x", "def w", "@mm", "use x", "use w", "def lv0", "use lv0",
                                                        "def lv1", "use lv1", "use x"}));
}

TEST(ExprMutator, ReturnsTheSameFunctionWhenNothingChanges) {
  Function f;
  graph::ExprMutator mutator;
  EXPECT_TRUE(mutator.MutateExpr(f.func).same_as(f.func));
}

class Remapper : public graph::ExprMutator {
 public:
  Remapper(const graph::Var& from, const graph::Var& to) { var_remap_[from.get()] = to; }
};

TEST(ExprMutator, VarRemapRewritesUsesAndKeepsBoundVars) {
  Function f;
  graph::Var y("y", Tensor2D());
  Remapper mutator(f.w, y);
  Expr result = mutator.MutateExpr(f.body);
  ASSERT_FALSE(result.same_as(f.body));
  const auto* seq = result.as<graph::SeqExprNode>();
  ASSERT_NE(seq, nullptr);
  ASSERT_EQ(seq->blocks.size(), 1u);
  EXPECT_TRUE(seq->blocks[0].is_dataflow);
  const graph::Binding& first = seq->blocks[0].bindings[0];
  EXPECT_TRUE(first.var.same_as(f.lv0));  // the binding keeps its var
  const auto* call = first.value.as<graph::CallNode>();
  ASSERT_NE(call, nullptr);
  EXPECT_FALSE(call->struct_info.defined());  // left for Normalize
  EXPECT_EQ(call->sinfo_args.size(), 1u);
  const auto* args = call->args[1].as<graph::TupleNode>();
  EXPECT_TRUE(args->fields[0].same_as(f.x));
  EXPECT_TRUE(args->fields[1].same_as(y));
  EXPECT_TRUE(args->struct_info.defined());  // tuples recompute their own
  // The untouched binding and result are shared.
  EXPECT_TRUE(seq->blocks[0].bindings[1].value.same_as(f.lv0));
  EXPECT_TRUE(seq->body.same_as(f.body.as<graph::SeqExprNode>()->body));
}

TEST(ExprMutator, FunctionParamsGoThroughTheRemap) {
  Function f;
  graph::Var x2("x2", Tensor2D());
  Remapper mutator(f.x, x2);
  Expr result = mutator.MutateExpr(f.func);
  const auto* func = result.as<graph::FunctionNode>();
  ASSERT_NE(func, nullptr);
  EXPECT_TRUE(func->params[0].same_as(x2));
  EXPECT_TRUE(func->params[1].same_as(f.w));
  EXPECT_TRUE(func->ret_struct_info.same_as(f.func.as<graph::FunctionNode>()->ret_struct_info));
}

TEST(ExprMutator, DroppingEveryBindingRemovesTheBlock) {
  Function f;
  class DropAll : public graph::ExprMutator {
   protected:
    void MutateBinding(const graph::Binding& binding, std::vector<graph::Binding>* out) override {}
  } mutator;
  Expr result = mutator.MutateExpr(f.body);
  const auto* seq = result.as<graph::SeqExprNode>();
  ASSERT_NE(seq, nullptr);
  EXPECT_TRUE(seq->blocks.empty());
}

}  // namespace
}  // namespace strata
