// Default traversals for graph functions.
//
// The defaults recurse into every child expression in source order; scalar
// expressions (shapes, prim values) and struct info are left alone. A rebuilt
// Call/If/SeqExpr/Function has no struct info: it may have changed, and only
// Normalize knows how to recompute it.
#include "compiler/ir/graph_visitor.h"

#include <cassert>
#include <utility>

namespace strata::graph {

// ---------------------------------------------------------------- visitor

void ExprVisitor::VisitExpr(const Expr& expr) {
  assert(expr.defined() && "visiting a null expression");
  switch (expr->kind) {
    case ExprKind::kVar: return VisitVar(expr.as<VarNode>());
    case ExprKind::kGlobalVar: return VisitGlobalVar(expr.as<GlobalVarNode>());
    case ExprKind::kExternFunc: return VisitExternFunc(expr.as<ExternFuncNode>());
    case ExprKind::kOp: return VisitOp(expr.as<OpNode>());
    case ExprKind::kConstant: return VisitConstant(expr.as<ConstantNode>());
    case ExprKind::kShapeExpr: return VisitShapeExpr(expr.as<ShapeExprNode>());
    case ExprKind::kPrimValue: return VisitPrimValue(expr.as<PrimValueNode>());
    case ExprKind::kStringImm: return VisitStringImm(expr.as<StringImmNode>());
    case ExprKind::kDataTypeImm: return VisitDataTypeImm(expr.as<DataTypeImmNode>());
    case ExprKind::kTuple: return VisitTuple(expr.as<TupleNode>());
    case ExprKind::kTupleGetItem: return VisitTupleGetItem(expr.as<TupleGetItemNode>());
    case ExprKind::kCall: return VisitCall(expr.as<CallNode>());
    case ExprKind::kIf: return VisitIf(expr.as<IfNode>());
    case ExprKind::kSeqExpr: return VisitSeqExpr(expr.as<SeqExprNode>());
    case ExprKind::kFunction: return VisitFunction(expr.as<FunctionNode>());
  }
  assert(false && "unknown graph Expr kind");
}

void ExprVisitor::VisitTuple(const TupleNode* op) {
  for (const Expr& field : op->fields) VisitExpr(field);
}

void ExprVisitor::VisitTupleGetItem(const TupleGetItemNode* op) { VisitExpr(op->tuple); }

void ExprVisitor::VisitCall(const CallNode* op) {
  VisitExpr(op->op);
  for (const Expr& arg : op->args) VisitExpr(arg);
}

void ExprVisitor::VisitIf(const IfNode* op) {
  VisitExpr(op->condition);
  VisitExpr(op->then_branch);
  VisitExpr(op->else_branch);
}

void ExprVisitor::VisitSeqExpr(const SeqExprNode* op) {
  for (const BindingBlock& block : op->blocks) VisitBindingBlock(block);
  VisitExpr(op->body);
}

void ExprVisitor::VisitFunction(const FunctionNode* op) {
  for (const Var& param : op->params) VisitVarDef(param);
  VisitExpr(op->body);
}

void ExprVisitor::VisitBindingBlock(const BindingBlock& block) {
  for (const Binding& binding : block.bindings) VisitBinding(binding);
}

// The value is visited before the definition: the var is not in scope inside it.
void ExprVisitor::VisitBinding(const Binding& binding) {
  VisitExpr(binding.value);
  VisitVarDef(binding.var);
}

// ---------------------------------------------------------------- mutator

namespace {

bool SameBinding(const Binding& a, const Binding& b) {
  return a.kind == b.kind && a.var.same_as(b.var) && a.value.same_as(b.value) && a.pattern.same_as(b.pattern);
}

bool SameBlocks(const std::vector<BindingBlock>& a, const std::vector<BindingBlock>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].is_dataflow != b[i].is_dataflow || a[i].bindings.size() != b[i].bindings.size()) return false;
    for (size_t j = 0; j < a[i].bindings.size(); ++j) {
      if (!SameBinding(a[i].bindings[j], b[i].bindings[j])) return false;
    }
  }
  return true;
}

}  // namespace

