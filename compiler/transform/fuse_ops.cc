// FuseOps: grouping call_tir bindings and outlining the groups; see fuse_ops.h.
#include "compiler/transform/fuse_ops.h"

#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "compiler/analysis/graph_util.h"
#include "compiler/analysis/struct_info_util.h"
#include "compiler/op/op_registry.h"
#include "compiler/pattern/pattern_matcher.h"
#include "compiler/transform/outline.h"
#include "compiler/transform/pass.h"
#include "compiler/transform/tir_inline.h"

namespace strata::transform {

using namespace graph;  // NOLINT: a graph-level pass

namespace {

using op::OpPattern;

// What FuseOps needs to know about one call_tir binding's kernel.
struct KernelTraits {
  OpPattern pattern = OpPattern::kOpaque;
  std::string op_name;
  // A light op whose kernel is an elementwise nest: it may be computed inline.
  bool recomputable = false;
  // The kernel never reads its output back, so each element is stored once.
  bool final_stores = false;
  // Per call_tir input: the kernel is a light elementwise nest over exactly that
  // input's shape and reads it only at its own position (it can be an epilogue).
  std::vector<bool> epilogue_of;
};

bool IsLight(OpPattern pattern) {
  return pattern == OpPattern::kElementwise || pattern == OpPattern::kBroadcast || pattern == OpPattern::kInjective;
}

std::optional<KernelTraits> AnalyzeBinding(const ir::IRModule& module, const Binding& binding) {
  if (binding.kind != BindingKind::kVarBinding) return std::nullopt;
  const auto* call = binding.value.as<CallNode>();
  const auto* op = call ? call->op.as<OpNode>() : nullptr;
  if (op == nullptr || op->name != ops::kCallTIR || call->args.size() < 2) return std::nullopt;
  const auto* callee = call->args[0].as<GlobalVarNode>();
  const auto* inputs = call->args[1].as<TupleNode>();
  if (callee == nullptr || inputs == nullptr) return std::nullopt;
  const auto* result = binding.var->struct_info.as<TensorStructInfoNode>();
  if (result == nullptr || !result->shape) return std::nullopt;
  tir::PrimFunc kernel = module.GetPrimFunc(callee->name);
  if (kernel == nullptr) return std::nullopt;
  auto pattern_attr = kernel->attrs.find("op_pattern");
  if (pattern_attr == kernel->attrs.end()) return std::nullopt;
  const auto* pattern_name = std::get_if<std::string>(&pattern_attr->second);
  std::optional<OpPattern> pattern = pattern_name ? op::ParseOpPattern(*pattern_name) : std::nullopt;
  if (!pattern || *pattern == OpPattern::kOpaque) return std::nullopt;

  // Parameters: the inputs, one output, then scalars.
  const size_t num_inputs = inputs->fields.size();
  if (kernel->params.size() <= num_inputs || !kernel->params[num_inputs].is_buffer()) return std::nullopt;
  for (size_t i = num_inputs + 1; i < kernel->params.size(); ++i) {
    if (kernel->params[i].is_buffer()) return std::nullopt;  // several outputs
  }
  for (size_t i = 0; i < num_inputs; ++i) {
    if (!kernel->params[i].is_buffer()) return std::nullopt;
  }
  const tir::Buffer& out = kernel->params[num_inputs].buffer;

  KernelTraits traits;
  traits.pattern = *pattern;
  auto op_attr = kernel->attrs.find("op");
  const auto* op_name = op_attr == kernel->attrs.end() ? nullptr : std::get_if<std::string>(&op_attr->second);
  traits.op_name = op_name ? *op_name : callee->name;
  traits.final_stores = !LoadsBuffer(kernel->body, out);
  traits.epilogue_of.assign(num_inputs, false);
  std::optional<ElementwiseNest> nest = MatchElementwiseNest(kernel->body, out);
  if (nest && IsLight(*pattern)) {
    traits.recomputable = true;
    for (size_t i = 0; i < num_inputs; ++i) {
      const tir::Buffer& input = kernel->params[i].buffer;
      if (input->shape.size() != out->shape.size() || input->dtype != out->dtype) continue;
      bool same_shape = true;
      for (size_t d = 0; same_shape && d < out->shape.size(); ++d) {
        same_shape = analysis::ProveDimEqual(input->shape[d], out->shape[d]);
      }
      traits.epilogue_of[i] = same_shape && LoadsOnlyAt(nest->value, input, nest->position);
    }
  }
  return traits;
}

// One group under construction (indexed by its root binding, the one whose
// result leaves the group).
struct Group {
  std::set<size_t> members;
  bool all_recomputable = true;
  // The group's result is stored once per element by a member's final stores.
  bool final_stores = false;
  // A member's body hosts the others' stores (an epilogue was merged).
  bool has_host = false;
};

class BlockFuser {
 public:
  BlockFuser(const ir::IRModule& module, const pattern::BlockMatcher& block) : module_(module), block_(block) {}

