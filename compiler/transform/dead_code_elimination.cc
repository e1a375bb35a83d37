// DeadCodeElimination: unused bindings without effects removed (see dead_code_elimination.h).
#include "compiler/transform/dead_code_elimination.h"

#include <set>
#include <string>
#include <vector>

#include "compiler/analysis/graph_util.h"
#include "compiler/transform/normalize.h"
#include "compiler/transform/pass.h"
#include "compiler/transform/purity.h"

namespace strata::transform {
namespace {

using namespace graph;  // NOLINT: a graph-level pass

// Backward liveness over one function: the bindings that may be removed.
class Liveness {
 public:
  explicit Liveness(PurityAnalysis* purity) : purity_(purity) {}

  std::set<const VarNode*> DeadBindings(const FunctionNode& func) {
    live_.clear();
    dead_.clear();
    Use(func.body);
    return dead_;
  }

 private:
  void Use(const Expr& expr) {
    switch (expr->kind) {
      case ExprKind::kVar: live_.insert(expr.as<VarNode>()); return;
      case ExprKind::kTuple:
        for (const Expr& f : expr.as<TupleNode>()->fields) Use(f);
        return;
      case ExprKind::kTupleGetItem: Use(expr.as<TupleGetItemNode>()->tuple); return;
      case ExprKind::kCall: {
        const auto* call = expr.as<CallNode>();
        Use(call->op);
        for (const Expr& a : call->args) Use(a);
        return;
      }
      case ExprKind::kIf: {
        const auto* i = expr.as<IfNode>();
        Use(i->condition);
        Use(i->then_branch);
        Use(i->else_branch);
        return;
      }
      case ExprKind::kSeqExpr: {
        const auto* seq = expr.as<SeqExprNode>();
        Use(seq->body);
        for (auto block = seq->blocks.rbegin(); block != seq->blocks.rend(); ++block) {
          for (auto b = block->bindings.rbegin(); b != block->bindings.rend(); ++b) {
            if (live_.count(b->var.get()) || !purity_->IsRemovable(*b)) {
              Use(b->value);
            } else {
              dead_.insert(b->var.get());
            }
          }
        }
        return;
      }
      case ExprKind::kFunction:
        for (const VarNode* v : analysis::VarsUsedIn(expr)) live_.insert(v);
        return;
      default: return;  // leaves without variables
    }
  }

  PurityAnalysis* purity_;
  std::set<const VarNode*> live_, dead_;
};

class DeadBindingRemover : public Normalizer {
 public:
  DeadBindingRemover(const ir::IRModule* module, std::set<const VarNode*> dead)
      : Normalizer(module), dead_(std::move(dead)) {}

 protected:
  void RewriteBinding(const Binding& binding) override {
    if (dead_.count(binding.var.get())) return;
    Normalizer::RewriteBinding(binding);
  }

 private:
  std::set<const VarNode*> dead_;
};

}  // namespace

StatusOr<ir::IRModule> DeadCodeElimination(ir::IRModule module) {
  std::vector<std::string> names;
  for (const auto& [name, func] : module.functions()) {
    if (std::holds_alternative<Function>(func)) names.push_back(name);
  }
  PurityAnalysis purity(&module);
  for (const std::string& name : names) {
    Function func = module.GetGraphFunction(name);
    std::set<const VarNode*> dead = Liveness(&purity).DeadBindings(*func);
    if (dead.empty()) continue;  // unchanged functions keep their handles
    DeadBindingRemover remover(&module, std::move(dead));
    STRATA_ASSIGN_OR_RETURN(Function rewritten, remover.NormalizeFunction(name, func));
    module.Add(name, std::move(rewritten));
  }
  return module;
}

STRATA_REGISTER_PASS(DeadCodeElimination, DeadCodeElimination)

}  // namespace strata::transform
