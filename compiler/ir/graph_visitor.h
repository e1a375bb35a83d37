// Visitor and mutator bases for graph functions.
//
// One virtual per expression node plus hooks for bindings and blocks; the
// defaults recurse. The mutator returns the same handle when nothing changed
// and keeps struct info of unchanged nodes. A mutated Call/If/SeqExpr comes back
// without struct info (it may have changed): run Normalize afterwards, or use
// graph::Normalizer (normalize.h), which re-infers as it rebuilds.
#pragma once

#include <map>
#include <vector>

#include "compiler/ir/graph.h"

namespace strata::graph {

class ExprVisitor {
 public:
  virtual ~ExprVisitor() = default;
  virtual void VisitExpr(const Expr& expr);  // dispatches on kind

 protected:
  virtual void VisitVar(const VarNode* op) {}
  virtual void VisitGlobalVar(const GlobalVarNode* op) {}
  virtual void VisitExternFunc(const ExternFuncNode* op) {}
  virtual void VisitOp(const OpNode* op) {}
  virtual void VisitConstant(const ConstantNode* op) {}
  virtual void VisitShapeExpr(const ShapeExprNode* op) {}
  virtual void VisitPrimValue(const PrimValueNode* op) {}
  virtual void VisitStringImm(const StringImmNode* op) {}
  virtual void VisitDataTypeImm(const DataTypeImmNode* op) {}
  virtual void VisitTuple(const TupleNode* op);
  virtual void VisitTupleGetItem(const TupleGetItemNode* op);
  virtual void VisitCall(const CallNode* op);
  virtual void VisitIf(const IfNode* op);
  virtual void VisitSeqExpr(const SeqExprNode* op);
  virtual void VisitFunction(const FunctionNode* op);
  virtual void VisitBindingBlock(const BindingBlock& block);
  // Visits the value; the bound var is visited through VisitVarDef.
  virtual void VisitBinding(const Binding& binding);
  virtual void VisitVarDef(const Var& var) {}
};

class ExprMutator {
 public:
  virtual ~ExprMutator() = default;
  virtual Expr MutateExpr(const Expr& expr);  // dispatches on kind

 protected:
  virtual Expr MutateVar(const Expr& self, const VarNode* op);  // applies var_remap_
  virtual Expr MutateGlobalVar(const Expr& self, const GlobalVarNode* op) { return self; }
  virtual Expr MutateExternFunc(const Expr& self, const ExternFuncNode* op) { return self; }
  virtual Expr MutateOp(const Expr& self, const OpNode* op) { return self; }
  virtual Expr MutateConstant(const Expr& self, const ConstantNode* op) { return self; }
  virtual Expr MutateShapeExpr(const Expr& self, const ShapeExprNode* op) { return self; }
  virtual Expr MutatePrimValue(const Expr& self, const PrimValueNode* op) { return self; }
  virtual Expr MutateStringImm(const Expr& self, const StringImmNode* op) { return self; }
  virtual Expr MutateDataTypeImm(const Expr& self, const DataTypeImmNode* op) { return self; }
  virtual Expr MutateTuple(const Expr& self, const TupleNode* op);
  virtual Expr MutateTupleGetItem(const Expr& self, const TupleGetItemNode* op);
  virtual Expr MutateCall(const Expr& self, const CallNode* op);
  virtual Expr MutateIf(const Expr& self, const IfNode* op);
  virtual Expr MutateSeqExpr(const Expr& self, const SeqExprNode* op);
  virtual Expr MutateFunction(const Expr& self, const FunctionNode* op);

  // A block may expand into several (or none); the default mutates each binding
  // with MutateBinding and appends the results to `out`.
  virtual void MutateBindingBlock(const BindingBlock& block, std::vector<BindingBlock>* out);
  // Appends the rewritten binding(s) to `out` (the block being built). Dropping a
  // binding is allowed; emitting extra bindings before it is allowed.
  virtual void MutateBinding(const Binding& binding, std::vector<Binding>* out);

  // Uses of a var whose definition was replaced are redirected here.
  std::map<const VarNode*, Var> var_remap_;
};

}  // namespace strata::graph
