// Helpers shared by the graph-level passes (see graph_util.h).
#include "compiler/analysis/graph_util.h"

#include "compiler/ir/graph_visitor.h"

namespace strata::analysis {

using namespace graph;  // NOLINT: this file is all graph-level plumbing

void BoundConstants::Record(const Binding& binding) {
  if (binding.kind != BindingKind::kVarBinding) return;
  if (const auto* c = binding.value.as<ConstantNode>()) constants_[binding.var.get()] = c->data.get();
}

const HostTensor* BoundConstants::Of(const Expr& e) const {
  if (const auto* c = e.as<ConstantNode>()) return c->data.get();
  if (const auto* v = e.as<VarNode>()) {
    auto it = constants_.find(v);
    if (it != constants_.end()) return it->second;
  }
  return nullptr;
}

bool IsOpCall(const CallNode* call, const char* name) {
  const auto* op = call ? call->op.as<OpNode>() : nullptr;
  return op && op->name == name;
}

const std::string* LibraryName(const Expr& expr) {
  if (const auto* ext = expr.as<ExternFuncNode>()) return &ext->name;
  if (const auto* str = expr.as<StringImmNode>()) return &str->value;
  return nullptr;
}

bool MatchCallPacked(const CallNode* call, PackedCall* out) {
  if (!call) return false;
  if (const auto* ext = call->op.as<ExternFuncNode>()) {
    out->name = ext->name;
    out->args = call->args;
    return true;
  }
  if (!IsOpCall(call, ops::kCallPacked) || call->args.empty()) return false;
  const std::string* name = LibraryName(call->args[0]);
  if (!name) return false;
  out->name = *name;
  out->args.assign(call->args.begin() + 1, call->args.end());
  return true;
}

bool CallArguments(const CallNode* call, std::vector<Expr>* out) {
  if (!call || call->args.size() < 2) return false;
  const Expr& args = call->args[1];
  if (const auto* tuple = args.as<TupleNode>()) {
    *out = tuple->fields;
    return true;
  }
  // `(x)` parses as x itself; a tuple-typed value would be ambiguous.
  if (args->struct_info.defined() && args->struct_info.as<TupleStructInfoNode>()) return false;
  *out = {args};
  return true;
}

Expr MakeCallPacked(const std::string& name, std::vector<Expr> args, StructInfo ret) {
  // The parser's form: the call_packed op, the ExternFunc first, the result struct info.
  args.insert(args.begin(), ExternFuncNode::make(name));
  StructInfo result = ret.defined() ? std::move(ret) : ObjectStructInfoNode::make();
  return CallNode::make(OpNode::Get(ops::kCallPacked), std::move(args), {}, {std::move(result)});
}

Expr Int64Value(int64_t value) { return PrimValueNode::make(tir::IntImm(DataType::I64(), value)); }

std::string NameSupply::Fresh(const std::string& hint) {
  std::string name = hint;
  for (int i = 1; taken_.count(name); ++i) name = hint + std::to_string(i);
  taken_.insert(name);
  return name;
}

namespace {

class NameCollector : public ExprVisitor {
 public:
  explicit NameCollector(NameSupply* names) : names_(names) {}

 protected:
  void VisitVarDef(const Var& var) override { names_->Reserve(var->name); }

 private:
  NameSupply* names_;
};

class VarUseCollector : public ExprVisitor {
 public:
  std::vector<const VarNode*> vars;

 protected:
  void VisitVar(const VarNode* op) override { vars.push_back(op); }
};

}  // namespace

std::vector<const VarNode*> VarsUsedIn(const Expr& expr) {
  VarUseCollector collector;
  collector.VisitExpr(expr);
  return std::move(collector.vars);
}

void ReserveNames(const FunctionNode& func, NameSupply* names) {
  for (const Var& p : func.params) names->Reserve(p->name);
  NameCollector collector(names);
  collector.VisitExpr(func.body);
}

}  // namespace strata::analysis
