// Elementwise-nest matching, compute inline and store inline; see tir_inline.h.
#include "compiler/transform/tir_inline.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>

#include "compiler/analysis/struct_info_util.h"
#include "compiler/ir/structural_equal.h"
#include "compiler/ir/tir_visitor.h"

namespace strata::transform {

using tir::Buffer;
using tir::PrimExpr;
using tir::Stmt;

namespace {

class BufferLoadFinder : public tir::StmtVisitor {
 public:
  explicit BufferLoadFinder(const Buffer& buffer) : buffer_(buffer) {}
  bool found = false;

 protected:
  void VisitBufferLoad(const tir::BufferLoadNode* op) override {
    found = found || op->buffer == buffer_;
    tir::StmtVisitor::VisitBufferLoad(op);
  }

 private:
  const Buffer& buffer_;
};

class LoadIndexChecker : public tir::PrimExprVisitor {
 public:
  LoadIndexChecker(const Buffer& buffer, const std::vector<tir::Var>& index) : buffer_(buffer), index_(index) {}
  bool ok = true;

 protected:
  void VisitBufferLoad(const tir::BufferLoadNode* op) override {
    if (op->buffer == buffer_) {
      bool same = op->indices.size() == index_.size();
      for (size_t d = 0; same && d < index_.size(); ++d) same = op->indices[d].get() == index_[d].get();
      ok = ok && same;
    }
    tir::PrimExprVisitor::VisitBufferLoad(op);
  }

 private:
  const Buffer& buffer_;
  const std::vector<tir::Var>& index_;
};

// Replaces every occurrence of `pattern` (structurally) by `replacement`.
class ExprReplacer : public tir::PrimExprMutator {
 public:
  ExprReplacer(PrimExpr pattern, PrimExpr replacement)
      : pattern_(std::move(pattern)), replacement_(std::move(replacement)) {}
  PrimExpr MutateExpr(const PrimExpr& expr) override {
    if (ir::StructuralEqual(expr, pattern_)) return replacement_;
    return tir::PrimExprMutator::MutateExpr(expr);
  }

 private:
  PrimExpr pattern_, replacement_;
};

class VarFinder : public tir::PrimExprVisitor {
 public:
  explicit VarFinder(std::vector<const tir::VarNode*> vars) : vars_(std::move(vars)) {}
  bool found = false;

 protected:
  void VisitVar(const tir::VarNode* op) override {
    for (const tir::VarNode* v : vars_) found = found || v == op;
  }

 private:
  std::vector<const tir::VarNode*> vars_;
};

bool Mentions(const PrimExpr& expr, std::vector<const tir::VarNode*> vars) {
  VarFinder finder(std::move(vars));
  finder.VisitExpr(expr);
  return finder.found;
}

class LoadInliner : public tir::StmtMutator {
 public:
  explicit LoadInliner(const ElementwiseNest& producer) : producer_(producer) {}

 protected:
  PrimExpr MutateBufferLoad(const PrimExpr& self, const tir::BufferLoadNode* op) override {
    if (op->buffer != producer_.out) return tir::StmtMutator::MutateBufferLoad(self, op);
    std::vector<PrimExpr> index;
    for (const PrimExpr& i : op->indices) index.push_back(MutateExpr(i));
    return producer_.ValueAt(index);
  }

 private:
  const ElementwiseNest& producer_;
};

// Loads of `buffer` -> `value` (the epilogue's reads of its input).
class LoadReplacer : public tir::PrimExprMutator {
 public:
  LoadReplacer(const Buffer& buffer, PrimExpr value) : buffer_(buffer), value_(std::move(value)) {}

 protected:
  PrimExpr MutateBufferLoad(const PrimExpr& self, const tir::BufferLoadNode* op) override {
    if (op->buffer == buffer_) return value_;
    return tir::PrimExprMutator::MutateBufferLoad(self, op);
  }

