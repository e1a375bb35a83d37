// KernelBuilder: what an operator's legalization uses to write its default
// tensor program.
//
// The program gets its own symbolic variables. Each input buffer's shape is the
// graph argument's shape with every graph variable replaced by a program
// variable of the same name, bound from the tensor at the call (a dimension that
// is an expression of variables no plain dimension binds gets a fresh variable
// of its own). Output shapes are written in the same variables; a graph variable
// that no input binds (the n of zeros(shape(n))) becomes a trailing scalar
// parameter, passed by call_tir's tir_vars. The kernel entry checks every
// dimension against these expressions at run time.
//
// Loop helpers give every default kernel the same baseline schedule: outer loop
// parallel, innermost loop vectorized.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ir/tir.h"
#include "support/status.h"

namespace strata::op {

using tir::PrimExpr;

class KernelBuilder {
 public:
  explicit KernelBuilder(std::string op_name) : op_name_(std::move(op_name)) {}

  // A buffer parameter for the graph tensor `arg` (its struct info must have a
  // known shape), appended to the call_tir arguments. `what` names the argument
  // in errors ("x", "field 1 of inputs").
  StatusOr<tir::Buffer> Input(const graph::Expr& arg, const std::string& buffer_name, const std::string& what);
  // An output buffer for a result tensor of struct info `sinfo` (known shape).
  // Outputs come after every input.
  StatusOr<tir::Buffer> Output(const graph::StructInfo& sinfo, const std::string& buffer_name);
  // A local (scratch) buffer; shape already in program variables.
  static tir::Buffer Local(const std::string& name, DataType dtype, std::vector<PrimExpr> shape);

  // The program's expression for a graph-level dimension (after the inputs that
  // bind its variables are declared); unbound variables become scalar parameters.
  PrimExpr Dim(const PrimExpr& graph_dim);

  // A fresh loop variable.
  tir::Var LoopVar(const std::string& name) { return tir::Var(name); }

  // Baseline schedule: out[idx] = value(idx) over `shape`, innermost vectorized.
  // Parallel: a rank-1 loop in chunks, the first dimension of rank 2, the first
  // two of rank 3 and all but the last two beyond, flattened into one loop
  // whose indices are let-bound (MatchElementwiseNest reads such nests).
  tir::Stmt Elementwise(const std::vector<PrimExpr>& shape,
                        const std::function<tir::Stmt(const std::vector<PrimExpr>& index)>& body);

  // ---- Read by LegalizeOps.
  const std::vector<graph::Expr>& call_args() const { return call_args_; }
  // The struct info of the call_tir result: the single output, or a tuple.
  graph::StructInfo OutputStructInfo() const;
  // Graph-level expressions for the scalar parameters (call_tir tir_vars).
  const std::vector<PrimExpr>& tir_var_args() const { return tir_var_args_; }
  tir::PrimFunc Finish(tir::Stmt body, ir::Attrs attrs) const;
  const std::string& op_name() const { return op_name_; }

 private:
  PrimExpr MapDim(const PrimExpr& graph_dim, bool bind_fresh);

  std::string op_name_;
  std::vector<tir::PrimFuncParam> inputs_, outputs_, scalars_;
  std::vector<graph::Expr> call_args_;
  std::vector<graph::StructInfo> output_sinfo_;
  std::vector<PrimExpr> tir_var_args_;
  // Graph variable (or compound dimension) -> program expression.
  std::vector<std::pair<PrimExpr, PrimExpr>> dims_;
};

// ---- Broadcasting inside kernels (numpy rules, right-aligned).

// Indices into a tensor of shape `dims` for the output position `out_index` of a
// tensor of shape `out_dims`: an equal dim is indexed directly, a constant 1 at
// 0, and any other dim with select(dim == 1, 0, i) (BroadcastChecks guards it).
std::vector<PrimExpr> BroadcastIndex(const std::vector<PrimExpr>& dims, const std::vector<PrimExpr>& out_dims,
                                     const std::vector<PrimExpr>& out_index);
// Asserts that every dim of `dims` that broadcasts only at run time is 1 or the
// output's: "<what> dimension 1 must be 1 or 8 to broadcast" (the kernel adds
// its own name in front).
void BroadcastChecks(const std::string& what, const std::vector<PrimExpr>& dims, const std::vector<PrimExpr>& out_dims,
                     std::vector<tir::Stmt>* checks);

// Index `at` of an integer `indices` buffer, as i64.
PrimExpr IndexAsI64(const tir::Buffer& indices, const std::vector<PrimExpr>& at);
// A loop nest of its own over `indices` asserting that each lies in [-extent,
// extent), so that a gather after it stays free of branches: "argument
// 'indices' holds an index out of range for <range_of>; indices must lie in
// [-extent, extent)".
tir::Stmt CheckIndicesInRange(KernelBuilder& b, const tir::Buffer& indices, const PrimExpr& extent,
                              const std::string& range_of);

}  // namespace strata::op
