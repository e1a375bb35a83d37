// Pattern matching over a binding block (see pattern_matcher.h).
#include "compiler/pattern/pattern_matcher.h"

#include <algorithm>

#include "compiler/analysis/graph_util.h"
#include "compiler/analysis/struct_info_util.h"
#include "compiler/ir/graph_visitor.h"

namespace strata::pattern {

using namespace graph;  // NOLINT: matching graph expressions

namespace {

class VarUseCollector : public ExprVisitor {
 public:
  void VisitVar(const VarNode* op) override { used.insert(op); }
  std::set<const VarNode*> used;
};

const TensorStructInfoNode* TensorInfo(const Expr& e) {
  return e->struct_info ? e->struct_info.as<TensorStructInfoNode>() : nullptr;
}

}  // namespace

struct BlockMatcher::State {
  std::map<const PatternNode*, Expr> matched;
  std::set<size_t> bindings;
  const std::set<size_t>* excluded = nullptr;
};

Expr PatternMatch::Get(const DFPattern& p) const {
  auto it = matched.find(p.get());
  return it == matched.end() ? Expr() : it->second;
}

BlockMatcher::BlockMatcher(const std::vector<Binding>& bindings, std::set<const VarNode*> used_after)
    : bindings_(bindings), used_after_(std::move(used_after)) {
  for (size_t i = 0; i < bindings_.size(); ++i) {
    VarUseCollector uses;
    uses.VisitExpr(bindings_[i].value);
    for (const VarNode* var : uses.used) users_[var].push_back(i);
    definitions_[bindings_[i].var.get()] = i;
  }
}

std::optional<size_t> BlockMatcher::DefiningBinding(const VarNode* var) const {
  auto it = definitions_.find(var);
  if (it == definitions_.end()) return std::nullopt;
  return it->second;
}

const std::vector<size_t>& BlockMatcher::Users(const VarNode* var) const {
  static const std::vector<size_t> kNone;
  auto it = users_.find(var);
  return it == users_.end() ? kNone : it->second;
}

std::optional<size_t> BlockMatcher::LookThrough(const Expr& expr, const State& state) const {
  const auto* var = expr.as<VarNode>();
  if (var == nullptr) return std::nullopt;
  std::optional<size_t> index = DefiningBinding(var);
  // match_cast bindings assert something at run time; they are never fused away.
  if (!index || bindings_[*index].kind != BindingKind::kVarBinding) return std::nullopt;
  if (state.excluded != nullptr && state.excluded->count(*index) != 0) return std::nullopt;
  return index;
}

bool BlockMatcher::MatchNode(const DFPattern& pattern, const Expr& expr, State* state) const {
  const PatternNode& p = *pattern.get();
  // A node met before must match the same expression again.
  if (auto it = state->matched.find(&p); it != state->matched.end()) return it->second.same_as(expr);

  auto record = [&] {
    state->matched.emplace(&p, expr);
    return true;
  };
  // The value behind `expr` for the structural kinds, and the binding it comes from.
  std::optional<size_t> through = LookThrough(expr, *state);
  const Expr& value = through ? bindings_[*through].value : expr;
  auto covered = [&] {
    if (through) state->bindings.insert(*through);
    return record();
  };
  auto match_args = [&](const std::vector<Expr>& actual, const std::vector<DFPattern>& expected) {
    if (actual.size() != expected.size()) return false;
    for (size_t i = 0; i < actual.size(); ++i) {
      if (!MatchNode(expected[i], actual[i], state)) return false;
    }
    return true;
  };

  switch (p.kind) {
    case PatternKind::kWildcard: return record();
    case PatternKind::kVar: {
      const auto* var = expr.as<VarNode>();
      return var != nullptr && (p.name.empty() || var->name == p.name) && record();
    }
    case PatternKind::kConstant: return value.as<ConstantNode>() != nullptr && covered();
    case PatternKind::kOp: {
      const auto* call = value.as<CallNode>();
      const auto* op = call ? call->op.as<OpNode>() : nullptr;
      if (op == nullptr || op->name != p.name || !match_args(call->args, *p.args)) return false;
      return covered();
    }
    case PatternKind::kCallTIR:
    case PatternKind::kCallDPSPacked: {
      const auto* call = value.as<CallNode>();
      const char* op_name = p.kind == PatternKind::kCallTIR ? ops::kCallTIR : ops::kCallDPSPacked;
      if (call == nullptr || !analysis::IsOpCall(call, op_name) || call->args.empty()) return false;
      if (!p.name.empty()) {
        std::string callee;
        if (const auto* g = call->args[0].as<GlobalVarNode>()) callee = g->name;
        if (const std::string* lib = analysis::LibraryName(call->args[0])) callee = *lib;
        if (callee != p.name) return false;
      }
      std::vector<Expr> args;
      if (!analysis::CallArguments(call, &args)) return false;
      if (p.args && !match_args(args, *p.args)) return false;
      return covered();
    }
    case PatternKind::kTuple: {
      const auto* tuple = value.as<TupleNode>();
      return tuple != nullptr && match_args(tuple->fields, *p.args) && covered();
    }
    case PatternKind::kOr: {
      State saved = *state;
      if (MatchNode(p.lhs, expr, state)) return record();
      *state = std::move(saved);
      return MatchNode(p.rhs, expr, state) && record();
    }
    case PatternKind::kAnd: return MatchNode(p.lhs, expr, state) && MatchNode(p.rhs, expr, state) && record();
    case PatternKind::kNot: {
      State probe = *state;
      return !MatchNode(p.lhs, expr, &probe);
    }
    case PatternKind::kDType: {
      const auto* t = TensorInfo(expr);
      if (t == nullptr || t->dtype != p.dtype) return false;
      return MatchNode(p.lhs, expr, state) && record();
    }
    case PatternKind::kRank: {
      const auto* t = TensorInfo(expr);
      if (t == nullptr || t->ndim != p.rank) return false;
      return MatchNode(p.lhs, expr, state) && record();
    }
    case PatternKind::kShape: {
      const auto* t = TensorInfo(expr);
      if (t == nullptr || !t->shape || t->shape->size() != p.shape.size()) return false;
      for (size_t i = 0; i < p.shape.size(); ++i) {
        if (!analysis::ProveDimEqual((*t->shape)[i], p.shape[i])) return false;
      }
      return MatchNode(p.lhs, expr, state) && record();
    }
    case PatternKind::kAttr: {
      const auto* call = value.as<CallNode>();
      if (call == nullptr) return false;
      auto it = call->attrs.find(p.attr_key);
      if (it == call->attrs.end() || it->second != p.attr_value) return false;
      return MatchNode(p.lhs, expr, state) && record();
    }
    case PatternKind::kPredicate: return MatchNode(p.lhs, expr, state) && p.predicate && p.predicate(expr) && record();
  }
  return false;
}

std::optional<PatternMatch> BlockMatcher::Match(const DFPattern& pattern, const Expr& expr) const {
  State state;
  if (!MatchNode(pattern, expr, &state)) return std::nullopt;
  PatternMatch match;
  match.matched = std::move(state.matched);
  match.bindings.assign(state.bindings.begin(), state.bindings.end());
  return match;
}

std::optional<PatternMatch> BlockMatcher::MatchBinding(const DFPattern& pattern, size_t index,
                                                       const std::set<size_t>& excluded) const {
  if (index >= bindings_.size() || excluded.count(index) != 0) return std::nullopt;
  State state;
  state.excluded = &excluded;
  if (!MatchNode(pattern, bindings_[index].var, &state)) return std::nullopt;
  // The pattern must describe the root's value, not merely accept its variable.
  if (state.bindings.empty() || *state.bindings.rbegin() != index) return std::nullopt;
  PatternMatch match;
  match.matched = std::move(state.matched);
  match.bindings.assign(state.bindings.begin(), state.bindings.end());
  return match;
}

std::string BackendOf(const std::string& pattern_name) { return pattern_name.substr(0, pattern_name.find('.')); }

std::optional<PatternMatch> MatchFusionPattern(const FusionPattern& pattern, const BlockMatcher& block, size_t index,
                                               const std::set<size_t>& excluded) {
  std::optional<PatternMatch> match = block.MatchBinding(pattern.pattern, index, excluded);
  if (!match) return std::nullopt;
  for (const UsedOnlyBy& constraint : pattern.used_only_by) {
    Expr producer = match->Get(constraint.producer);
    Expr consumer = match->Get(constraint.consumer);
    // A constraint on a side of an `|` the match did not take does not apply.
    if (!producer || !consumer) continue;
    const auto* produced = producer.as<VarNode>();
    const auto* consuming = consumer.as<VarNode>();
    if (produced == nullptr || consuming == nullptr) return std::nullopt;
    std::optional<size_t> consumer_binding = block.DefiningBinding(consuming);
    if (!consumer_binding || block.UsedAfter(produced)) return std::nullopt;
    for (size_t user : block.Users(produced)) {
      if (user != *consumer_binding) return std::nullopt;
    }
  }
  if (pattern.check && !pattern.check(*match, block)) return std::nullopt;
  return match;
}

}  // namespace strata::pattern
