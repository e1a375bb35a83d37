// dispatch-tir: operator calls -> call_tir of hand-written tensor programs (see dispatch_tir.h).
#include "compiler/transform/dispatch_tir.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "compiler/analysis/graph_util.h"
#include "compiler/analysis/struct_info_util.h"
#include "compiler/ir/structural_equal.h"
#include "compiler/ir/tir_visitor.h"
#include "compiler/op/op_registry.h"
#include "compiler/transform/normalize.h"
#include "compiler/transform/pass.h"

namespace strata::transform {

using namespace graph;  // NOLINT: a graph-level pass

namespace {

constexpr const char* kDispatchAttr = "dispatch";
constexpr const char* kWhenPrefix = "when_";

struct Candidate {
  std::string name;
  tir::PrimFunc func;
};

// Binds the program's shape variables to graph dims while matching buffers to tensors.
class ShapeUnifier {
 public:
  bool Match(const tir::Buffer& buffer, const StructInfo& sinfo) {
    const auto* t = sinfo ? sinfo.as<TensorStructInfoNode>() : nullptr;
    if (t == nullptr || !t->shape || t->dtype != buffer->dtype || t->shape->size() != buffer->shape.size())
      return false;
    for (size_t d = 0; d < buffer->shape.size(); ++d) pending_.emplace_back(buffer->shape[d], (*t->shape)[d]);
    return true;
  }

  // Plain variables bind first; then every other dimension must be provably equal.
  bool Solve() {
    for (const auto& [dim, graph_dim] : pending_) {
      const auto* var = dim.as<tir::VarNode>();
      if (var == nullptr) continue;
      auto [it, inserted] = bound_.emplace(var, graph_dim);
      if (!inserted && !analysis::ProveDimEqual(it->second, graph_dim)) return false;
    }
    for (const auto& [dim, graph_dim] : pending_) {
      if (dim.as<tir::VarNode>()) continue;
      bool all_bound = true;
      PrimExpr substituted = tir::Substitute(dim, [&](const tir::VarNode* v) -> PrimExpr {
        auto it = bound_.find(v);
        if (it == bound_.end()) {
          all_bound = false;
          return PrimExpr();
        }
        return it->second;
      });
      if (!all_bound || !analysis::ProveDimEqual(substituted, graph_dim)) return false;
    }
    return true;
  }

 private:
  std::vector<std::pair<PrimExpr, PrimExpr>> pending_;
  std::map<const tir::VarNode*, PrimExpr> bound_;
};

class TIRDispatcher : public Normalizer {
 public:
  explicit TIRDispatcher(const ir::IRModule* module) : Normalizer(module) {
    for (const auto& [name, func] : module->functions()) {
      const auto* prim = std::get_if<tir::PrimFunc>(&func);
      if (prim == nullptr) continue;
      auto it = (*prim)->attrs.find(kDispatchAttr);
      if (it == (*prim)->attrs.end() || !std::holds_alternative<std::string>(it->second)) continue;
      candidates_[std::get<std::string>(it->second)].push_back(Candidate{name, *prim});
    }
  }

  bool has_candidates() const { return !candidates_.empty(); }

 protected:
  void RewriteBinding(const Binding& binding) override {
    const auto* original = binding.value.as<CallNode>();
    const auto* op = original ? original->op.as<OpNode>() : nullptr;
    auto found = op ? candidates_.find(op->name) : candidates_.end();
    const op::OpDef* def = op ? op::FindOp(op->name) : nullptr;
    if (found == candidates_.end() || def == nullptr) return Normalizer::RewriteBinding(binding);
    Expr value = MutateExpr(binding.value);
    if (failed()) return;
    const auto* call = value.as<CallNode>();
    std::vector<Expr> tensors;
    if (!FlattenTensorArgs(*call, &tensors)) return EmitBinding(binding, value);
    for (const Candidate& candidate : found->second) {
      if (!AttrsMatch(*def, *call, *candidate.func) || !SignatureMatches(*candidate.func, tensors, call->struct_info)) {
        continue;
      }
      Expr call_tir =
          CallNode::make(OpNode::Get(ops::kCallTIR), {GlobalVarNode::make(candidate.name), TupleNode::make(tensors)},
                         {}, {call->struct_info});
      return EmitBinding(binding, MutateExpr(call_tir));
    }
    EmitBinding(binding, value);
  }

 private:
  // The tensor arguments in order, tuple fields flattened; false if any argument
  // is something else (a shape, a scalar).
  static bool FlattenTensorArgs(const CallNode& call, std::vector<Expr>* out) {
    for (const Expr& arg : call.args) {
      if (const auto* tuple = arg.as<TupleNode>()) {
        for (const Expr& field : tuple->fields) out->push_back(field);
      } else if (arg->struct_info && arg->struct_info.as<TensorStructInfoNode>()) {
        out->push_back(arg);
      } else {
        return false;
      }
    }
    return true;
  }

  static bool AttrsMatch(const op::OpDef& def, const CallNode& call, const tir::PrimFuncNode& func) {
    for (const auto& [key, want] : func.attrs) {
      if (key.rfind(kWhenPrefix, 0) != 0) continue;
      const std::string attr = key.substr(std::string(kWhenPrefix).size());
      auto written = call.attrs.find(attr);
      const ir::AttrValue* have = written != call.attrs.end() ? &written->second : nullptr;
      if (have == nullptr) {
        for (const op::AttrDef& a : def.attrs) {
          if (a.name == attr && a.default_value) have = &*a.default_value;
        }
      }
      if (have == nullptr || !(*have == want)) return false;
    }
    return true;
  }

  static bool SignatureMatches(const tir::PrimFuncNode& func, const std::vector<Expr>& inputs,
                               const StructInfo& result) {
    std::vector<StructInfo> outputs;
    if (const auto* tuple = result.as<TupleStructInfoNode>()) {
      outputs = tuple->fields;
    } else {
      outputs.push_back(result);
    }
    if (func.params.size() != inputs.size() + outputs.size()) return false;
    ShapeUnifier unifier;
    for (size_t i = 0; i < func.params.size(); ++i) {
      if (!func.params[i].is_buffer()) return false;
      const StructInfo& sinfo = i < inputs.size() ? inputs[i]->struct_info : outputs[i - inputs.size()];
      if (!unifier.Match(func.params[i].buffer, sinfo)) return false;
    }
    return unifier.Solve();
  }

  std::map<std::string, std::vector<Candidate>> candidates_;
};

}  // namespace

StatusOr<ir::IRModule> DispatchTIR(ir::IRModule module) {
  TIRDispatcher dispatcher(&module);
  if (!dispatcher.has_candidates()) return module;
  STRATA_RETURN_IF_ERROR(RewriteGraphFunctions(dispatcher, &module));
  return module;
}

Status MergeTensorPrograms(const ir::IRModule& library, ir::IRModule* module) {
  for (const auto& [name, func] : library.functions()) {
    const auto* prim = std::get_if<tir::PrimFunc>(&func);
    if (prim == nullptr) continue;
    if (const ir::BaseFunc* existing = module->Lookup(name)) {
      const auto* existing_prim = std::get_if<tir::PrimFunc>(existing);
      if (existing_prim == nullptr || !ir::StructuralEqual(*existing_prim, *prim)) {
        return ErrorStatus() << "tensor program @" << name
                             << " of the library is already a different function of the module";
      }
      continue;
    }
    module->Add(name, *prim);
  }
  return Status::Ok();
}

STRATA_REGISTER_PASS(DispatchTIR, DispatchTIR)

}  // namespace strata::transform
