// Tests of IRModule ordering and lookup.
#include "compiler/ir/module.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace strata {
namespace {

tir::PrimFunc MakeKernel() { return tir::MakePrimFunc({}, tir::EvaluateNode::make(tir::PrimExpr(0))); }

graph::Function MakeGraphFunction() {
  graph::Expr body = graph::SeqExprNode::make({}, graph::TupleNode::make({}));
  graph::Expr func = graph::FunctionNode::make({}, body, graph::TupleStructInfoNode::make({}));
  return std::static_pointer_cast<const graph::FunctionNode>(func.node_ptr());
}

std::vector<std::string> Names(const ir::IRModule& m) {
  std::vector<std::string> names;
  for (const auto& [name, func] : m.functions()) names.push_back(name);
  return names;
}

TEST(IRModule, KeepsInsertionOrder) {
  ir::IRModule m;
  m.Add("main", MakeGraphFunction());
  m.Add("b_kernel", MakeKernel());
  m.Add("a_kernel", MakeKernel());
  EXPECT_EQ(Names(m), (std::vector<std::string>{"main", "b_kernel", "a_kernel"}));
}

TEST(IRModule, ReplacingKeepsPosition) {
  ir::IRModule m;
  m.Add("f", MakeKernel());
  m.Add("g", MakeKernel());
  tir::PrimFunc replacement = MakeKernel();
  m.Add("f", replacement);
  EXPECT_EQ(Names(m), (std::vector<std::string>{"f", "g"}));
  EXPECT_EQ(m.GetPrimFunc("f"), replacement);
}

TEST(IRModule, RemoveFixesLaterIndices) {
  ir::IRModule m;
  m.Add("a", MakeKernel());
  m.Add("b", MakeKernel());
  tir::PrimFunc c = MakeKernel();
  m.Add("c", c);
  m.Remove("a");
  EXPECT_FALSE(m.Contains("a"));
  EXPECT_EQ(Names(m), (std::vector<std::string>{"b", "c"}));
  EXPECT_EQ(m.GetPrimFunc("c"), c);
  m.Add("a", MakeKernel());
  EXPECT_EQ(Names(m), (std::vector<std::string>{"b", "c", "a"}));
  m.Remove("missing");  // removing an absent name is a no-op
  EXPECT_EQ(Names(m).size(), 3u);
}

TEST(IRModule, LookupByKind) {
  ir::IRModule m;
  m.Add("main", MakeGraphFunction());
  m.Add("k", MakeKernel());
  EXPECT_NE(m.GetGraphFunction("main"), nullptr);
  EXPECT_EQ(m.GetPrimFunc("main"), nullptr);
  EXPECT_NE(m.GetPrimFunc("k"), nullptr);
  EXPECT_EQ(m.GetGraphFunction("k"), nullptr);
  EXPECT_EQ(m.Lookup("absent"), nullptr);
}

}  // namespace
}  // namespace strata
