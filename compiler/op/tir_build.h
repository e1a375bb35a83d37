// Small builders for the loop nests of hand-scheduled default kernels (nn.cc,
// conv2d_nchwc.cc, nchwc_layout.cc): simplified loads, stores and loops, parallel
// loops over flattened boxes, and run-time checks of what inference could not
// prove. They live in their own namespace so that files with builders of the
// same names (linear_algebra.cc) do not clash.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ir/arith/simplify.h"
#include "compiler/ir/tir.h"
#include "compiler/op/kernel_builder.h"

namespace strata::op::build {

using tir::PrimExpr;

using tir::ForKind;
using tir::PrimExprKind;
using Index = std::vector<PrimExpr>;

inline PrimExpr S(const PrimExpr& e) { return arith::Simplify(e); }
inline PrimExpr Float(DataType dtype, double v) { return tir::FloatImm(dtype, v); }
inline PrimExpr Bin(PrimExprKind kind, PrimExpr a, PrimExpr b) { return tir::BinaryOpNode::make(kind, a, b); }
inline PrimExpr Div(PrimExpr a, PrimExpr b) { return Bin(PrimExprKind::kDiv, a, b); }
inline PrimExpr Lt(PrimExpr a, PrimExpr b) { return Bin(PrimExprKind::kLT, a, b); }
inline PrimExpr Ge(PrimExpr a, PrimExpr b) { return Bin(PrimExprKind::kGE, a, b); }
inline PrimExpr Eq(PrimExpr a, PrimExpr b) { return Bin(PrimExprKind::kEQ, a, b); }
inline PrimExpr And(PrimExpr a, PrimExpr b) { return Bin(PrimExprKind::kAnd, a, b); }
inline PrimExpr Exp(PrimExpr x) { return tir::CallNode::make(tir::Intrinsic::kExp, {x}); }
inline PrimExpr Log(PrimExpr x) { return tir::CallNode::make(tir::Intrinsic::kLog, {x}); }
inline PrimExpr Sqrt(PrimExpr x) { return tir::CallNode::make(tir::Intrinsic::kSqrt, {x}); }
inline PrimExpr CastTo(DataType dtype, PrimExpr x) { return tir::CastNode::make(dtype, x); }
inline PrimExpr CeilDiv(PrimExpr a, int64_t b) { return S(tir::FloorDiv(a + (b - 1), b)); }
inline Index Simplified(Index index) {
  for (PrimExpr& i : index) i = S(i);
  return index;
}
inline PrimExpr Load(const tir::Buffer& b, Index index) {
  return tir::BufferLoadNode::make(b, Simplified(std::move(index)));
}
inline tir::Stmt Store(const tir::Buffer& b, Index index, PrimExpr value) {
  return tir::BufferStoreNode::make(b, Simplified(std::move(index)), std::move(value));
}
inline tir::Stmt Seq(std::vector<tir::Stmt> stmts) { return tir::SeqStmtNode::make(std::move(stmts)); }
inline tir::Stmt Let(const tir::Var& var, PrimExpr value, tir::Stmt body) {
  return tir::LetStmtNode::make(var, std::move(value), std::move(body));
}
inline tir::Stmt Loop(const std::string& name, PrimExpr min, PrimExpr extent, ForKind kind,
                      const std::function<tir::Stmt(const PrimExpr&)>& body) {
  tir::Var v(name);
  return tir::ForNode::make(v, S(min), S(extent), kind, body(v));
}
inline bool IsTrue(const PrimExpr& condition) { return arith::AsConstant(condition) == 1; }
// The conjunction of the conditions that cannot be proven; true if none.
inline PrimExpr AllOf(const std::vector<PrimExpr>& conditions) {
  PrimExpr all;
  for (const PrimExpr& c : conditions) {
    if (IsTrue(c) || arith::CanProve(c)) continue;
    all = all.defined() ? And(all, c) : c;
  }
  return all.defined() ? all : tir::IntImm(DataType::Bool(), 1);
}
// A run-time check for a dimension relation the struct info could not prove.
inline void CheckAtRunTime(std::vector<tir::Stmt>* stmts, const PrimExpr& condition, const std::string& message) {
  if (!arith::CanProve(condition)) stmts->push_back(tir::AssertStmtNode::make(condition, message));
}

inline Index Concat(Index a, const Index& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// One parallel loop over the flattened box `dims` (outermost first), so that a
// leading dimension of 1 (batch 1) still spreads over the threads; the body
// gets the multi-index as named variables.
inline tir::Stmt ParallelOver(const std::string& prefix, const std::vector<PrimExpr>& dims,
                              const std::function<tir::Stmt(const Index&)>& body) {
  // Dimensions of constant extent 1 get index 0 and no loop.
  std::vector<size_t> looped;
  Index index(dims.size(), PrimExpr(0));
  for (size_t k = 0; k < dims.size(); ++k) {
    if (arith::AsConstant(dims[k]) != 1) looped.push_back(k);
  }
  if (looped.empty()) return body(index);
  if (looped.size() == 1) {
    return Loop(prefix + std::to_string(looped[0]), 0, dims[looped[0]], ForKind::kParallel, [&](const PrimExpr& i) {
      index[looped[0]] = i;
      return body(index);
    });
  }
  PrimExpr total = 1;
  for (size_t k : looped) total = total * dims[k];
  return Loop(prefix, 0, total, ForKind::kParallel, [&](const PrimExpr& flat) {
    std::vector<tir::Var> vars;
    for (size_t k : looped) {
      vars.emplace_back(prefix + std::to_string(k));
      index[k] = vars.back();
    }
    tir::Stmt stmt = body(index);
    PrimExpr inner = 1;
    for (size_t v = looped.size(); v-- > 0;) {
      PrimExpr value = tir::FloorDiv(flat, inner);
      if (v > 0) value = tir::FloorMod(value, dims[looped[v]]);
      stmt = Let(vars[v], S(value), stmt);
      inner = inner * dims[looped[v]];
    }
    return stmt;
  });
}

// Serial loops over `dims` with the innermost one of kind `last`.
inline tir::Stmt Nest(const std::string& prefix, const std::vector<PrimExpr>& dims, ForKind last,
                      const std::function<tir::Stmt(const Index&)>& body, Index index = {}) {
  if (index.size() == dims.size()) return body(index);
  const size_t k = index.size();
  return Loop(prefix + std::to_string(k), 0, dims[k], k + 1 == dims.size() ? last : ForKind::kSerial,
              [&](const PrimExpr& i) {
                Index next = index;
                next.push_back(i);
                return Nest(prefix, dims, last, body, next);
              });
}

// out[index] = body over `shape`: parallel over all but the last dimension
// (flattened), the last one vectorized.
inline tir::Stmt Pointwise(KernelBuilder& b, const std::vector<PrimExpr>& shape,
                           const std::function<tir::Stmt(const Index&)>& body) {
  if (shape.size() <= 1) return b.Elementwise(shape, body);
  const std::vector<PrimExpr> rows(shape.begin(), shape.end() - 1);
  return ParallelOver("i", rows, [&](const Index& row) {
    return Loop("j", 0, shape.back(), ForKind::kVectorized, [&](const PrimExpr& j) { return body(Concat(row, {j})); });
  });
}

}  // namespace strata::op::build
