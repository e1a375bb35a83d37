// FuseOpsByPattern: pattern matches -> composite functions (see fuse_ops_by_pattern.h).
#include "compiler/byoc/fuse_ops_by_pattern.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>

#include "compiler/transform/normalize.h"
#include "compiler/transform/outline.h"

namespace strata::byoc {

using namespace graph;  // NOLINT: a graph-level pass
using transform::GlobalNames;
using transform::IsConvex;
using transform::OutlineGroup;
using transform::OutlineInFunction;
using transform::VarsUsedAfterBlock;

namespace {

bool IsByocFunction(const FunctionNode& func) {
  return func.attrs.count(kCompositeAttr) != 0 || func.attrs.count(kCodegenAttr) != 0;
}

// Whether the match can become a composite: nothing but the root is used outside it.
bool IntermediatesStayInside(const pattern::BlockMatcher& block, const std::set<size_t>& members, size_t root) {
  for (size_t m : members) {
    if (m == root) continue;
    const VarNode* var = block.bindings()[m].var.get();
    if (block.UsedAfter(var)) return false;
    for (size_t user : block.Users(var)) {
      if (members.count(user) == 0) return false;
    }
  }
  return true;
}

std::string FunctionNameBase(const std::string& pattern_name) {
  std::string base = pattern_name;
  std::replace(base.begin(), base.end(), '.', '_');
  return base;
}

struct Found {
  size_t block;
  size_t root;
  std::set<size_t> members;
  std::string pattern_name;
};

}  // namespace

StatusOr<ir::IRModule> FuseOpsByPattern(ir::IRModule module, const std::vector<pattern::FusionPattern>& patterns) {
  GlobalNames names(module);
  std::vector<std::string> callers;
  for (const auto& [name, func] : module.functions()) {
    const auto* graph_func = std::get_if<Function>(&func);
    if (graph_func != nullptr && !IsByocFunction(**graph_func)) callers.push_back(name);
  }

  for (const std::string& caller : callers) {
    Function func = module.GetGraphFunction(caller);
    const auto* body = func->body.as<SeqExprNode>();
    if (body == nullptr) continue;

    std::vector<pattern::BlockMatcher> matchers;
    matchers.reserve(body->blocks.size());
    std::vector<Found> found;
    for (size_t b = 0; b < body->blocks.size(); ++b) {
      matchers.emplace_back(body->blocks[b].bindings, VarsUsedAfterBlock(*body, b));
      const pattern::BlockMatcher& block = matchers.back();
      std::set<size_t> grouped;
      for (const pattern::FusionPattern& fusion : patterns) {
        for (size_t i = block.bindings().size(); i-- > 0;) {
          if (grouped.count(i) != 0) continue;
          std::optional<pattern::PatternMatch> match = pattern::MatchFusionPattern(fusion, block, i, grouped);
          if (!match) continue;
          std::set<size_t> members(match->bindings.begin(), match->bindings.end());
          if (!IntermediatesStayInside(block, members, i) || !IsConvex(block, members)) continue;
          grouped.insert(members.begin(), members.end());
          found.push_back(Found{b, i, std::move(members), fusion.name});
        }
      }
    }
    if (found.empty()) continue;

    // Composites are named in program order.
    std::sort(found.begin(), found.end(),
              [](const Found& a, const Found& b) { return std::tie(a.block, a.root) < std::tie(b.block, b.root); });
    std::vector<std::vector<OutlineGroup>> groups(body->blocks.size());
    for (Found& f : found) {
      ir::Attrs attrs{{kCompositeAttr, f.pattern_name}};
      groups[f.block].push_back(
          OutlineGroup{std::move(f.members), names.Fresh(FunctionNameBase(f.pattern_name)), attrs});
    }

    STRATA_RETURN_IF_ERROR(OutlineInFunction(&module, caller, matchers, groups));
  }
  return module;
}

}  // namespace strata::byoc
