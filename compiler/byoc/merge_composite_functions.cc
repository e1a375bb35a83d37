// MergeCompositeFunctions: neighbouring composites -> offloaded functions (see merge_composite_functions.h).
#include "compiler/byoc/merge_composite_functions.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "compiler/byoc/fuse_ops_by_pattern.h"
#include "compiler/transform/normalize.h"
#include "compiler/transform/outline.h"
#include "compiler/transform/pass.h"

namespace strata::byoc {

using namespace graph;  // NOLINT: a graph-level pass
using transform::GlobalNames;
using transform::IsConvex;
using transform::OutlineGroup;
using transform::OutlineInCallers;

namespace {

// The backend of a call of a composite function, or "".
std::string CompositeBackend(const ir::IRModule& module, const Expr& value) {
  const auto* call = value.as<CallNode>();
  const auto* callee = call ? call->op.as<GlobalVarNode>() : nullptr;
  if (callee == nullptr) return "";
  Function func = module.GetGraphFunction(callee->name);
  if (!func) return "";
  auto it = func->attrs.find(kCompositeAttr);
  const auto* name = it == func->attrs.end() ? nullptr : std::get_if<std::string>(&it->second);
  return name ? pattern::BackendOf(*name) : "";
}

class DisjointSets {
 public:
  explicit DisjointSets(size_t n) : parent_(n) { std::iota(parent_.begin(), parent_.end(), 0); }
  size_t Find(size_t x) {
    while (parent_[x] != x) x = parent_[x] = parent_[parent_[x]];
    return x;
  }
  void Union(size_t a, size_t b) { parent_[Find(b)] = Find(a); }

 private:
  std::vector<size_t> parent_;
};

}  // namespace

StatusOr<ir::IRModule> MergeCompositeFunctions(ir::IRModule module) {
  GlobalNames names(module);
  auto is_caller = [](const FunctionNode& func) {
    return func.attrs.count(kCompositeAttr) == 0 && func.attrs.count(kCodegenAttr) == 0;
  };
  auto group_block = [&](const std::string& caller, size_t, const pattern::BlockMatcher& block) {
    const size_t n = block.bindings().size();
    std::vector<std::string> backend(n);
    for (size_t i = 0; i < n; ++i) backend[i] = CompositeBackend(module, block.bindings()[i].value);

    DisjointSets sets(n);
    std::map<size_t, std::set<size_t>> members;  // by set representative
    for (size_t i = 0; i < n; ++i) {
      if (!backend[i].empty()) members[i] = {i};
    }
    for (size_t i = 0; i < n; ++i) {
      if (backend[i].empty()) continue;
      const auto* call = block.bindings()[i].value.as<CallNode>();
      for (const Expr& arg : call->args) {
        const auto* var = arg.as<VarNode>();
        std::optional<size_t> producer = var ? block.DefiningBinding(var) : std::nullopt;
        if (!producer || backend[*producer] != backend[i]) continue;
        size_t a = sets.Find(*producer), c = sets.Find(i);
        if (a == c) continue;
        std::set<size_t> merged = members[a];
        merged.insert(members[c].begin(), members[c].end());
        if (!IsConvex(block, merged)) continue;
        sets.Union(a, c);
        members.erase(c);
        members[a] = std::move(merged);
      }
    }
    // Named in program order of their first binding.
    std::vector<std::set<size_t>> ordered;
    for (auto& [representative, group] : members) ordered.push_back(std::move(group));
    std::sort(ordered.begin(), ordered.end(),
              [](const std::set<size_t>& x, const std::set<size_t>& y) { return *x.begin() < *y.begin(); });
    std::vector<OutlineGroup> groups;
    for (std::set<size_t>& group : ordered) {
      const std::string& group_backend = backend[*group.begin()];
      ir::Attrs attrs{{kCodegenAttr, group_backend}};
      groups.push_back(OutlineGroup{group, names.Fresh(group_backend + "_" + caller), attrs});
    }
    return groups;
  };
  STRATA_RETURN_IF_ERROR(OutlineInCallers(&module, is_caller, group_block));
  return module;
}

STRATA_REGISTER_PASS(MergeCompositeFunctions, MergeCompositeFunctions)

}  // namespace strata::byoc