  std::vector<std::set<size_t>> Run() {
    const std::vector<Binding>& bindings = block_.bindings();
    traits_.resize(bindings.size());
    group_of_.resize(bindings.size());
    std::iota(group_of_.begin(), group_of_.end(), 0);
    for (size_t i = 0; i < bindings.size(); ++i) {
      traits_[i] = AnalyzeBinding(module_, bindings[i]);
      if (!traits_[i]) continue;
      Group& g = groups_[i];
      g.members = {i};
      g.all_recomputable = traits_[i]->recomputable;
      g.final_stores = traits_[i]->final_stores;
    }
    // Until nothing changes: a value whose users join one group later in the
    // sweep (the two uses of x in x * f(x)) merges on the next one.
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t c = 0; c < bindings.size(); ++c) {
        if (!traits_[c]) continue;
        const auto* call = bindings[c].value.as<CallNode>();
        const auto& inputs = call->args[1].as<TupleNode>()->fields;
        for (const Expr& input : inputs) changed = TryMerge(c, input) || changed;
      }
    }
    std::vector<std::set<size_t>> result;
    for (auto& [root, group] : groups_) {
      // A group whose result nothing uses is dead code: left for DCE.
      const VarNode* var = bindings[root].var.get();
      const bool used = block_.UsedAfter(var) || !block_.Users(var).empty();
      if (group.members.size() > 1 && used) result.push_back(group.members);
    }
    return result;
  }

 private:
  size_t Find(size_t i) {
    while (group_of_[i] != i) i = group_of_[i] = group_of_[group_of_[i]];
    return i;
  }

  // Whether every use of `var` by binding `user` is an input its kernel reads
  // only at its own position over the same shape.
  bool EpilogueOf(size_t user, const VarNode* var) const {
    const auto& inputs = block_.bindings()[user].value.as<CallNode>()->args[1].as<TupleNode>()->fields;
    bool any = false;
    for (size_t j = 0; j < inputs.size(); ++j) {
      if (inputs[j].get() != var) continue;
      if (!traits_[user]->epilogue_of[j]) return false;
      any = true;
    }
    return any;
  }

  bool TryMerge(size_t consumer, const Expr& input) {
    const auto* var = input.as<VarNode>();
    if (var == nullptr) return false;
    std::optional<size_t> producer = block_.DefiningBinding(var);
    if (!producer || !traits_[*producer] || block_.UsedAfter(var)) return false;
    const size_t producer_root = Find(*producer), consumer_root = Find(consumer);
    if (producer_root == consumer_root) return false;
    // Every user of the value must be in the consumer's group (and a call_tir
    // whose kernel reads it): a value used by two groups is materialized.
    const std::vector<size_t>& users = block_.Users(var);
    bool into_heavy_user = false;
    for (size_t user : users) {
      if (!traits_[user] || Find(user) != consumer_root) return false;
      into_heavy_user = into_heavy_user || traits_[user]->pattern == OpPattern::kOutputFusable;
    }
    Group& from = groups_.at(producer_root);
    Group& into = groups_.at(consumer_root);

    const bool chain = from.all_recomputable && !into_heavy_user;
    bool epilogue = !chain && from.final_stores && !into.has_host;
    for (size_t user : users) epilogue = epilogue && EpilogueOf(user, var);
    // With several readers, the consumer group must collapse into one nest
    // (all light) for the result to be read at one position only.
    if (users.size() > 1) epilogue = epilogue && into.all_recomputable;
    if (!chain && !epilogue) return false;

    // The group's root stays the consumer's (its result leaves the group).
    into.members.insert(from.members.begin(), from.members.end());
    into.all_recomputable = into.all_recomputable && from.all_recomputable;
    if (epilogue) {
      into.has_host = true;
      into.final_stores = true;
    } else {
      into.has_host = into.has_host || from.has_host;
    }
    group_of_[producer_root] = consumer_root;
    groups_.erase(producer_root);
    return true;
  }

  const ir::IRModule& module_;
  const pattern::BlockMatcher& block_;
  std::vector<std::optional<KernelTraits>> traits_;
  std::vector<size_t> group_of_;
  std::map<size_t, Group> groups_;
};

// "fused_conv2d_add_relu": the members' operators in program order, kept short.
std::string GroupName(const std::vector<Binding>& bindings, const std::set<size_t>& members,
                      const ir::IRModule& module) {
  constexpr size_t kMaxLength = 64;
  std::string name = "fused";
  size_t listed = 0;
  for (size_t m : members) {
    std::optional<KernelTraits> traits = AnalyzeBinding(module, bindings[m]);
    const std::string op = traits ? traits->op_name : "op";
    if (name.size() + 1 + op.size() > kMaxLength) break;
    name += "_" + op;
    ++listed;
  }
  if (listed < members.size()) name += "_etc";
  return name;
}

bool IsByocOrPrimitive(const FunctionNode& func) {
  return func.attrs.count(kCompositeAttr) != 0 || func.attrs.count(kCodegenAttr) != 0 ||
         func.attrs.count(kPrimitiveAttr) != 0;
}

}  // namespace

StatusOr<ir::IRModule> FuseOps(ir::IRModule module) {
  analysis::NameSupply names;
  for (const auto& [name, func] : module.functions()) names.Reserve(name);
  STRATA_RETURN_IF_ERROR(OutlineInCallers(
      &module, [](const FunctionNode& func) { return !IsByocOrPrimitive(func); },
      [&](const std::string&, size_t, const pattern::BlockMatcher& block) {
        std::vector<OutlineGroup> groups;
        BlockFuser fuser(module, block);
        for (std::set<size_t>& members : fuser.Run()) {
          std::string name = names.Fresh(GroupName(block.bindings(), members, module));
          groups.push_back(OutlineGroup{std::move(members), std::move(name), ir::Attrs{{kPrimitiveAttr, int64_t{1}}}});
        }
        return groups;
      }));
  return module;
}

STRATA_REGISTER_PASS(FuseOps, FuseOps)

}  // namespace strata::transform
