// FoldConstants: constant-only operator calls evaluated at compile time (see fold_constants.h).
#include "compiler/transform/fold_constants.h"

#include <cstring>
#include <map>
#include <mutex>
#include <set>

#include "compiler/op/op_registry.h"
#include "compiler/transform/normalize.h"
#include "compiler/transform/pass.h"

namespace strata::transform {
namespace {

using namespace graph;  // NOLINT: a graph-level pass

// Folded values may be this much larger than their constant inputs, or this
// many bytes, whichever is more.
constexpr int64_t kMinFoldBytes = 64 * 1024;

int64_t KnownBytes(const StructInfo& sinfo) {
  const auto* t = sinfo ? sinfo.as<TensorStructInfoNode>() : nullptr;
  if (t == nullptr || !t->shape || t->dtype.is_void()) return -1;
  int64_t n = t->dtype.bytes();
  for (const PrimExpr& d : *t->shape) {
    const int64_t* c = tir::AsConstInt(d);
    if (c == nullptr) return -1;
    n *= *c;
  }
  return n;
}

class FoldCollector {
 public:
  // The bindings of `func` (top-level blocks) whose value is a registered
  // operator call on constants or already-foldable values.
  void Collect(const FunctionNode& func) {
    const auto* seq = func.body.as<SeqExprNode>();
    if (seq == nullptr) return;
    for (const BindingBlock& block : seq->blocks) {
      for (const Binding& b : block.bindings) {
        if (b.kind == BindingKind::kVarBinding && Foldable(b.value)) {
          folded_.insert(b.var.get());
          bindings_.push_back(b);
        }
      }
    }
  }

  const std::vector<Binding>& bindings() const { return bindings_; }

 private:
  // An argument known at compile time; adds its size to `bytes`.
  bool Constant(const Expr& e, int64_t* bytes) const {
    if (const auto* c = e.as<ConstantNode>()) {
      *bytes += static_cast<int64_t>(c->data->bytes.size());
      return true;
    }
    if (const auto* v = e.as<VarNode>()) {
      if (!folded_.count(v)) return false;
      *bytes += std::max<int64_t>(KnownBytes(v->struct_info), 0);
      return true;
    }
    if (const auto* t = e.as<TupleNode>()) {
      for (const Expr& f : t->fields) {
        if (!Constant(f, bytes)) return false;
      }
      return true;
    }
    if (const auto* s = e.as<ShapeExprNode>()) {
      for (const PrimExpr& d : s->values) {
        if (tir::AsConstInt(d) == nullptr) return false;
      }
      return true;
    }
    return e.as<PrimValueNode>() || e.as<DataTypeImmNode>() || e.as<StringImmNode>();
  }

  bool Foldable(const Expr& value) const {
    const auto* call = value.as<CallNode>();
    const auto* op = call ? call->op.as<OpNode>() : nullptr;
    const op::OpDef* def = op ? op::FindOp(op->name) : nullptr;
    if (def == nullptr || !def->legalize) return false;
    int64_t input_bytes = 0;
    for (const Expr& arg : call->args) {
      if (!Constant(arg, &input_bytes)) return false;
    }
    const int64_t out_bytes = KnownBytes(call->struct_info);
    return out_bytes >= 0 && out_bytes <= std::max(input_bytes, kMinFoldBytes);
  }

  std::set<const VarNode*> folded_;
  std::vector<Binding> bindings_;
};

// Replaces folded variables by their constants and drops their bindings.
class FoldedSubstituter : public ExprMutator {
 public:
  explicit FoldedSubstituter(std::map<const VarNode*, Expr> values) : values_(std::move(values)) {}

 protected:
  Expr MutateVar(const Expr& self, const VarNode* op) override {
    auto it = values_.find(op);
    return it == values_.end() ? ExprMutator::MutateVar(self, op) : it->second;
  }
  void MutateBinding(const Binding& binding, std::vector<Binding>* out) override {
    if (values_.count(binding.var.get())) return;
    ExprMutator::MutateBinding(binding, out);
  }

 private:
  std::map<const VarNode*, Expr> values_;
};

// The module that computes `bindings` (in order): @fold() returning them as a tuple.
ir::IRModule FoldModule(const std::vector<Binding>& bindings) {
  std::vector<Expr> results;
  std::vector<StructInfo> result_sinfo;
  for (const Binding& b : bindings) {
    results.push_back(b.var);
    result_sinfo.push_back(b.var->struct_info);
  }
  Expr body = SeqExprNode::make({BindingBlock{false, bindings}}, TupleNode::make(results));
  ir::IRModule module;
  module.Add("fold", std::static_pointer_cast<const FunctionNode>(
                         FunctionNode::make({}, body, TupleStructInfoNode::make(result_sinfo)).node_ptr()));
  return module;
}

}  // namespace

StatusOr<ir::IRModule> FoldConstants(ir::IRModule module, const ConstantEvaluator& evaluate) {
  STRATA_ASSIGN_OR_RETURN(module, Normalize(std::move(module)));
  std::vector<std::string> names;
  for (const auto& [name, func] : module.functions()) {
    if (std::holds_alternative<Function>(func)) names.push_back(name);
  }
  for (const std::string& name : names) {
    Function func = module.GetGraphFunction(name);
    FoldCollector collector;
    collector.Collect(*func);
    if (collector.bindings().empty()) continue;
    StatusOr<std::vector<std::shared_ptr<const HostTensor>>> values =
        evaluate(FoldModule(collector.bindings()), "fold");
    if (!values.ok()) return Status(values.status()).WithContext("@" + name + ": ");
    if (values->size() != collector.bindings().size()) {
      return ErrorStatus(StatusCode::kInternal) << "@" << name << ": the evaluator returned " << values->size()
                                                << " values for " << collector.bindings().size() << " bindings";
    }
    std::map<const VarNode*, Expr> replacements;
    for (size_t i = 0; i < values->size(); ++i) {
      replacements[collector.bindings()[i].var.get()] = ConstantNode::make((*values)[i]);
    }
    FoldedSubstituter substituter(std::move(replacements));
    Expr rewritten = substituter.MutateExpr(Expr(func));
    module.Add(name, std::static_pointer_cast<const FunctionNode>(rewritten.node_ptr()));
  }
  return Normalize(std::move(module));
}

namespace {

std::mutex& EvaluatorMutex() {
  static std::mutex mutex;
  return mutex;
}

ConstantEvaluator& Evaluator() {
  static ConstantEvaluator* evaluator = new ConstantEvaluator;  // leaked: passes may run during static destruction
  return *evaluator;
}

}  // namespace

void SetConstantEvaluator(ConstantEvaluator evaluate) {
  std::lock_guard<std::mutex> lock(EvaluatorMutex());
  Evaluator() = std::move(evaluate);
}

ConstantEvaluator RegisteredConstantEvaluator() {
  std::lock_guard<std::mutex> lock(EvaluatorMutex());
  return Evaluator();
}

STRATA_REGISTER_PASS(FoldConstants, [](ir::IRModule m) -> StatusOr<ir::IRModule> {
  ConstantEvaluator evaluate = RegisteredConstantEvaluator();
  if (!evaluate) {
    return Status::Error(
        "no constant evaluator is registered (driver::RegisterCompilerPasses registers the VM's; "
        "transform::SetConstantEvaluator sets one)");
  }
  return FoldConstants(std::move(m), evaluate);
})

}  // namespace strata::transform
