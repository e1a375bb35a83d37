// EliminateCommonSubexpr: repeated pure values computed once (see eliminate_common_subexpr.h).
#include "compiler/transform/eliminate_common_subexpr.h"

#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ir/structural_equal.h"
#include "compiler/transform/normalize.h"
#include "compiler/transform/pass.h"
#include "compiler/transform/purity.h"

namespace strata::transform {
namespace {

using namespace graph;  // NOLINT: a graph-level pass

// A cheap key that structurally equal values share: the callee and the identity
// of each argument (a variable by node, a constant by dtype and size).
void AppendKey(const Expr& e, std::ostream& out) {
  switch (e->kind) {
    case ExprKind::kVar: out << 'v' << e.get(); return;
    case ExprKind::kOp: out << 'o' << e.as<OpNode>()->name; return;
    case ExprKind::kGlobalVar: out << 'g' << e.as<GlobalVarNode>()->name; return;
    case ExprKind::kConstant: {
      const auto* c = e.as<ConstantNode>();
      out << 'c' << c->data->dtype.bits() << ':' << c->data->bytes.size();
      return;
    }
    case ExprKind::kTuple:
      out << '(';
      for (const Expr& f : e.as<TupleNode>()->fields) {
        AppendKey(f, out);
        out << ',';
      }
      out << ')';
      return;
    case ExprKind::kTupleGetItem:
      AppendKey(e.as<TupleGetItemNode>()->tuple, out);
      out << '[' << e.as<TupleGetItemNode>()->index << ']';
      return;
    case ExprKind::kCall: {
      const auto* call = e.as<CallNode>();
      AppendKey(call->op, out);
      out << '(';
      for (const Expr& a : call->args) {
        AppendKey(a, out);
        out << ',';
      }
      out << ')';
      return;
    }
    default: out << 'k' << static_cast<int>(e->kind); return;
  }
}

class CommonSubexprEliminator : public Normalizer {
 public:
  explicit CommonSubexprEliminator(const ir::IRModule* module) : Normalizer(module), purity_(module) {}

  bool changed() const { return changed_; }

 protected:
  void MutateBindingBlock(const BindingBlock& block, std::vector<BindingBlock>* out) override {
    Table saved = std::move(table_);
    table_.clear();
    Normalizer::MutateBindingBlock(block, out);
    table_ = std::move(saved);
  }

  void RewriteBinding(const Binding& binding) override {
    Expr value = MutateExpr(binding.value);
    if (failed()) return;
    const bool candidate = binding.kind == BindingKind::kVarBinding &&
                           (value.as<CallNode>() || value.as<TupleNode>() || value.as<TupleGetItemNode>());
    if (!purity_.IsPure(value)) {
      table_.clear();  // it may write into a tensor that an earlier value read
      EmitBinding(binding, value);
      return;
    }
    if (!candidate) {
      EmitBinding(binding, value);
      return;
    }
    std::ostringstream key_text;
    AppendKey(value, key_text);
    std::vector<std::pair<Expr, Var>>& bucket = table_[key_text.str()];
    for (const auto& [earlier, var] : bucket) {
      if (!ir::StructuralEqual(earlier, value)) continue;
      changed_ = true;
      if (!binding.var->is_dataflow && var->is_dataflow) {
        EmitBinding(binding, var);  // a block output must not name a dataflow variable
      } else {
        var_remap_[binding.var.get()] = var;
      }
      return;
    }
    EmitBinding(binding, value);
    bucket.emplace_back(value, var_remap_.at(binding.var.get()));
  }

 private:
  using Table = std::map<std::string, std::vector<std::pair<Expr, Var>>>;
  PurityAnalysis purity_;
  Table table_;
  bool changed_ = false;
};

}  // namespace

StatusOr<ir::IRModule> EliminateCommonSubexpr(ir::IRModule module) {
  std::vector<std::string> names;
  for (const auto& [name, func] : module.functions()) {
    if (std::holds_alternative<Function>(func)) names.push_back(name);
  }
  for (const std::string& name : names) {
    Function func = module.GetGraphFunction(name);
    CommonSubexprEliminator eliminator(&module);
    STRATA_ASSIGN_OR_RETURN(Function rewritten, eliminator.NormalizeFunction(name, func));
    if (eliminator.changed()) module.Add(name, std::move(rewritten));  // else keep the original handles
  }
  return module;
}

STRATA_REGISTER_PASS(EliminateCommonSubexpr, EliminateCommonSubexpr)

}  // namespace strata::transform