 private:
  const Buffer& buffer_;
  PrimExpr value_;
};

class StoreInliner : public tir::StmtMutator {
 public:
  StoreInliner(const Buffer& input, const ElementwiseNest& epilogue) : input_(input), epilogue_(epilogue) {}

 protected:
  Stmt MutateBufferStore(const Stmt& self, const tir::BufferStoreNode* op) override {
    if (op->buffer != input_) return tir::StmtMutator::MutateBufferStore(self, op);
    tir::Var result(input_->name + "_value", input_->dtype);
    LoadReplacer replace(input_, result);
    PrimExpr value = replace.MutateExpr(epilogue_.value);
    std::map<const tir::VarNode*, PrimExpr> at;
    for (size_t d = 0; d < epilogue_.position.size(); ++d) at[epilogue_.position[d].get()] = op->indices[d];
    value = tir::Substitute(value, [&](const tir::VarNode* v) -> PrimExpr {
      auto it = at.find(v);
      return it == at.end() ? PrimExpr() : it->second;
    });
    return tir::LetStmtNode::make(result, op->value, tir::BufferStoreNode::make(epilogue_.out, op->indices, value));
  }

 private:
  const Buffer& input_;
  const ElementwiseNest& epilogue_;
};

}  // namespace

PrimExpr ElementwiseNest::ValueAt(const std::vector<PrimExpr>& index) const {
  return tir::Substitute(value, [&](const tir::VarNode* v) -> PrimExpr {
    for (size_t d = 0; d < position.size(); ++d) {
      if (position[d].get() == v) return index[d];
    }
    return PrimExpr();
  });
}

void SplitLeadingChecks(const Stmt& body, std::vector<Stmt>* checks, Stmt* rest) {
  if (const auto* seq = body.as<tir::SeqStmtNode>()) {
    size_t i = 0;
    while (i < seq->stmts.size() && seq->stmts[i].as<tir::AssertStmtNode>() != nullptr) {
      checks->push_back(seq->stmts[i++]);
    }
    *rest = tir::SeqStmtNode::make(std::vector<Stmt>(seq->stmts.begin() + static_cast<long>(i), seq->stmts.end()));
    return;
  }
  *rest = body;
}

std::optional<ElementwiseNest> MatchElementwiseNest(const Stmt& body, const Buffer& out) {
  ElementwiseNest nest;
  nest.out = out;
  Stmt rest;
  SplitLeadingChecks(body, &nest.checks, &rest);
  std::vector<const tir::ForNode*> loops;
  std::vector<const tir::VarNode*> bound;  // loop and let variables, outermost first
  Stmt at = rest;
  while (true) {
    if (const auto* loop = at.as<tir::ForNode>()) {
      const int64_t* min = tir::AsConstInt(loop->min);
      if (min == nullptr || *min != 0) return std::nullopt;
      loops.push_back(loop);
      bound.push_back(loop->loop_var.get());
      at = loop->body;
    } else if (const auto* let = at.as<tir::LetStmtNode>()) {
      // A flattened loop split back into indices (let i0 = i // (h * 16)).
      bound.push_back(let->var.get());
      at = let->body;
    } else {
      break;
    }
  }
  const auto* store = at.as<tir::BufferStoreNode>();
  if (store == nullptr || store->buffer != out || LoadsBuffer(store->value, out)) return std::nullopt;
  const size_t rank = out->shape.size();
  std::vector<const tir::VarNode*> loop_vars;
  for (const tir::ForNode* loop : loops) loop_vars.push_back(loop->loop_var.get());
  for (size_t d = 0; d < rank; ++d) nest.position.emplace_back("p" + std::to_string(d));

  // Every index a distinct loop or let variable: the value is a function of the
  // position alone once they are replaced (and must mention no other).
  // A dimension of extent 1 may be stored at index 0 without a loop (a
  // reshape to (1, s, 3072) loops over s and 3072 only).
  std::map<const tir::VarNode*, PrimExpr> to_position;
  std::vector<size_t> looped_dims;  // the dimensions indexed by a variable
  bool plain = store->indices.size() == rank;
  for (size_t d = 0; plain && d < rank; ++d) {
    const int64_t* constant = tir::AsConstInt(store->indices[d]);
    if (constant != nullptr && *constant == 0 && analysis::ProveDimEqual(out->shape[d], PrimExpr(1))) continue;
    const auto* v = store->indices[d].as<tir::VarNode>();
    plain = v != nullptr && std::find(bound.begin(), bound.end(), v) != bound.end() && to_position.count(v) == 0;
    if (plain) {
      to_position[v] = nest.position[d];
      looped_dims.push_back(d);
    }
  }
  if (plain) {
    // A perfect nest must span the shape; a flattened one is trusted to.
    if (loops.size() == looped_dims.size() && bound.size() == looped_dims.size()) {
      for (size_t i = 0; i < loops.size(); ++i) {
        if (!analysis::ProveDimEqual(loops[i]->extent, out->shape[looped_dims[i]])) return std::nullopt;
      }
    }
    nest.value = tir::Substitute(store->value, [&](const tir::VarNode* v) -> PrimExpr {
      auto it = to_position.find(v);
      return it == to_position.end() ? PrimExpr() : it->second;
    });
    if (Mentions(nest.value, bound)) return std::nullopt;
    return nest;
  }
  // The rank-1 baseline schedule: for outer, for inner, Out[outer * C + inner].
  if (rank == 1 && loops.size() == 2 && bound.size() == 2) {
    const auto* add = store->indices[0].as<tir::BinaryOpNode>();
    if (add == nullptr || add->kind != tir::PrimExprKind::kAdd || add->b.get() != loop_vars[1]) return std::nullopt;
    const auto* mul = add->a.as<tir::BinaryOpNode>();
    if (mul == nullptr || mul->kind != tir::PrimExprKind::kMul || mul->a.get() != loop_vars[0]) return std::nullopt;
    const int64_t* chunk = tir::AsConstInt(mul->b);
    if (chunk == nullptr || *chunk <= 0) return std::nullopt;
    const PrimExpr chunks = tir::FloorDiv(out->shape[0] + (*chunk - 1), PrimExpr(*chunk));
    if (!analysis::ProveDimEqual(loops[0]->extent, chunks)) return std::nullopt;
    ExprReplacer abstract(store->indices[0], nest.position[0]);
    nest.value = abstract.MutateExpr(store->value);
    // The value must depend on the loop variables only through the index.
    if (Mentions(nest.value, loop_vars)) return std::nullopt;
    return nest;
  }
  return std::nullopt;
}

bool LoadsBuffer(const PrimExpr& expr, const Buffer& buffer) {
  BufferLoadFinder finder(buffer);
  finder.VisitExpr(expr);
  return finder.found;
}

bool LoadsBuffer(const Stmt& stmt, const Buffer& buffer) {
  BufferLoadFinder finder(buffer);
  finder.VisitStmt(stmt);
  return finder.found;
}

bool LoadsOnlyAt(const PrimExpr& expr, const Buffer& buffer, const std::vector<tir::Var>& index) {
  LoadIndexChecker checker(buffer, index);
  checker.VisitExpr(expr);
  return checker.ok;
}

Stmt InlineLoads(const Stmt& stmt, const ElementwiseNest& producer) {
  LoadInliner inliner(producer);
  return inliner.MutateStmt(stmt);
}

PrimExpr InlineLoads(const PrimExpr& expr, const ElementwiseNest& producer) {
  LoadInliner inliner(producer);
  return inliner.MutateExpr(expr);
}

Stmt InlineIntoStores(const Stmt& stmt, const Buffer& input, const ElementwiseNest& epilogue) {
  StoreInliner inliner(input, epilogue);
  return inliner.MutateStmt(stmt);
}

}  // namespace strata::transform
