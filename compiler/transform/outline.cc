// Outlining groups of bindings into functions (see outline.h).
#include "compiler/transform/outline.h"

#include <map>
#include <queue>
#include <utility>

#include "compiler/analysis/struct_info_util.h"
#include "compiler/ir/graph_visitor.h"
#include "compiler/transform/normalize.h"

namespace strata::transform {

using namespace graph;  // NOLINT: a graph-level rewrite

namespace {

class VarCollector : public ExprVisitor {
 public:
  void VisitVar(const VarNode* op) override { used.insert(op); }
  std::set<const VarNode*> used;
};

// Variables and constants an expression reads, in evaluation order.
class InputCollector : public ExprVisitor {
 public:
  void VisitExpr(const Expr& expr) override {
    if (expr->kind == ExprKind::kVar || expr->kind == ExprKind::kConstant) {
      order.push_back(expr);
      return;
    }
    ExprVisitor::VisitExpr(expr);
  }
  std::vector<Expr> order;
};

// The symbolic variables a group's bindings name in their values (shape
// expressions, prim values, call_tir output struct info, symbolic attributes
// such as strided_slice's end=[t], match_cast patterns):
// the function needs each either from a parameter's shape or as a shape argument.
class SymbolicVarCollector : public ExprVisitor {
 public:
  void VisitShapeExpr(const ShapeExprNode* op) override {
    for (const tir::PrimExpr& v : op->values) analysis::CollectVars(v, &vars);
  }
  void VisitPrimValue(const PrimValueNode* op) override { analysis::CollectVars(op->value, &vars); }
  void VisitCall(const CallNode* op) override {
    for (const StructInfo& s : op->sinfo_args) analysis::CollectVars(s, &vars);
    for (const auto& [key, value] : op->attrs) {
      if (const auto* symbolic = std::get_if<ir::SymbolicInts>(&value)) {
        for (const tir::PrimExpr& e : symbolic->values) analysis::CollectVars(e, &vars);
      }
    }
    ExprVisitor::VisitCall(op);
  }
  void VisitBinding(const Binding& binding) override {
    if (binding.pattern) analysis::CollectVars(binding.pattern, &vars);
    ExprVisitor::VisitBinding(binding);
  }
  std::vector<tir::Var> vars;
};

// Rewrites a member binding's value onto the outlined function's variables.
class Remapper : public ExprMutator {
 public:
  void MapVar(const VarNode* from, Var to) { var_remap_[from] = std::move(to); }
  void MapConstant(const ConstantNode* from, Var to) { constants_[from] = std::move(to); }

 protected:
  Expr MutateConstant(const Expr& self, const ConstantNode* op) override {
    auto it = constants_.find(op);
    return it == constants_.end() ? self : it->second;
  }

 private:
  std::map<const ConstantNode*, Var> constants_;
};

// Gives every composite dimension of the outlined function's signature, such as
// `h // 2`, a variable of its own: a parameter can only define plain variables,
// and the caller binds the new variable to the expression at each call, so the
// result keeps its precise shape on both sides.
class SignatureDims {
 public:
  explicit SignatureDims(std::set<std::string> taken) : taken_(std::move(taken)) {}

  StructInfo Rewrite(const StructInfo& sinfo) {
    if (!sinfo) return sinfo;
    if (const auto* t = sinfo.as<TensorStructInfoNode>()) {
      if (!t->shape) return sinfo;
      return TensorStructInfoNode::make(Dims(*t->shape), t->dtype);
    }
    if (const auto* s = sinfo.as<ShapeStructInfoNode>()) {
      if (!s->values) return sinfo;
      return ShapeStructInfoNode::make(Dims(*s->values));
    }
    if (const auto* tuple = sinfo.as<TupleStructInfoNode>()) {
      std::vector<StructInfo> fields;
      for (const StructInfo& f : tuple->fields) fields.push_back(Rewrite(f));
      return TupleStructInfoNode::make(std::move(fields));
    }
    return sinfo;
  }

 private:
  std::vector<tir::PrimExpr> Dims(const std::vector<tir::PrimExpr>& dims) {
    std::vector<tir::PrimExpr> out;
    for (const tir::PrimExpr& d : dims) out.push_back(Dim(d));
    return out;
  }
  tir::PrimExpr Dim(const tir::PrimExpr& dim) {
    if (dim.as<tir::IntImmNode>() != nullptr || dim.as<tir::VarNode>() != nullptr) return dim;
    for (const auto& [expr, var] : replaced_) {
      if (analysis::ProveDimEqual(expr, dim)) return var;
    }
    std::string name;
    do {
      name = "s" + std::to_string(next_++);
    } while (!taken_.insert(name).second);
    tir::Var var(name, dim.dtype());
    replaced_.emplace_back(dim, var);
    return var;
  }

