// Default traversals for tensor programs, and Substitute.
//
// Defaults visit children in source order. Definitions (a loop variable, a let
// variable, an allocated buffer) are not visited as uses; visitors that care
// about them override the statement hook.
#include "compiler/ir/tir_visitor.h"

#include <cassert>
#include <map>
#include <utility>

namespace strata::tir {

// ---------------------------------------------------------------- visitors

void PrimExprVisitor::VisitExpr(const PrimExpr& expr) {
  assert(expr.defined() && "visiting a null expression");
  switch (expr->kind) {
    case PrimExprKind::kIntImm: return VisitIntImm(expr.as<IntImmNode>());
    case PrimExprKind::kFloatImm: return VisitFloatImm(expr.as<FloatImmNode>());
    case PrimExprKind::kVar: return VisitVar(expr.as<VarNode>());
    case PrimExprKind::kNot: return VisitNot(expr.as<NotNode>());
    case PrimExprKind::kSelect: return VisitSelect(expr.as<SelectNode>());
    case PrimExprKind::kCast: return VisitCast(expr.as<CastNode>());
    case PrimExprKind::kCall: return VisitCall(expr.as<CallNode>());
    case PrimExprKind::kBufferLoad: return VisitBufferLoad(expr.as<BufferLoadNode>());
    default: assert(IsBinaryOp(expr->kind) && "unknown PrimExpr kind"); return VisitBinaryOp(expr.as<BinaryOpNode>());
  }
}

void PrimExprVisitor::VisitBinaryOp(const BinaryOpNode* op) {
  VisitExpr(op->a);
  VisitExpr(op->b);
}

void PrimExprVisitor::VisitNot(const NotNode* op) { VisitExpr(op->a); }

void PrimExprVisitor::VisitSelect(const SelectNode* op) {
  VisitExpr(op->condition);
  VisitExpr(op->true_value);
  VisitExpr(op->false_value);
}

void PrimExprVisitor::VisitCast(const CastNode* op) { VisitExpr(op->value); }

void PrimExprVisitor::VisitCall(const CallNode* op) {
  for (const PrimExpr& arg : op->args) VisitExpr(arg);
}

void PrimExprVisitor::VisitBufferLoad(const BufferLoadNode* op) {
  for (const PrimExpr& index : op->indices) VisitExpr(index);
}

void StmtVisitor::VisitStmt(const Stmt& stmt) {
  assert(stmt.defined() && "visiting a null statement");
  switch (stmt->kind) {
    case StmtKind::kFor: return VisitFor(stmt.as<ForNode>());
    case StmtKind::kBufferStore: return VisitBufferStore(stmt.as<BufferStoreNode>());
    case StmtKind::kAllocate: return VisitAllocate(stmt.as<AllocateNode>());
    case StmtKind::kLetStmt: return VisitLetStmt(stmt.as<LetStmtNode>());
    case StmtKind::kIfThenElse: return VisitIfThenElse(stmt.as<IfThenElseNode>());
    case StmtKind::kSeqStmt: return VisitSeqStmt(stmt.as<SeqStmtNode>());
    case StmtKind::kAssertStmt: return VisitAssertStmt(stmt.as<AssertStmtNode>());
    case StmtKind::kEvaluate: return VisitEvaluate(stmt.as<EvaluateNode>());
    case StmtKind::kPrefetch: return VisitPrefetch(stmt.as<PrefetchNode>());
  }
  assert(false && "unknown Stmt kind");
}

void StmtVisitor::VisitFor(const ForNode* op) {
  VisitExpr(op->min);
  VisitExpr(op->extent);
  VisitStmt(op->body);
}

void StmtVisitor::VisitBufferStore(const BufferStoreNode* op) {
  for (const PrimExpr& index : op->indices) VisitExpr(index);
  VisitExpr(op->value);
}

void StmtVisitor::VisitAllocate(const AllocateNode* op) { VisitStmt(op->body); }

void StmtVisitor::VisitLetStmt(const LetStmtNode* op) {
  VisitExpr(op->value);
  VisitStmt(op->body);
}

void StmtVisitor::VisitIfThenElse(const IfThenElseNode* op) {
  VisitExpr(op->condition);
  VisitStmt(op->then_case);
  if (op->else_case.defined()) VisitStmt(op->else_case);
}

void StmtVisitor::VisitSeqStmt(const SeqStmtNode* op) {
  for (const Stmt& stmt : op->stmts) VisitStmt(stmt);
}

void StmtVisitor::VisitAssertStmt(const AssertStmtNode* op) { VisitExpr(op->condition); }

void StmtVisitor::VisitEvaluate(const EvaluateNode* op) { VisitExpr(op->value); }

void StmtVisitor::VisitPrefetch(const PrefetchNode* op) { VisitExpr(op->load); }

// ---------------------------------------------------------------- mutators

namespace {

// Mutates every element; returns true if any came back as a different node.
template <typename Ref, typename Fn>
bool MutateAll(const std::vector<Ref>& in, std::vector<Ref>* out, Fn&& fn) {
  bool changed = false;
  out->reserve(in.size());
  for (const Ref& item : in) {
    out->push_back(fn(item));
    changed |= !out->back().same_as(item);
  }
  return changed;
}

}  // namespace

PrimExpr PrimExprMutator::MutateExpr(const PrimExpr& expr) {
  assert(expr.defined() && "mutating a null expression");
  switch (expr->kind) {
    case PrimExprKind::kIntImm: return MutateIntImm(expr, expr.as<IntImmNode>());
    case PrimExprKind::kFloatImm: return MutateFloatImm(expr, expr.as<FloatImmNode>());
    case PrimExprKind::kVar: return MutateVar(expr, expr.as<VarNode>());
    case PrimExprKind::kNot: return MutateNot(expr, expr.as<NotNode>());
    case PrimExprKind::kSelect: return MutateSelect(expr, expr.as<SelectNode>());
    case PrimExprKind::kCast: return MutateCast(expr, expr.as<CastNode>());
    case PrimExprKind::kCall: return MutateCall(expr, expr.as<CallNode>());
    case PrimExprKind::kBufferLoad: return MutateBufferLoad(expr, expr.as<BufferLoadNode>());
    default:
      assert(IsBinaryOp(expr->kind) && "unknown PrimExpr kind");
      return MutateBinaryOp(expr, expr.as<BinaryOpNode>());
  }
}

PrimExpr PrimExprMutator::MutateBinaryOp(const PrimExpr& self, const BinaryOpNode* op) {
  PrimExpr a = MutateExpr(op->a);
  PrimExpr b = MutateExpr(op->b);
  if (a.same_as(op->a) && b.same_as(op->b)) return self;
  return BinaryOpNode::make(op->kind, std::move(a), std::move(b));
}

PrimExpr PrimExprMutator::MutateNot(const PrimExpr& self, const NotNode* op) {
  PrimExpr a = MutateExpr(op->a);
  if (a.same_as(op->a)) return self;
  return NotNode::make(std::move(a));
}

PrimExpr PrimExprMutator::MutateSelect(const PrimExpr& self, const SelectNode* op) {
  PrimExpr c = MutateExpr(op->condition);
  PrimExpr t = MutateExpr(op->true_value);
  PrimExpr f = MutateExpr(op->false_value);
  if (c.same_as(op->condition) && t.same_as(op->true_value) && f.same_as(op->false_value)) return self;
  return SelectNode::make(std::move(c), std::move(t), std::move(f));
}

PrimExpr PrimExprMutator::MutateCast(const PrimExpr& self, const CastNode* op) {
  PrimExpr value = MutateExpr(op->value);
  if (value.same_as(op->value)) return self;
  return CastNode::make(op->dtype, std::move(value));
}

PrimExpr PrimExprMutator::MutateCall(const PrimExpr& self, const CallNode* op) {
  std::vector<PrimExpr> args;
  if (!MutateAll(op->args, &args, [&](const PrimExpr& e) { return MutateExpr(e); })) return self;
  return CallNode::make(op->op, std::move(args));
}

PrimExpr PrimExprMutator::MutateBufferLoad(const PrimExpr& self, const BufferLoadNode* op) {
  Buffer buffer = MutateBuffer(op->buffer);
  std::vector<PrimExpr> indices;
  bool changed = MutateAll(op->indices, &indices, [&](const PrimExpr& e) { return MutateExpr(e); });
  if (!changed && buffer == op->buffer) return self;
  return BufferLoadNode::make(std::move(buffer), std::move(indices));
}

Stmt StmtMutator::MutateStmt(const Stmt& stmt) {
  assert(stmt.defined() && "mutating a null statement");
  switch (stmt->kind) {
    case StmtKind::kFor: return MutateFor(stmt, stmt.as<ForNode>());
    case StmtKind::kBufferStore: return MutateBufferStore(stmt, stmt.as<BufferStoreNode>());
    case StmtKind::kAllocate: return MutateAllocate(stmt, stmt.as<AllocateNode>());
    case StmtKind::kLetStmt: return MutateLetStmt(stmt, stmt.as<LetStmtNode>());
    case StmtKind::kIfThenElse: return MutateIfThenElse(stmt, stmt.as<IfThenElseNode>());
    case StmtKind::kSeqStmt: return MutateSeqStmt(stmt, stmt.as<SeqStmtNode>());
    case StmtKind::kAssertStmt: return MutateAssertStmt(stmt, stmt.as<AssertStmtNode>());
    case StmtKind::kEvaluate: return MutateEvaluate(stmt, stmt.as<EvaluateNode>());
    case StmtKind::kPrefetch: return MutatePrefetch(stmt, stmt.as<PrefetchNode>());
  }
  assert(false && "unknown Stmt kind");
  return stmt;
}

Stmt StmtMutator::MutateFor(const Stmt& self, const ForNode* op) {
  PrimExpr min = MutateExpr(op->min);
  PrimExpr extent = MutateExpr(op->extent);
  Stmt body = MutateStmt(op->body);
  if (min.same_as(op->min) && extent.same_as(op->extent) && body.same_as(op->body)) return self;
  return ForNode::make(op->loop_var, std::move(min), std::move(extent), op->for_kind, std::move(body));
}

Stmt StmtMutator::MutateBufferStore(const Stmt& self, const BufferStoreNode* op) {
  Buffer buffer = MutateBuffer(op->buffer);
  std::vector<PrimExpr> indices;
  bool changed = MutateAll(op->indices, &indices, [&](const PrimExpr& e) { return MutateExpr(e); });
  PrimExpr value = MutateExpr(op->value);
  if (!changed && buffer == op->buffer && value.same_as(op->value)) return self;
  return BufferStoreNode::make(std::move(buffer), std::move(indices), std::move(value));
}

Stmt StmtMutator::MutateAllocate(const Stmt& self, const AllocateNode* op) {
  Buffer buffer = MutateBuffer(op->buffer);
  Stmt body = MutateStmt(op->body);
  if (buffer == op->buffer && body.same_as(op->body)) return self;
  return AllocateNode::make(std::move(buffer), std::move(body));
}

Stmt StmtMutator::MutateLetStmt(const Stmt& self, const LetStmtNode* op) {
  PrimExpr value = MutateExpr(op->value);
  Stmt body = MutateStmt(op->body);
  if (value.same_as(op->value) && body.same_as(op->body)) return self;
  return LetStmtNode::make(op->var, std::move(value), std::move(body));
}

Stmt StmtMutator::MutateIfThenElse(const Stmt& self, const IfThenElseNode* op) {
  PrimExpr condition = MutateExpr(op->condition);
  Stmt then_case = MutateStmt(op->then_case);
  Stmt else_case = op->else_case.defined() ? MutateStmt(op->else_case) : Stmt();
  if (condition.same_as(op->condition) && then_case.same_as(op->then_case) && else_case.same_as(op->else_case)) {
    return self;
  }
  return IfThenElseNode::make(std::move(condition), std::move(then_case), std::move(else_case));
}

Stmt StmtMutator::MutateSeqStmt(const Stmt& self, const SeqStmtNode* op) {
  std::vector<Stmt> stmts;
  if (!MutateAll(op->stmts, &stmts, [&](const Stmt& s) { return MutateStmt(s); })) return self;
  return SeqStmtNode::make(std::move(stmts));
}

Stmt StmtMutator::MutateAssertStmt(const Stmt& self, const AssertStmtNode* op) {
  PrimExpr condition = MutateExpr(op->condition);
  if (condition.same_as(op->condition)) return self;
  return AssertStmtNode::make(std::move(condition), op->message);
}

Stmt StmtMutator::MutateEvaluate(const Stmt& self, const EvaluateNode* op) {
  PrimExpr value = MutateExpr(op->value);
  if (value.same_as(op->value)) return self;
  return EvaluateNode::make(std::move(value));
}

Stmt StmtMutator::MutatePrefetch(const Stmt& self, const PrefetchNode* op) {
  PrimExpr load = MutateExpr(op->load);
  if (load.same_as(op->load)) return self;
  if (load.as<BufferLoadNode>() == nullptr) return SeqStmtNode::make({});
  return PrefetchNode::make(std::move(load));
}

// ---------------------------------------------------------------- Substitute

namespace {

class Substituter : public PrimExprMutator {
 public:
  explicit Substituter(const std::function<PrimExpr(const VarNode*)>& map) : map_(map) {}

 protected:
  PrimExpr MutateVar(const PrimExpr& self, const VarNode* op) override {
    PrimExpr replacement = map_(op);
    return replacement.defined() ? replacement : self;
  }

  // A buffer seen twice must map to one new buffer, or loads from the same buffer
  // would stop being loads from the same buffer.
  Buffer MutateBuffer(const Buffer& buffer) override {
    auto it = buffers_.find(buffer.get());
    if (it != buffers_.end()) return it->second;
    std::vector<PrimExpr> shape;
    bool changed = MutateAll(buffer->shape, &shape, [&](const PrimExpr& e) { return MutateExpr(e); });
    Buffer result = changed ? MakeBuffer(buffer->name, buffer->dtype, std::move(shape)) : buffer;
    buffers_.emplace(buffer.get(), result);
    return result;
  }

 private:
  const std::function<PrimExpr(const VarNode*)>& map_;
  std::map<const BufferNode*, Buffer> buffers_;
};

}  // namespace

PrimExpr Substitute(const PrimExpr& expr, const std::function<PrimExpr(const VarNode*)>& map) {
  return Substituter(map).MutateExpr(expr);
}

}  // namespace strata::tir
