// KillAfterLastUse: kill(x) after the last reader of x (see kill_after_last_use.h).
#include "compiler/backend/vm/kill_after_last_use.h"

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "compiler/analysis/graph_util.h"
#include "compiler/transform/normalize.h"
#include "compiler/transform/pass.h"

namespace strata::backend {

using namespace graph;  // NOLINT: a graph-level pass

namespace {

bool HoldsObject(const StructInfo& sinfo) { return !sinfo || !sinfo.as<PrimStructInfoNode>(); }

// Whether the register of a binding is one VM codegen creates for it.
bool OwnsRegister(const Expr& value) {
  switch (value->kind) {
    case ExprKind::kCall:
    case ExprKind::kTuple:
    case ExprKind::kTupleGetItem:
    case ExprKind::kIf: return true;
    default: return false;  // a var (an alias), a constant, a shape or scalar literal
  }
}

// For one function: the original vars to kill after each original binding var.
std::map<const VarNode*, std::vector<Var>> PlanKills(const FunctionNode& func) {
  std::map<const VarNode*, std::vector<Var>> kills;
  const auto* seq = func.body.as<SeqExprNode>();
  if (!seq) return kills;

  std::map<const VarNode*, const VarNode*> root;         // alias -> the var owning the register
  std::map<const VarNode*, const VarNode*> last_reader;  // root -> binding var of its last use
  std::vector<Var> candidates;                           // roots that own a register, in order
  auto root_of = [&](const VarNode* v) {
    auto it = root.find(v);
    return it == root.end() ? v : it->second;
  };
  for (const BindingBlock& block : seq->blocks) {
    for (const Binding& binding : block.bindings) {
      for (const VarNode* v : analysis::VarsUsedIn(binding.value)) last_reader[root_of(v)] = binding.var.get();
      if (const auto* alias = binding.value.as<VarNode>()) {
        root[binding.var.get()] = root_of(alias);
      } else if (OwnsRegister(binding.value) && HoldsObject(binding.var->struct_info)) {
        candidates.push_back(binding.var);
      }
    }
  }
  std::set<const VarNode*> escaping;
  for (const VarNode* v : analysis::VarsUsedIn(seq->body)) escaping.insert(root_of(v));

  for (const Var& var : candidates) {
    auto reader = last_reader.find(var.get());
    // Never read: VM codegen discards the result and gives it no register.
    if (reader == last_reader.end() || escaping.count(var.get())) continue;
    kills[reader->second].push_back(var);
  }
  return kills;
}

class KillInserter : public Normalizer {
 public:
  using Normalizer::Normalizer;

  void PrepareFunction(const std::string&, const Function& func) override { kills_ = PlanKills(*func); }

 protected:
  void RewriteBinding(const Binding& binding) override {
    Normalizer::RewriteBinding(binding);
    auto it = kills_.find(binding.var.get());
    if (it == kills_.end() || failed()) return;
    for (const Var& dead : it->second) Emit("_", CallNode::make(OpNode::Get(ops::kKill), {MutateExpr(dead)}));
  }

 private:
  std::map<const VarNode*, std::vector<Var>> kills_;
};

}  // namespace

StatusOr<ir::IRModule> KillAfterLastUse(ir::IRModule module) {
  KillInserter inserter(&module);
  STRATA_RETURN_IF_ERROR(transform::RewriteGraphFunctions(inserter, &module));
  return module;
}

STRATA_REGISTER_PASS(KillAfterLastUse, KillAfterLastUse)

}  // namespace strata::backend