  std::set<std::string> taken_;
  std::vector<std::pair<tir::PrimExpr, tir::Var>> replaced_;
  int next_ = 0;
};

std::set<std::string> SymbolNames(const std::vector<Expr>& values) {
  std::vector<tir::Var> vars;
  for (const Expr& v : values) {
    if (v->struct_info) analysis::CollectVars(v->struct_info, &vars);
  }
  std::set<std::string> names;
  for (const tir::Var& v : vars) names.insert(v->name);
  return names;
}

// A unit of the rewritten block: one kept binding, or the bindings of one call.
struct Unit {
  size_t priority = 0;
  std::vector<Binding> bindings;
  std::set<const VarNode*> reads;
  std::set<const VarNode*> defines;
};

std::vector<Binding> StableTopologicalOrder(std::vector<Unit> units) {
  std::map<const VarNode*, size_t> definer;
  for (size_t u = 0; u < units.size(); ++u) {
    for (const VarNode* v : units[u].defines) definer[v] = u;
  }
  std::vector<std::vector<size_t>> dependents(units.size());
  std::vector<size_t> pending(units.size(), 0);
  for (size_t u = 0; u < units.size(); ++u) {
    std::set<size_t> deps;
    for (const VarNode* v : units[u].reads) {
      auto it = definer.find(v);
      if (it != definer.end() && it->second != u) deps.insert(it->second);
    }
    pending[u] = deps.size();
    for (size_t d : deps) dependents[d].push_back(u);
  }
  using Entry = std::pair<size_t, size_t>;  // (priority, unit)
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> ready;
  for (size_t u = 0; u < units.size(); ++u) {
    if (pending[u] == 0) ready.emplace(units[u].priority, u);
  }
  std::vector<Binding> out;
  while (!ready.empty()) {
    size_t u = ready.top().second;
    ready.pop();
    for (Binding& b : units[u].bindings) out.push_back(std::move(b));
    for (size_t d : dependents[u]) {
      if (--pending[d] == 0) ready.emplace(units[d].priority, d);
    }
  }
  return out;  // groups are convex, so every unit was emitted
}

}  // namespace

std::string GlobalNames::Fresh(const std::string& base) {
  for (int& next = counters_[base];; ++next) {
    std::string name = base + "_" + std::to_string(next);
    if (!module_.Contains(name) && taken_.insert(name).second) return name;
  }
}

std::set<const VarNode*> VarsUsedAfterBlock(const SeqExprNode& body, size_t block_index) {
  VarCollector collector;
  for (size_t b = block_index + 1; b < body.blocks.size(); ++b) {
    for (const Binding& binding : body.blocks[b].bindings) collector.VisitExpr(binding.value);
  }
  collector.VisitExpr(body.body);
  return std::move(collector.used);
}

bool IsConvex(const pattern::BlockMatcher& block, const std::set<size_t>& members) {
  // Walk forward from the outside users of the members; reaching a member means
  // a path member -> outside -> member.
  std::set<size_t> visited;
  std::vector<size_t> stack;
  for (size_t m : members) {
    for (size_t user : block.Users(block.bindings()[m].var.get())) {
      if (members.count(user) == 0 && visited.insert(user).second) stack.push_back(user);
    }
  }
  while (!stack.empty()) {
    size_t at = stack.back();
    stack.pop_back();
    if (members.count(at) != 0) return false;
    for (size_t user : block.Users(block.bindings()[at].var.get())) {
      if (visited.insert(user).second) stack.push_back(user);
    }
  }
  return true;
}

std::vector<Binding> OutlineGroups(const pattern::BlockMatcher& block, bool is_dataflow,
                                   const std::vector<OutlineGroup>& groups,
                                   std::vector<std::pair<std::string, Function>>* functions) {
  const std::vector<Binding>& bindings = block.bindings();
  std::vector<int> group_of(bindings.size(), -1);
  for (size_t g = 0; g < groups.size(); ++g) {
    for (size_t m : groups[g].members) group_of[m] = static_cast<int>(g);
  }

  std::vector<Unit> units;
  for (size_t i = 0; i < bindings.size(); ++i) {
    if (group_of[i] >= 0) continue;
    Unit unit;
    unit.priority = i;
    unit.bindings.push_back(bindings[i]);
    VarCollector reads;
    reads.VisitExpr(bindings[i].value);
    unit.reads = std::move(reads.used);
    unit.defines.insert(bindings[i].var.get());
    units.push_back(std::move(unit));
  }

  for (const OutlineGroup& group : groups) {
    std::set<const VarNode*> defined;
    for (size_t m : group.members) defined.insert(bindings[m].var.get());

    // Parameters: the inputs in first-use order.
    std::vector<Expr> args;
    std::vector<Expr> member_vars;
    for (size_t m : group.members) member_vars.push_back(bindings[m].var);
    std::vector<Var> params;
    Remapper remap;
    std::set<const ExprNode*> seen;
    int constants = 0;
    std::vector<Expr> inputs_and_outputs = member_vars;
    for (size_t m : group.members) {
      InputCollector inputs;
      inputs.VisitExpr(bindings[m].value);
      for (const Expr& input : inputs.order) inputs_and_outputs.push_back(input);
    }
    SignatureDims signature(SymbolNames(inputs_and_outputs));
    for (size_t m : group.members) {
      InputCollector inputs;
      inputs.VisitExpr(bindings[m].value);
      for (const Expr& input : inputs.order) {
        if (!seen.insert(input.get()).second) continue;
        if (const auto* var = input.as<VarNode>()) {
          if (defined.count(var) != 0) continue;
          Var param(var->name, signature.Rewrite(var->struct_info), false);
          remap.MapVar(var, param);
          params.push_back(param);
        } else {
          Var param("const" + std::to_string(constants++), signature.Rewrite(input->struct_info), false);
          remap.MapConstant(input.as<ConstantNode>(), param);
          params.push_back(param);
        }
        args.push_back(input);
      }
    }

    // Results: the member variables used outside the group.
    std::vector<Var> outputs;
    for (size_t m : group.members) {
      const VarNode* var = bindings[m].var.get();
      bool used_outside = block.UsedAfter(var);
      for (size_t user : block.Users(var)) used_outside = used_outside || group.members.count(user) == 0;
      if (used_outside) outputs.push_back(bindings[m].var);
    }

    // The function: the member bindings, results as non-dataflow variables.
    std::set<const VarNode*> is_output;
    for (const Var& v : outputs) is_output.insert(v.get());
    BindingBlock body_block;
    body_block.is_dataflow = true;
    for (size_t m : group.members) {
      const Binding& original = bindings[m];
      Var var(original.var->name, nullptr, is_output.count(original.var.get()) == 0);
      Binding binding;
      binding.kind = original.kind;
      binding.value = remap.MutateExpr(original.value);
      binding.pattern = original.pattern;
      binding.var = var;
      binding.location = original.location;
      remap.MapVar(original.var.get(), var);
      body_block.bindings.push_back(std::move(binding));
    }
    // Symbolic variables the body names that no parameter's shape defines (a
    // reshape to (n, 4) where no input has n as a dimension) come in as one
    // trailing shape argument.
    std::vector<tir::Var> param_vars;
    for (const Var& p : params) analysis::CollectDefinableVars(p->struct_info, &param_vars);
    std::set<const tir::VarNode*> defined_by_params;
    for (const tir::Var& v : param_vars) defined_by_params.insert(v.get());
    SymbolicVarCollector used;
    for (const Binding& b : body_block.bindings) used.VisitBinding(b);
    std::vector<tir::PrimExpr> shape_args;
    for (const tir::Var& v : used.vars) {
      if (defined_by_params.insert(v.get()).second) shape_args.push_back(v);
    }
    if (!shape_args.empty()) {
      params.push_back(Var("shape_vars", ShapeStructInfoNode::make(shape_args), false));
      args.push_back(ShapeExprNode::make(shape_args));
    }

    Expr result;
    if (outputs.size() == 1) {
      result = remap.MutateExpr(outputs[0]);
    } else {
      std::vector<Expr> fields;
      for (const Var& v : outputs) fields.push_back(remap.MutateExpr(v));
      result = TupleNode::make(std::move(fields));
    }
    // The return struct info is left for Normalize to infer from the body, in
    // the function's own variables ((s0 + 1) // 2 for a stride-2 conv of a
    // parameter whose height is s0); each call substitutes its arguments' dims,
    // so the caller keeps the exact outer expression.
    Expr func = FunctionNode::make(params, SeqExprNode::make({std::move(body_block)}, result), StructInfo(),
                                   group.function_attrs);
    functions->emplace_back(group.function_name, std::static_pointer_cast<const FunctionNode>(func.node_ptr()));

    // The call, and the unpacking of several results.
    Unit unit;
    unit.priority = *group.members.rbegin();
    // The call stands where the group's last member stood.
    const std::shared_ptr<const SourceLocation>& location = bindings[unit.priority].location;
    Expr call = CallNode::make(GlobalVarNode::make(group.function_name), args);
    if (outputs.size() == 1) {
      unit.bindings.push_back(Binding{BindingKind::kVarBinding, outputs[0], call, {}, location});
    } else {
      Var packed(group.function_name + "_out", nullptr, is_dataflow);
      unit.bindings.push_back(Binding{BindingKind::kVarBinding, packed, call, {}, location});
      for (size_t i = 0; i < outputs.size(); ++i) {
        unit.bindings.push_back(Binding{
            BindingKind::kVarBinding, outputs[i], TupleGetItemNode::make(packed, static_cast<int>(i)), {}, location});
      }
    }
    for (const Expr& a : args) {
      if (const auto* v = a.as<VarNode>()) unit.reads.insert(v);
    }
    for (const Var& v : outputs) unit.defines.insert(v.get());
    units.push_back(std::move(unit));
  }
  return StableTopologicalOrder(std::move(units));
}

Status OutlineInFunction(ir::IRModule* module, const std::string& caller,
                         const std::vector<pattern::BlockMatcher>& matchers,
                         const std::vector<std::vector<OutlineGroup>>& groups) {
  Function func = module->GetGraphFunction(caller);
  const auto* body = func->body.as<SeqExprNode>();
  std::vector<std::pair<std::string, Function>> outlined;
  std::vector<BindingBlock> blocks;
  for (size_t b = 0; b < body->blocks.size(); ++b) {
    BindingBlock block;
    block.is_dataflow = body->blocks[b].is_dataflow;
    block.bindings = groups[b].empty() ? body->blocks[b].bindings
                                       : OutlineGroups(matchers[b], block.is_dataflow, groups[b], &outlined);
    blocks.push_back(std::move(block));
  }
  // The new functions first: normalizing the caller needs their signatures.
  for (auto& [name, function] : outlined) {
    Normalizer normalizer(module);
    STRATA_ASSIGN_OR_RETURN(Function normalized, normalizer.NormalizeFunction(name, function));
    module->Add(name, std::move(normalized));
  }
  Expr rewritten = FunctionNode::make(func->params, SeqExprNode::make(std::move(blocks), body->body),
                                      func->ret_struct_info, func->attrs);
  Normalizer normalizer(module);
  STRATA_ASSIGN_OR_RETURN(
      Function normalized,
      normalizer.NormalizeFunction(caller, std::static_pointer_cast<const FunctionNode>(rewritten.node_ptr())));
  module->Add(caller, std::move(normalized));
  return Status::Ok();
}

Status OutlineInCallers(ir::IRModule* module, const std::function<bool(const FunctionNode&)>& is_caller,
                        const BlockGrouper& group_block) {
  std::vector<std::string> callers;
  for (const auto& [name, func] : module->functions()) {
    const auto* graph_func = std::get_if<Function>(&func);
    if (graph_func != nullptr && is_caller(**graph_func)) callers.push_back(name);
  }
  for (const std::string& caller : callers) {
    Function func = module->GetGraphFunction(caller);
    const auto* body = func->body.as<SeqExprNode>();
    if (body == nullptr) continue;
    std::vector<pattern::BlockMatcher> matchers;
    matchers.reserve(body->blocks.size());
    std::vector<std::vector<OutlineGroup>> groups(body->blocks.size());
    bool any = false;
    for (size_t b = 0; b < body->blocks.size(); ++b) {
      matchers.emplace_back(body->blocks[b].bindings, VarsUsedAfterBlock(*body, b));
      groups[b] = group_block(caller, b, matchers.back());
      any = any || !groups[b].empty();
    }
    if (any) STRATA_RETURN_IF_ERROR(OutlineInFunction(module, caller, matchers, groups));
  }
  return Status::Ok();
}

}  // namespace strata::transform
