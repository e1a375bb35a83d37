// Dealing tensor programs to LLVM modules (see part_balance.h).
#include "compiler/codegen/llvm/part_balance.h"

#include <algorithm>

#include "compiler/ir/tir_visitor.h"

namespace strata::codegen {
namespace {

class CodeSizeEstimate : public tir::StmtVisitor {
 public:
  int64_t size = 0;

  void VisitStmt(const tir::Stmt& stmt) override {
    size += copies_;
    tir::StmtVisitor::VisitStmt(stmt);
  }
  void VisitExpr(const tir::PrimExpr& expr) override {
    size += copies_;
    tir::StmtVisitor::VisitExpr(expr);
  }

 protected:
  void VisitFor(const tir::ForNode* op) override {
    const int64_t* extent = tir::AsConstInt(op->extent);
    const int64_t saved = copies_;
    if (op->for_kind == tir::ForKind::kUnrolled && extent != nullptr) copies_ *= std::max<int64_t>(*extent, 1);
    tir::StmtVisitor::VisitFor(op);
    copies_ = saved;
  }

 private:
  int64_t copies_ = 1;
};

}  // namespace

int64_t EstimatedCodeSize(const tir::Stmt& body) {
  CodeSizeEstimate estimate;
  estimate.VisitStmt(body);
  return estimate.size;
}

std::vector<std::vector<size_t>> BalanceParts(const std::vector<int64_t>& sizes, size_t parts) {
  std::vector<std::vector<size_t>> indices(std::max<size_t>(parts, 1));
  std::vector<size_t> order(sizes.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return sizes[a] > sizes[b]; });
  std::vector<int64_t> load(indices.size(), 0);
  for (size_t i : order) {
    const size_t p = static_cast<size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    indices[p].push_back(i);
    load[p] += sizes[i];
  }
  for (std::vector<size_t>& part : indices) std::sort(part.begin(), part.end());
  return indices;
}

}  // namespace strata::codegen
