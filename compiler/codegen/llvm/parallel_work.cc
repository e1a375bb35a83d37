// Work estimate of a parallel loop (see parallel_work.h).
#include "compiler/codegen/llvm/parallel_work.h"

#include <map>

#include "compiler/ir/arith/simplify.h"
#include "compiler/ir/tir_visitor.h"

namespace strata::codegen {
namespace {

using tir::PrimExpr;

// Calls of libm-class functions in an expression (exp, erf, tanh, ...): each
// costs tens of cycles where arithmetic costs one.
class TranscendentalCounter : public tir::PrimExprVisitor {
 public:
  int64_t count = 0;

 protected:
  void VisitCall(const tir::CallNode* op) override {
    switch (op->op) {
      case tir::Intrinsic::kExp:
      case tir::Intrinsic::kLog:
      case tir::Intrinsic::kTanh:
      case tir::Intrinsic::kErf:
      case tir::Intrinsic::kPow:
      case tir::Intrinsic::kSin:
      case tir::Intrinsic::kCos:
      case tir::Intrinsic::kFmod: ++count; break;
      default: break;
    }
    tir::PrimExprVisitor::VisitCall(op);
  }
};

int64_t TranscendentalWork(const tir::PrimExpr& e) {
  TranscendentalCounter counter;
  counter.VisitExpr(e);
  return counter.count * kTranscendentalCost;
}

class WorkEstimator {
 public:
  // Innermost statement executions of `s`, with the variables bound inside
  // the parallel loop replaced by their first values.
  std::optional<PrimExpr> Work(const tir::Stmt& s) {
    switch (s->kind) {
      case tir::StmtKind::kFor: {
        const auto* loop = s.as<tir::ForNode>();
        PrimExpr extent = Substituted(loop->extent);
        bindings_[loop->loop_var.get()] = Substituted(loop->min);
        std::optional<PrimExpr> body = Work(loop->body);
        if (!body) return std::nullopt;
        return tir::Max(extent, 0) * *body;
      }
      case tir::StmtKind::kSeqStmt: {
        PrimExpr total = 0;
        for (const tir::Stmt& child : s.as<tir::SeqStmtNode>()->stmts) {
          std::optional<PrimExpr> w = Work(child);
          if (!w) return std::nullopt;
          total = total + *w;
        }
        return total;
      }
      case tir::StmtKind::kIfThenElse: {
        const auto* op = s.as<tir::IfThenElseNode>();
        std::optional<PrimExpr> then_work = Work(op->then_case);
        std::optional<PrimExpr> else_work = op->else_case.defined() ? Work(op->else_case) : PrimExpr(0);
        if (!then_work || !else_work) return std::nullopt;
        return *then_work + *else_work;
      }
      case tir::StmtKind::kLetStmt: {
        const auto* op = s.as<tir::LetStmtNode>();
        bindings_[op->var.get()] = Substituted(op->value);
        std::optional<PrimExpr> body = Work(op->body);
        if (!body) return body;
        const int64_t value_work = TranscendentalWork(op->value);
        return value_work == 0 ? *body : *body + value_work;
      }
      case tir::StmtKind::kAllocate: return Work(s.as<tir::AllocateNode>()->body);
      case tir::StmtKind::kBufferStore: return PrimExpr(1 + TranscendentalWork(s.as<tir::BufferStoreNode>()->value));
      default: return PrimExpr(1);
    }
  }

  void Bind(const tir::VarNode* var, PrimExpr value) { bindings_[var] = std::move(value); }

 private:
  PrimExpr Substituted(const PrimExpr& e) const {
    return tir::Substitute(e, [&](const tir::VarNode* v) -> PrimExpr {
      auto it = bindings_.find(v);
      return it == bindings_.end() ? PrimExpr() : it->second;
    });
  }

  std::map<const tir::VarNode*, PrimExpr> bindings_;
};

}  // namespace

std::optional<PrimExpr> ParallelLoopWork(const tir::ForNode& loop) {
  WorkEstimator estimator;
  estimator.Bind(loop.loop_var.get(), loop.min);
  std::optional<PrimExpr> body = estimator.Work(loop.body);
  if (!body) return std::nullopt;
  // Integer estimates only: a float or bool extent cannot appear in a loop.
  return arith::Simplify(loop.extent * *body);
}

}  // namespace strata::codegen
