// SpeculateInvariantLoads: see speculate_loads.h.
#include "compiler/codegen/llvm/speculate_loads.h"

#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "compiler/codegen/llvm/used_values.h"
#include "compiler/ir/arith/simplify.h"
#include "compiler/ir/tir_visitor.h"

namespace strata::codegen {
namespace {

// What the loop body binds and writes: a load that depends on none of it reads
// the same value in every iteration.
class LoopScope : public tir::StmtVisitor {
 public:
  std::unordered_set<const tir::VarNode*> bound;
  std::unordered_set<const tir::BufferNode*> written;

 protected:
  void VisitFor(const tir::ForNode* op) override {
    bound.insert(op->loop_var.get());
    tir::StmtVisitor::VisitFor(op);
  }
  void VisitLetStmt(const tir::LetStmtNode* op) override {
    bound.insert(op->var.get());
    tir::StmtVisitor::VisitLetStmt(op);
  }
  void VisitBufferStore(const tir::BufferStoreNode* op) override {
    written.insert(op->buffer.get());
    tir::StmtVisitor::VisitBufferStore(op);
  }
  void VisitAllocate(const tir::AllocateNode* op) override {
    written.insert(op->buffer.get());
    tir::StmtVisitor::VisitAllocate(op);
  }
};

// Whether an expression reads a variable of `bound` or any buffer.
bool Varies(const tir::PrimExpr& e, const std::unordered_set<const tir::VarNode*>& bound) {
  const UsedValues used = CollectUsedValues(e);
  if (!used.buffers.empty()) return true;
  for (const tir::VarNode* var : used.vars) {
    if (bound.count(var) > 0) return true;
  }
  return false;
}

// Syntactic equality of two index expressions, so that one load read at
// several places is hoisted once. Conservative: false for anything but
// constants, variables and arithmetic.
bool SameIndex(const tir::PrimExpr& a, const tir::PrimExpr& b) {
  if (a.same_as(b)) return true;
  if (a->kind != b->kind || a->dtype != b->dtype) return false;
  switch (a->kind) {
    case tir::PrimExprKind::kIntImm: return a.as<tir::IntImmNode>()->value == b.as<tir::IntImmNode>()->value;
    case tir::PrimExprKind::kVar: return false;  // distinct nodes are distinct variables
    default: break;
  }
  const auto *x = a.as<tir::BinaryOpNode>(), *y = b.as<tir::BinaryOpNode>();
  return x != nullptr && y != nullptr && SameIndex(x->a, y->a) && SameIndex(x->b, y->b);
}

class Speculator : public tir::StmtMutator {
 public:
  explicit Speculator(const LoopScope& scope) : scope_(scope) {}

  struct Hoisted {
    tir::Var var;
    tir::Buffer buffer;
    std::vector<tir::PrimExpr> indices;
  };
  std::vector<Hoisted> hoisted;

 protected:
  tir::Stmt MutateIfThenElse(const tir::Stmt& self, const tir::IfThenElseNode* op) override {
    tir::PrimExpr condition = MutateExpr(op->condition);
    ++conditional_depth_;
    tir::Stmt then_case = MutateStmt(op->then_case);
    tir::Stmt else_case = op->else_case.defined() ? MutateStmt(op->else_case) : tir::Stmt();
    --conditional_depth_;
    if (condition.same_as(op->condition) && then_case.same_as(op->then_case) &&
        (!op->else_case.defined() || else_case.same_as(op->else_case))) {
      return self;
    }
    return tir::IfThenElseNode::make(condition, then_case, else_case);
  }

  tir::PrimExpr MutateBufferLoad(const tir::PrimExpr& self, const tir::BufferLoadNode* op) override {
    if (conditional_depth_ == 0 || !Qualifies(op)) return tir::StmtMutator::MutateBufferLoad(self, op);
    for (const Hoisted& h : hoisted) {
      if (h.buffer != op->buffer) continue;
      bool same = true;
      for (size_t k = 0; k < op->indices.size() && same; ++k) same = SameIndex(h.indices[k], op->indices[k]);
      if (same) return h.var;
    }
    hoisted.push_back({tir::Var(op->buffer->name + "_invariant", op->dtype), op->buffer, op->indices});
    return hoisted.back().var;
  }

 private:
  bool Qualifies(const tir::BufferLoadNode* op) const {
    if (scope_.written.count(op->buffer.get()) > 0) return false;
    for (const tir::PrimExpr& index : op->indices) {
      if (Varies(index, scope_.bound)) return false;
    }
    for (const tir::PrimExpr& dim : op->buffer->shape) {
      if (Varies(dim, scope_.bound) || !arith::CanProve(tir::BinaryOpNode::make(tir::PrimExprKind::kGE, dim, 1))) {
        return false;
      }
    }
    return true;
  }

  const LoopScope& scope_;
  int conditional_depth_ = 0;
};

// `index` kept inside [0, extent): the load may now run where the program's
// condition would have skipped it. Only a constant index inside a constant
// extent is left alone: the simplifier takes variables to be non-negative,
// which a let-bound index (a padded row, row = oh - 1) need not be.
tir::PrimExpr Clamp(const tir::PrimExpr& index, const tir::PrimExpr& extent) {
  const int64_t* constant = tir::AsConstInt(index);
  const int64_t* size = tir::AsConstInt(extent);
  if (constant != nullptr && size != nullptr && *constant >= 0 && *constant < *size) return index;
  return tir::Max(tir::Min(index, arith::Simplify(extent - 1)), 0);
}

}  // namespace

tir::Stmt SpeculateInvariantLoads(const tir::Stmt& loop) {
  const auto* op = loop.as<tir::ForNode>();
  if (op == nullptr || op->for_kind != tir::ForKind::kVectorized) return loop;
  LoopScope scope;
  scope.bound.insert(op->loop_var.get());
  scope.VisitStmt(op->body);
  Speculator speculator(scope);
  tir::Stmt body = speculator.MutateStmt(op->body);
  if (speculator.hoisted.empty()) return loop;
  tir::Stmt result = tir::ForNode::make(op->loop_var, op->min, op->extent, op->for_kind, body);
  for (size_t k = speculator.hoisted.size(); k-- > 0;) {
    const Speculator::Hoisted& h = speculator.hoisted[k];
    std::vector<tir::PrimExpr> clamped;
    for (size_t d = 0; d < h.indices.size(); ++d) clamped.push_back(Clamp(h.indices[d], h.buffer->shape[d]));
    result = tir::LetStmtNode::make(h.var, tir::BufferLoadNode::make(h.buffer, clamped), result);
  }
  return result;
}

}  // namespace strata::codegen
