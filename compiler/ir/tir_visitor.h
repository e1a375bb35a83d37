// Visitor and mutator bases for tensor programs (statements and scalar expressions).
//
// One virtual per node struct; the defaults recurse into children. A mutator
// returns the very same handle when nothing below it changed, so callers can test
// same_as() to learn whether a rewrite did anything.
#pragma once

#include <functional>

#include "compiler/ir/prim_expr.h"
#include "compiler/ir/tir.h"

namespace strata::tir {

class PrimExprVisitor {
 public:
  virtual ~PrimExprVisitor() = default;
  virtual void VisitExpr(const PrimExpr& expr);  // dispatches on kind

 protected:
  virtual void VisitIntImm(const IntImmNode* op) {}
  virtual void VisitFloatImm(const FloatImmNode* op) {}
  virtual void VisitVar(const VarNode* op) {}
  virtual void VisitBinaryOp(const BinaryOpNode* op);
  virtual void VisitNot(const NotNode* op);
  virtual void VisitSelect(const SelectNode* op);
  virtual void VisitCast(const CastNode* op);
  virtual void VisitCall(const CallNode* op);
  virtual void VisitBufferLoad(const BufferLoadNode* op);
};

class PrimExprMutator {
 public:
  virtual ~PrimExprMutator() = default;
  virtual PrimExpr MutateExpr(const PrimExpr& expr);  // dispatches on kind

 protected:
  // `self` is the handle of `op`, returned unchanged when no child changed.
  virtual PrimExpr MutateIntImm(const PrimExpr& self, const IntImmNode* op) { return self; }
  virtual PrimExpr MutateFloatImm(const PrimExpr& self, const FloatImmNode* op) { return self; }
  virtual PrimExpr MutateVar(const PrimExpr& self, const VarNode* op) { return self; }
  virtual PrimExpr MutateBinaryOp(const PrimExpr& self, const BinaryOpNode* op);
  virtual PrimExpr MutateNot(const PrimExpr& self, const NotNode* op);
  virtual PrimExpr MutateSelect(const PrimExpr& self, const SelectNode* op);
  virtual PrimExpr MutateCast(const PrimExpr& self, const CastNode* op);
  virtual PrimExpr MutateCall(const PrimExpr& self, const CallNode* op);
  virtual PrimExpr MutateBufferLoad(const PrimExpr& self, const BufferLoadNode* op);
  // Buffers are replaced only through this hook (e.g. to substitute shapes).
  virtual Buffer MutateBuffer(const Buffer& buffer) { return buffer; }
};

// Visits statements and every expression inside them.
class StmtVisitor : public PrimExprVisitor {
 public:
  virtual void VisitStmt(const Stmt& stmt);  // dispatches on kind

 protected:
  virtual void VisitFor(const ForNode* op);
  virtual void VisitBufferStore(const BufferStoreNode* op);
  virtual void VisitAllocate(const AllocateNode* op);
  virtual void VisitLetStmt(const LetStmtNode* op);
  virtual void VisitIfThenElse(const IfThenElseNode* op);
  virtual void VisitSeqStmt(const SeqStmtNode* op);
  virtual void VisitAssertStmt(const AssertStmtNode* op);
  virtual void VisitEvaluate(const EvaluateNode* op);
  virtual void VisitPrefetch(const PrefetchNode* op);
};

class StmtMutator : public PrimExprMutator {
 public:
  virtual Stmt MutateStmt(const Stmt& stmt);  // dispatches on kind

 protected:
  virtual Stmt MutateFor(const Stmt& self, const ForNode* op);
  virtual Stmt MutateBufferStore(const Stmt& self, const BufferStoreNode* op);
  virtual Stmt MutateAllocate(const Stmt& self, const AllocateNode* op);
  virtual Stmt MutateLetStmt(const Stmt& self, const LetStmtNode* op);
  virtual Stmt MutateIfThenElse(const Stmt& self, const IfThenElseNode* op);
  virtual Stmt MutateSeqStmt(const Stmt& self, const SeqStmtNode* op);
  virtual Stmt MutateAssertStmt(const Stmt& self, const AssertStmtNode* op);
  virtual Stmt MutateEvaluate(const Stmt& self, const EvaluateNode* op);
  // A prefetch whose load was rewritten into something other than a load (an
  // inlined producer) is dropped: there is no memory left to fetch.
  virtual Stmt MutatePrefetch(const Stmt& self, const PrefetchNode* op);
};

// Replaces variables by expressions everywhere in expr (including buffer shapes
// reached through loads). Returns expr itself when no variable in `map` occurs.
PrimExpr Substitute(const PrimExpr& expr, const std::function<PrimExpr(const VarNode*)>& map);

}  // namespace strata::tir
