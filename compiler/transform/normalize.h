// Normalize: struct info (shape) inference for graph functions.
//
// Every binding is rebuilt with the struct info inferred from its value: a new
// Var carrying it, every use remapped. An annotation written by the user may be
// less precise than what is inferred; one that contradicts it, or claims more
// than can be proven, is an error naming the function, the binding and both
// struct infos (use match_cast to assert a fact at run time). Symbolic shapes are
// kept in the simplifier's canonical form. call_tir is validated against the
// tensor program it calls (arity, buffer ranks and dtypes).
//
// graph::Normalizer is the mutator behind the pass. Lowering passes derive from
// it: they override RewriteBinding, build new nodes from normalized parts and
// Emit them, and get struct info on everything they produce for free.
#pragma once

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "compiler/analysis/graph_util.h"
#include "compiler/ir/graph_visitor.h"
#include "compiler/ir/module.h"
#include "support/status.h"

namespace strata::graph {

class Normalizer : public ExprMutator {
 public:
  // Calls are resolved against `module` (callee signatures, tensor programs).
  // The module must outlive the normalizer; passes may add functions to it.
  explicit Normalizer(const ir::IRModule* module) : module_(module) {}

  // `func` rebuilt with inferred struct info; errors name `name` and the binding.
  StatusOr<Function> NormalizeFunction(const std::string& name, const Function& func);
  // Called by RewriteGraphFunctions with each function before it is rewritten:
  // where a pass analyzes the whole function first (liveness, placement).
  virtual void PrepareFunction(const std::string& name, const Function& func) {}

 protected:
  // ---- Per-function driver pieces, for passes that add a prologue.
  // Resets the per-function state and returns the (possibly re-typed) params.
  std::vector<Var> BeginFunction(const std::string& name, const Function& func);
  // Checks the body against the declared return struct info and builds the function.
  StatusOr<Function> FinishFunction(const Function& func, std::vector<Var> params, Expr body);

  // ---- Hooks for lowering passes.
  // Rewrites one binding of the block being built. The default normalizes the
  // value and re-binds it (EmitBinding). Extra bindings may be Emitted first.
  virtual void RewriteBinding(const Binding& binding);
  // Binds `value` (already normalized) to the var of `original`: a new Var with
  // the inferred struct info, checked against the original annotation.
  void EmitBinding(const Binding& original, const Expr& value);
  // Binds `value` (children normalized) to a fresh var named after `name_hint`
  // in the block being built, and returns the var.
  Var Emit(const std::string& name_hint, const Expr& value);
  // Infers the struct info of a node whose children are normalized and returns
  // the node carrying it.
  Expr Annotate(const Expr& expr);
  // Redirects Emit to `target` (the bindings of a block being built) and returns
  // the previous target; used to emit a prologue before the body.
  std::vector<Binding>* SetEmitTarget(std::vector<Binding>* target) {
    std::swap(target, emit_target_);
    return target;
  }
  // Mutates one branch of an if in its own scope.
  virtual Expr MutateBranch(const Expr& branch);

  // Records the first error, prefixed with the function and binding.
  void Fail(const std::string& message);
  // Where the binding being rewritten came from (null outside bindings); bindings
  // a pass makes while rewriting it carry the same location.
  const std::shared_ptr<const SourceLocation>& binding_location() const { return binding_location_; }
  bool failed() const { return !error_.ok(); }
  const std::string& function_name() const { return function_name_; }
  const std::string& binding_name() const { return binding_name_; }
  bool in_dataflow_block() const { return in_dataflow_; }
  std::string FreshName(const std::string& hint) { return names_.Fresh(hint); }
  const ir::IRModule* module() const { return module_; }
  // Symbolic variables bound so far (by parameters and match_cast).
  bool IsSymbolDefined(const tir::VarNode* var) const { return defined_symbols_.count(var) != 0; }
  void DefineSymbols(const StructInfo& sinfo);

  Expr MutateVar(const Expr& self, const VarNode* op) override;
  Expr MutateShapeExpr(const Expr& self, const ShapeExprNode* op) override;
  Expr MutateTuple(const Expr& self, const TupleNode* op) override;
  Expr MutateTupleGetItem(const Expr& self, const TupleGetItemNode* op) override;
  Expr MutateCall(const Expr& self, const CallNode* op) override;
  Expr MutateIf(const Expr& self, const IfNode* op) override;
  Expr MutateSeqExpr(const Expr& self, const SeqExprNode* op) override;
  Expr MutateFunction(const Expr& self, const FunctionNode* op) override;
  void MutateBindingBlock(const BindingBlock& block, std::vector<BindingBlock>* out) override;
  void MutateBinding(const Binding& binding, std::vector<Binding>* out) final;

 private:
  StructInfo InferStructInfo(const Expr& expr);
  StructInfo InferCall(const CallNode* call);
  StructInfo InferGraphCall(const std::string& callee_name, const FunctionNode& callee, const CallNode* call);
  StructInfo InferKernelCall(const std::string& callee_name, const tir::PrimFuncNode& callee, const CallNode* call);
  void ValidateCallTIR(const CallNode* call);

  const ir::IRModule* module_;
  std::string function_name_;
  std::string binding_name_;
  // Where the binding being rewritten was written; errors and emitted bindings carry it.
  std::shared_ptr<const SourceLocation> binding_location_;
  std::vector<Binding>* emit_target_ = nullptr;
  bool in_dataflow_ = false;
  std::set<const tir::VarNode*> defined_symbols_;
  analysis::NameSupply names_;
  Status error_;
};

}  // namespace strata::graph

namespace strata::transform {

// Runs `mutator` (built over `*module`) on every graph function of the module in
// order, replacing each with its rewritten form, so a caller sees the rewritten
// signatures of the functions before it. Functions the mutator adds (generated
// kernels) are not visited.
Status RewriteGraphFunctions(graph::Normalizer& mutator, ir::IRModule* module);

// For passes that rewrite only some functions: `rewrite` runs on every graph
// function in order and returns its new form, or nullopt to leave it (and
// its handle) as it was. Returns whether any function changed.
using FunctionRewrite =
    std::function<StatusOr<std::optional<graph::Function>>(const std::string& name, const graph::Function& func)>;
StatusOr<bool> RewriteChangedGraphFunctions(ir::IRModule* module, const FunctionRewrite& rewrite);

// The Normalize pass: every graph function normalized; tensor programs untouched.
StatusOr<ir::IRModule> Normalize(ir::IRModule module);

}  // namespace strata::transform
