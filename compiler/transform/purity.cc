// Purity of graph-level values (see purity.h).
#include "compiler/transform/purity.h"

#include <algorithm>
#include <vector>

#include "compiler/analysis/graph_util.h"
#include "compiler/analysis/struct_info_util.h"
#include "compiler/op/op_registry.h"

namespace strata::transform {

using namespace graph;  // NOLINT: a graph-level analysis

bool PurityAnalysis::IsPure(const Expr& value) {
  switch (value->kind) {
    case ExprKind::kVar:
    case ExprKind::kGlobalVar:
    case ExprKind::kExternFunc:
    case ExprKind::kOp:
    case ExprKind::kConstant:
    case ExprKind::kShapeExpr:
    case ExprKind::kPrimValue:
    case ExprKind::kStringImm:
    case ExprKind::kDataTypeImm:
    case ExprKind::kFunction: return true;
    case ExprKind::kTuple: {
      const auto* t = value.as<TupleNode>();
      return std::all_of(t->fields.begin(), t->fields.end(), [&](const Expr& f) { return IsPure(f); });
    }
    case ExprKind::kTupleGetItem: return IsPure(value.as<TupleGetItemNode>()->tuple);
    case ExprKind::kIf: {
      const auto* i = value.as<IfNode>();
      return IsPure(i->condition) && IsPure(i->then_branch) && IsPure(i->else_branch);
    }
    case ExprKind::kSeqExpr: {
      const auto* seq = value.as<SeqExprNode>();
      for (const BindingBlock& block : seq->blocks) {
        for (const Binding& b : block.bindings) {
          if (!IsRemovable(b)) return false;
        }
      }
      return IsPure(seq->body);
    }
    case ExprKind::kCall: break;
  }
  const auto* call = value.as<CallNode>();
  for (const Expr& arg : call->args) {
    if (!IsPure(arg)) return false;
  }
  if (const auto* op = call->op.as<OpNode>()) {
    if (op->name == ops::kCallTIR || op->name == ops::kCallDPSPacked || op->name == ops::kShapeOf) return true;
    if (op->name == ops::kCallPacked) return false;
    return op::FindOp(op->name) != nullptr;
  }
  if (const auto* global = call->op.as<GlobalVarNode>()) {
    // A tensor program called directly writes its destination argument.
    const ir::BaseFunc* callee = module_->Lookup(global->name);
    return callee != nullptr && std::holds_alternative<Function>(*callee) && IsPureFunction(global->name);
  }
  return false;  // an extern function or a variable: unknown effects
}

bool PurityAnalysis::IsRemovable(const Binding& binding) {
  if (binding.kind == BindingKind::kVarBinding) return IsPure(binding.value);
  if (!IsPure(binding.value)) return false;
  // match_cast is a check: removable only when it provably succeeds and defines
  // no symbolic variable the value's struct info does not already mention.
  const StructInfo& known = binding.value->struct_info;
  if (!known.defined() || !binding.pattern.defined()) return false;
  if (analysis::CheckBaseOf(binding.pattern, known) != analysis::BaseCheck::kPass) return false;
  std::vector<tir::Var> pattern_vars, known_vars;
  analysis::CollectVars(binding.pattern, &pattern_vars);
  analysis::CollectVars(known, &known_vars);
  for (const tir::Var& v : pattern_vars) {
    if (std::none_of(known_vars.begin(), known_vars.end(), [&](const tir::Var& k) { return k.get() == v.get(); })) {
      return false;
    }
  }
  return true;
}

bool PurityAnalysis::IsPureFunction(const std::string& name) {
  auto it = functions_.find(name);
  if (it != functions_.end()) return it->second;
  // Until the body is known, a (mutually) recursive call is assumed impure.
  functions_[name] = false;
  const bool pure = IsPure(module_->GetGraphFunction(name)->body);
  functions_[name] = pure;
  return pure;
}

}  // namespace strata::transform
