// UsedValues: see used_values.h.
#include "compiler/codegen/llvm/used_values.h"

#include <unordered_set>

#include "compiler/ir/tir_visitor.h"

namespace strata::codegen {
namespace {

class UsedValueCollector : public tir::StmtVisitor {
 public:
  UsedValues result;

 protected:
  void VisitVar(const tir::VarNode* op) override {
    if (seen_vars_.insert(op).second) result.vars.push_back(op);
  }
  void VisitBufferLoad(const tir::BufferLoadNode* op) override {
    UseBuffer(op->buffer.get());
    tir::StmtVisitor::VisitBufferLoad(op);
  }
  void VisitBufferStore(const tir::BufferStoreNode* op) override {
    UseBuffer(op->buffer.get());
    tir::StmtVisitor::VisitBufferStore(op);
  }
  void VisitAllocate(const tir::AllocateNode* op) override {
    // The allocation's size is computed outside the new buffer's scope.
    for (const tir::PrimExpr& dim : op->buffer->shape) VisitExpr(dim);
    tir::StmtVisitor::VisitAllocate(op);
  }

 private:
  void UseBuffer(const tir::BufferNode* buffer) {
    if (!seen_buffers_.insert(buffer).second) return;
    result.buffers.push_back(buffer);
    for (const tir::PrimExpr& dim : buffer->shape) VisitExpr(dim);
  }

  std::unordered_set<const tir::VarNode*> seen_vars_;
  std::unordered_set<const tir::BufferNode*> seen_buffers_;
};

}  // namespace

UsedValues CollectUsedValues(const tir::Stmt& stmt) {
  UsedValueCollector collector;
  collector.VisitStmt(stmt);
  return std::move(collector.result);
}

UsedValues CollectUsedValues(const tir::PrimExpr& expr) {
  UsedValueCollector collector;
  collector.VisitExpr(expr);
  return std::move(collector.result);
}

}  // namespace strata::codegen