Expr ExprMutator::MutateExpr(const Expr& expr) {
  assert(expr.defined() && "mutating a null expression");
  switch (expr->kind) {
    case ExprKind::kVar: return MutateVar(expr, expr.as<VarNode>());
    case ExprKind::kGlobalVar: return MutateGlobalVar(expr, expr.as<GlobalVarNode>());
    case ExprKind::kExternFunc: return MutateExternFunc(expr, expr.as<ExternFuncNode>());
    case ExprKind::kOp: return MutateOp(expr, expr.as<OpNode>());
    case ExprKind::kConstant: return MutateConstant(expr, expr.as<ConstantNode>());
    case ExprKind::kShapeExpr: return MutateShapeExpr(expr, expr.as<ShapeExprNode>());
    case ExprKind::kPrimValue: return MutatePrimValue(expr, expr.as<PrimValueNode>());
    case ExprKind::kStringImm: return MutateStringImm(expr, expr.as<StringImmNode>());
    case ExprKind::kDataTypeImm: return MutateDataTypeImm(expr, expr.as<DataTypeImmNode>());
    case ExprKind::kTuple: return MutateTuple(expr, expr.as<TupleNode>());
    case ExprKind::kTupleGetItem: return MutateTupleGetItem(expr, expr.as<TupleGetItemNode>());
    case ExprKind::kCall: return MutateCall(expr, expr.as<CallNode>());
    case ExprKind::kIf: return MutateIf(expr, expr.as<IfNode>());
    case ExprKind::kSeqExpr: return MutateSeqExpr(expr, expr.as<SeqExprNode>());
    case ExprKind::kFunction: return MutateFunction(expr, expr.as<FunctionNode>());
  }
  assert(false && "unknown graph Expr kind");
  return expr;
}

Expr ExprMutator::MutateVar(const Expr& self, const VarNode* op) {
  auto it = var_remap_.find(op);
  return it == var_remap_.end() ? self : Expr(it->second);
}

Expr ExprMutator::MutateTuple(const Expr& self, const TupleNode* op) {
  std::vector<Expr> fields;
  fields.reserve(op->fields.size());
  bool changed = false;
  for (const Expr& field : op->fields) {
    fields.push_back(MutateExpr(field));
    changed |= !fields.back().same_as(field);
  }
  if (!changed) return self;
  return TupleNode::make(std::move(fields));
}

Expr ExprMutator::MutateTupleGetItem(const Expr& self, const TupleGetItemNode* op) {
  Expr tuple = MutateExpr(op->tuple);
  if (tuple.same_as(op->tuple)) return self;
  return TupleGetItemNode::make(std::move(tuple), op->index);
}

Expr ExprMutator::MutateCall(const Expr& self, const CallNode* op) {
  Expr callee = MutateExpr(op->op);
  bool changed = !callee.same_as(op->op);
  std::vector<Expr> args;
  args.reserve(op->args.size());
  for (const Expr& arg : op->args) {
    args.push_back(MutateExpr(arg));
    changed |= !args.back().same_as(arg);
  }
  if (!changed) return self;
  return CallNode::make(std::move(callee), std::move(args), op->attrs, op->sinfo_args);
}

Expr ExprMutator::MutateIf(const Expr& self, const IfNode* op) {
  Expr condition = MutateExpr(op->condition);
  Expr then_branch = MutateExpr(op->then_branch);
  Expr else_branch = MutateExpr(op->else_branch);
  if (condition.same_as(op->condition) && then_branch.same_as(op->then_branch) &&
      else_branch.same_as(op->else_branch)) {
    return self;
  }
  return IfNode::make(std::move(condition), std::move(then_branch), std::move(else_branch));
}

Expr ExprMutator::MutateSeqExpr(const Expr& self, const SeqExprNode* op) {
  std::vector<BindingBlock> blocks;
  for (const BindingBlock& block : op->blocks) MutateBindingBlock(block, &blocks);
  Expr body = MutateExpr(op->body);
  if (body.same_as(op->body) && SameBlocks(blocks, op->blocks)) return self;
  return SeqExprNode::make(std::move(blocks), std::move(body));
}

Expr ExprMutator::MutateFunction(const Expr& self, const FunctionNode* op) {
  // Params go through MutateExpr so a subclass can rename them via var_remap_.
  std::vector<Var> params;
  params.reserve(op->params.size());
  bool changed = false;
  for (const Var& param : op->params) {
    Expr mutated = MutateExpr(param);
    assert(mutated.as<VarNode>() && "a function parameter must stay a variable");
    params.push_back(Var::FromNode(mutated));
    changed |= !mutated.same_as(param);
  }
  Expr body = MutateExpr(op->body);
  if (!changed && body.same_as(op->body)) return self;
  return FunctionNode::make(std::move(params), std::move(body), op->ret_struct_info, op->attrs);
}

// A block whose bindings were all dropped disappears rather than printing as an
// empty block.
void ExprMutator::MutateBindingBlock(const BindingBlock& block, std::vector<BindingBlock>* out) {
  BindingBlock result;
  result.is_dataflow = block.is_dataflow;
  result.bindings.reserve(block.bindings.size());
  for (const Binding& binding : block.bindings) MutateBinding(binding, &result.bindings);
  if (result.bindings.empty() && !block.bindings.empty()) return;
  out->push_back(std::move(result));
}

// The var is kept even when the value changed; re-typing it is Normalize's job.
void ExprMutator::MutateBinding(const Binding& binding, std::vector<Binding>* out) {
  Expr value = MutateExpr(binding.value);
  if (value.same_as(binding.value)) {
    out->push_back(binding);
    return;
  }
  Binding result = binding;
  result.value = std::move(value);
  out->push_back(std::move(result));
}

}  // namespace strata::graph
