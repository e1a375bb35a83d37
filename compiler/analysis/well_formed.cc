// WellFormed: the invariants every pass may assume (see well_formed.h).
//
// One visitor walks each graph function in program order, keeping the variables
// and symbolic variables in scope; sequences (function bodies, if branches) are
// scopes, and a dataflow block's dataflow variables leave scope at its end.
#include "compiler/analysis/well_formed.h"

#include <map>
#include <set>
#include <string>

#include "compiler/analysis/graph_util.h"
#include "compiler/analysis/struct_info_util.h"
#include "compiler/ir/graph_visitor.h"

namespace strata::analysis {

using namespace graph;  // NOLINT: a graph-level checker

namespace {

class WellFormedChecker : public ExprVisitor {
 public:
  WellFormedChecker(const ir::IRModule& module, const WellFormedOptions& options)
      : module_(module), options_(options) {}

  Status CheckFunction(const std::string& name, const FunctionNode& func) {
    function_ = name;
    binding_ = nullptr;
    error_ = Status::Ok();
    vars_.clear();
    defined_once_.clear();
    left_block_.clear();
    symbols_.clear();

    for (const Var& param : func.params) {
      binding_ = nullptr;
      DefineVar(param, "parameter");
      if (options_.require_struct_info && !param->struct_info.defined()) {
        Fail("parameter '" + param->name + "' has no struct info");
      }
      std::vector<tir::Var> definable;
      CollectDefinableVars(param->struct_info, &definable);
      for (const tir::Var& v : definable) symbols_.insert(v.get());
    }
    for (const Var& param : func.params) {
      std::vector<tir::Var> used;
      CollectVars(param->struct_info, &used);
      for (const tir::Var& v : used) {
        if (symbols_.count(v.get())) continue;
        Fail("parameter '" + param->name + "' has struct info " + StructInfoText(param->struct_info) +
             ", where symbolic variable '" + v.name() +
             "' appears only inside an expression and no parameter binds it");
      }
    }
    binding_ = nullptr;
    if (options_.require_struct_info && !func.ret_struct_info.defined()) Fail("no return struct info");
    if (!func.body.as<SeqExprNode>()) Fail("the body is not a sequence of bindings");
    if (error_.ok()) VisitExpr(func.body);
    return error_;
  }

 protected:
  void VisitVar(const VarNode* op) override {
    if (vars_.count(op)) return;
    if (left_block_.count(op)) {
      Fail("dataflow variable '" + op->name + "' is used outside its dataflow block (list it after `output`)");
      return;
    }
    Fail("variable '" + op->name + "' is used before its definition");
  }

  // A GlobalVar reached here is used as a value, not called.
  void VisitGlobalVar(const GlobalVarNode* op) override {
    const ir::BaseFunc* func = module_.Lookup(op->name);
    if (!func) {
      Fail("@" + op->name + " is not a function of the module");
    } else if (std::holds_alternative<tir::PrimFunc>(*func)) {
      Fail("tensor program @" + op->name + " is used as a value; call it through call_tir");
    }
  }

  void VisitShapeExpr(const ShapeExprNode* op) override {
    for (const PrimExpr& dim : op->values) CheckSymbolsBound(dim, "shape value");
  }

  void VisitPrimValue(const PrimValueNode* op) override { CheckSymbolsBound(op->value, "scalar value"); }

  void VisitFunction(const FunctionNode* op) override { Fail("nested functions are not supported"); }

  void VisitCall(const CallNode* op) override {
    if (const auto* gv = op->op.as<GlobalVarNode>()) {
      // A graph function call, or a destination-passing tensor program call.
      if (!module_.Lookup(gv->name)) Fail("call to @" + gv->name + ", which is not a function of the module");
      for (const Expr& arg : op->args) VisitExpr(arg);
      CheckHasStructInfo(op, "call");
      return;
    }
    bool call_tir = IsOpCall(op, ops::kCallTIR);
    if (call_tir || IsOpCall(op, ops::kCallDPSPacked)) {
      const char* what = call_tir ? "call_tir" : "call_dps_packed";
      if (call_tir) CheckCallTIRCallee(op);
      for (size_t i = 1; i < op->args.size(); ++i) VisitExpr(op->args[i]);
      if (!op->sinfo_args.empty()) CheckSymbolsBound(op->sinfo_args[0], std::string("the output of ") + what);
      CheckHasStructInfo(op, what);
      return;
    }
    for (const auto& [key, value] : op->attrs) {
      if (const auto* symbolic = std::get_if<ir::SymbolicInts>(&value)) {
        for (const PrimExpr& e : symbolic->values) CheckSymbolsBound(e, "attribute '" + key + "'");
      }
    }
    ExprVisitor::VisitCall(op);
    CheckHasStructInfo(op, "call");
  }

  void VisitIf(const IfNode* op) override {
    ExprVisitor::VisitIf(op);
    CheckHasStructInfo(op, "if");
  }

  void VisitSeqExpr(const SeqExprNode* op) override {
    std::set<const VarNode*> saved_vars = vars_;
    std::set<const tir::VarNode*> saved_symbols = symbols_;
    const Binding* saved_binding = binding_;
    for (const BindingBlock& block : op->blocks) VisitBindingBlock(block);
    binding_ = saved_binding;
    VisitExpr(op->body);
    CheckHasStructInfo(op, "sequence");
    vars_ = std::move(saved_vars);
    symbols_ = std::move(saved_symbols);
  }

