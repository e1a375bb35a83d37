// Tests of the tensor-program visitor and mutator defaults, and Substitute.
#include "compiler/ir/tir_visitor.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace strata {
namespace {

using tir::PrimExpr;
using tir::Stmt;

// Records variable uses in visiting order.
class VarCollector : public tir::StmtVisitor {
 public:
  std::vector<std::string> names;

 protected:
  void VisitVar(const tir::VarNode* op) override { names.push_back(op->name); }
};

// Changes nothing, but goes through every default.
class NoOpMutator : public tir::StmtMutator {};

// Replaces one variable by another.
class RenameMutator : public tir::StmtMutator {
 public:
  RenameMutator(tir::Var from, PrimExpr to) : from_(std::move(from)), to_(std::move(to)) {}

 protected:
  PrimExpr MutateVar(const PrimExpr& self, const tir::VarNode* op) override { return self.same_as(from_) ? to_ : self; }

 private:
  tir::Var from_;
  PrimExpr to_;
};

// for i in range(0, n) { B[i] = A[i] + 1.0; B[i + 1] = A[j] }
struct Program {
  tir::Var n{"n"}, i{"i"}, j{"j"};
  tir::Buffer a = tir::MakeBuffer("A", DataType::F32(), {n});
  tir::Buffer b = tir::MakeBuffer("B", DataType::F32(), {n});
  Stmt store0 =
      tir::BufferStoreNode::make(b, {i}, tir::BufferLoadNode::make(a, {i}) + tir::FloatImm(DataType::F32(), 1.0));
  Stmt store1 = tir::BufferStoreNode::make(b, {i + 1}, tir::BufferLoadNode::make(a, {j}));
  Stmt body = tir::SeqStmtNode::make({store0, store1});
  Stmt loop = tir::ForNode::make(i, 0, n, tir::ForKind::kSerial, body);
};

TEST(StmtVisitor, VisitsExpressionsInSourceOrder) {
  Program p;
  VarCollector collector;
  collector.VisitStmt(p.loop);
  // extent n; store0: index i, load index i; store1: index i, load index j.
  EXPECT_EQ(collector.names, (std::vector<std::string>{"n", "i", "i", "i", "j"}));
}

TEST(StmtMutator, ReturnsTheSameTreeWhenNothingChanges) {
  Program p;
  NoOpMutator mutator;
  EXPECT_TRUE(mutator.MutateStmt(p.loop).same_as(p.loop));
  PrimExpr e = tir::SelectNode::make(tir::BinaryOpNode::make(tir::PrimExprKind::kLT, p.i, p.n),
                                     tir::CastNode::make(DataType::F32(), p.i), tir::FloatImm(DataType::F32(), 0));
  EXPECT_TRUE(mutator.MutateExpr(e).same_as(e));
}

TEST(StmtMutator, RebuildsOnlyThePathToAChange) {
  Program p;
  RenameMutator mutator(p.j, p.i);
  Stmt result = mutator.MutateStmt(p.loop);
  ASSERT_FALSE(result.same_as(p.loop));
  const auto* loop = result.as<tir::ForNode>();
  ASSERT_NE(loop, nullptr);
  EXPECT_TRUE(loop->loop_var.same_as(p.i));
  const auto* seq = loop->body.as<tir::SeqStmtNode>();
  ASSERT_NE(seq, nullptr);
  EXPECT_TRUE(seq->stmts[0].same_as(p.store0));  // untouched sibling is shared
  ASSERT_FALSE(seq->stmts[1].same_as(p.store1));
  const auto* load = seq->stmts[1].as<tir::BufferStoreNode>()->value.as<tir::BufferLoadNode>();
  EXPECT_TRUE(load->indices[0].same_as(p.i));
  EXPECT_EQ(load->buffer, p.a);  // buffers are kept unless MutateBuffer replaces them
}

TEST(StmtMutator, RebuiltSequencesAreFlattened) {
  Program p;
  // Replaces every store with a two-statement sequence.
  class Duplicate : public tir::StmtMutator {
   protected:
    Stmt MutateBufferStore(const Stmt& self, const tir::BufferStoreNode* op) override {
      return tir::SeqStmtNode::make({self, self});
    }
  } mutator;
  Stmt result = mutator.MutateStmt(p.body);
  const auto* seq = result.as<tir::SeqStmtNode>();
  ASSERT_NE(seq, nullptr);
  EXPECT_EQ(seq->stmts.size(), 4u);
}

// A prefetch follows its load through a rewrite of the indices, and is dropped
// when the load itself is rewritten into a value (an inlined producer): there
// is no memory left to fetch.
TEST(StmtMutator, PrefetchFollowsItsLoadOrIsDroppedWithIt) {
  Program p;
  const Stmt prefetch = tir::PrefetchNode::make(tir::BufferLoadNode::make(p.a, {p.j}));
  RenameMutator rename(p.j, p.i);
  const Stmt result = rename.MutateStmt(prefetch);
  const auto* renamed = result.as<tir::PrefetchNode>();
  ASSERT_NE(renamed, nullptr);
  EXPECT_TRUE(renamed->load.as<tir::BufferLoadNode>()->indices[0].same_as(p.i));
  class InlineA : public tir::StmtMutator {
   protected:
    PrimExpr MutateBufferLoad(const PrimExpr& self, const tir::BufferLoadNode* op) override {
      return tir::FloatImm(DataType::F32(), 0);
    }
  } inline_a;
  const Stmt dropped = inline_a.MutateStmt(prefetch);
  const auto* seq = dropped.as<tir::SeqStmtNode>();
  ASSERT_NE(seq, nullptr);
  EXPECT_TRUE(seq->stmts.empty());
  VarCollector collector;
  collector.VisitStmt(prefetch);
  EXPECT_EQ(collector.names, (std::vector<std::string>{"j"}));
}

TEST(Substitute, ReturnsTheSameExpressionWhenNothingIsMapped) {
  Program p;
  PrimExpr e = tir::BufferLoadNode::make(p.a, {p.i * 2});
  PrimExpr result =
      tir::Substitute(e, [&](const tir::VarNode* v) -> PrimExpr { return v == p.j.get() ? PrimExpr(3) : PrimExpr(); });
  EXPECT_TRUE(result.same_as(e));
}

TEST(Substitute, ReplacesVariablesIncludingBufferShapes) {
  Program p;
  PrimExpr e = tir::BufferLoadNode::make(p.a, {p.n - 1}) + tir::BufferLoadNode::make(p.a, {p.i});
  PrimExpr result =
      tir::Substitute(e, [&](const tir::VarNode* v) -> PrimExpr { return v == p.n.get() ? PrimExpr(8) : PrimExpr(); });
  const auto* add = result.as<tir::BinaryOpNode>();
  ASSERT_NE(add, nullptr);
  const auto* first = add->a.as<tir::BufferLoadNode>();
  const auto* second = add->b.as<tir::BufferLoadNode>();
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  ASSERT_NE(tir::AsConstInt(first->buffer->shape[0]), nullptr);
  EXPECT_EQ(*tir::AsConstInt(first->buffer->shape[0]), 8);
  EXPECT_EQ(first->buffer, second->buffer);  // one buffer stays one buffer
  EXPECT_NE(first->buffer, p.a);
  EXPECT_TRUE(second->indices[0].same_as(p.i));
}

}  // namespace
}  // namespace strata