  void VisitBindingBlock(const BindingBlock& block) override {
    std::vector<const VarNode*> dataflow_vars;
    for (const Binding& binding : block.bindings) {
      VisitBinding(binding);
      if (!binding.var->is_dataflow) continue;
      if (!block.is_dataflow) Fail("dataflow variable '" + binding.var->name + "' is bound outside a dataflow block");
      dataflow_vars.push_back(binding.var.get());
    }
    for (const VarNode* var : dataflow_vars) {
      vars_.erase(var);
      left_block_.insert(var);
    }
  }

  void VisitBinding(const Binding& binding) override {
    binding_ = &binding;
    VisitExpr(binding.value);
    if (binding.kind == BindingKind::kMatchCast) CheckPattern(binding.pattern);
    DefineVar(binding.var, "variable");
    if (options_.require_struct_info && !binding.var->struct_info.defined()) {
      Fail("the variable has no struct info (run Normalize first)");
    }
  }

 private:
  void Fail(const std::string& message) {
    if (!error_.ok()) return;
    std::string context = "function '" + function_ + "'";
    if (binding_ != nullptr) context += ", binding '" + binding_->var->name + "'";
    error_ = Status::Error(context + ": " + message);
    if (binding_ != nullptr && binding_->location) error_ = std::move(error_).WithLocation(*binding_->location);
  }

  void DefineVar(const Var& var, const char* what) {
    if (!defined_once_.insert(var.get()).second) Fail(std::string(what) + " '" + var->name + "' is defined twice");
    vars_.insert(var.get());
  }

  void CheckHasStructInfo(const ExprNode* node, const char* what) {
    if (options_.require_struct_info && !node->struct_info.defined()) {
      Fail(std::string("a ") + what + " has no struct info (run Normalize first)");
    }
  }

  void CheckCallTIRCallee(const CallNode* op) {
    const auto* gv = op->args.empty() ? nullptr : op->args[0].as<GlobalVarNode>();
    if (!gv) {
      Fail("the callee of call_tir must be a tensor program @name");
      return;
    }
    const ir::BaseFunc* func = module_.Lookup(gv->name);
    if (!func) {
      Fail("call_tir of @" + gv->name + ", which is not a function of the module");
    } else if (!std::holds_alternative<tir::PrimFunc>(*func)) {
      Fail("call_tir of @" + gv->name + ", which is a graph function; call it directly");
    }
  }

  // A match_cast binds the plain-variable dims of its pattern; every other
  // symbolic variable in it must already be bound.
  void CheckPattern(const StructInfo& pattern) {
    std::vector<tir::Var> definable;
    CollectDefinableVars(pattern, &definable);
    for (const tir::Var& v : definable) symbols_.insert(v.get());
    std::vector<tir::Var> used;
    CollectVars(pattern, &used);
    for (const tir::Var& v : used) {
      if (symbols_.count(v.get())) continue;
      Fail("match_cast pattern " + StructInfoText(pattern) + " uses symbolic variable '" + v.name() +
           "' only inside an expression, where it cannot be bound");
    }
  }

  void CheckSymbolsBound(const PrimExpr& expr, const std::string& where) {
    std::vector<tir::Var> used;
    CollectVars(expr, &used);
    for (const tir::Var& v : used) {
      if (symbols_.count(v.get())) continue;
      Fail("symbolic variable '" + v.name() + "' in " + where + " " + DimText(expr) +
           " is used before it is bound (by a parameter's shape or a match_cast)");
    }
  }

  void CheckSymbolsBound(const StructInfo& sinfo, const std::string& where) {
    std::vector<tir::Var> used;
    CollectVars(sinfo, &used);
    for (const tir::Var& v : used) {
      if (symbols_.count(v.get())) continue;
      Fail("symbolic variable '" + v.name() + "' in " + where + " " + StructInfoText(sinfo) +
           " is used before it is bound (by a parameter's shape or a match_cast)");
    }
  }

  const ir::IRModule& module_;
  const WellFormedOptions& options_;
  std::string function_;
  const Binding* binding_ = nullptr;  // the binding being checked; null outside bindings
  Status error_;
  std::set<const VarNode*> vars_;          // in scope
  std::set<const VarNode*> defined_once_;  // ever defined in this function
  std::set<const VarNode*> left_block_;    // dataflow vars whose block has ended
  std::set<const tir::VarNode*> symbols_;  // bound symbolic variables
};

}  // namespace

Status CheckWellFormed(const ir::IRModule& module, const WellFormedOptions& options) {
  WellFormedChecker checker(module, options);
  for (const auto& [name, func] : module.functions()) {
    const auto* graph_func = std::get_if<Function>(&func);
    if (!graph_func) continue;
    STRATA_RETURN_IF_ERROR(checker.CheckFunction(name, **graph_func));
  }
  return Status::Ok();
}

StatusOr<ir::IRModule> WellFormed(ir::IRModule module) {
  STRATA_RETURN_IF_ERROR(CheckWellFormed(module));
  return module;
}

}  // namespace strata::analysis
