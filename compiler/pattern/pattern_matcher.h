// Matching dataflow patterns (dataflow_pattern.h) against a binding block.
//
// A BlockMatcher indexes one binding block: which binding defines each variable
// and which bindings use it, and which variables are used after the block. It
// matches a pattern rooted at a binding and reports every binding the match
// covers, so a pass can group them (FuseOpsByPattern) or rewrite them.
//
// A FusionPattern is what a backend registers: a named pattern plus the
// constraints that need the whole block to decide, "used only by" (every user of
// one matched value is another matched call) and an optional check callback.
//
//   FusionPattern conv_relu{
//       .name = "dnnl.conv2d_relu",
//       .pattern = relu,
//       .used_only_by = {{conv, relu}},   // the conv result feeds nothing else
//       .check = [](const PatternMatch& m, const BlockMatcher&) { return ...; }};
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/pattern/dataflow_pattern.h"

namespace strata::pattern {

struct PatternMatch {
  // The expression each pattern node matched: the variable when the matcher
  // looked through one to its binding.
  std::map<const PatternNode*, graph::Expr> matched;
  // Indices into the block of the bindings the match covers, ascending. The
  // root binding (where matching started) is the last.
  std::vector<size_t> bindings;

  // What `p` matched, or a null Expr when p is not part of the match.
  graph::Expr Get(const DFPattern& p) const;
};

class BlockMatcher {
 public:
  // `used_after`: variables of the block used after it (later blocks, the result).
  BlockMatcher(const std::vector<graph::Binding>& bindings, std::set<const graph::VarNode*> used_after);

  // Matches `pattern` against the value bound by binding `index`; the match must
  // cover that binding. Bindings in `excluded` are never looked through (they
  // already belong to another group).
  std::optional<PatternMatch> MatchBinding(const DFPattern& pattern, size_t index,
                                           const std::set<size_t>& excluded = {}) const;
  // Matches `pattern` against `expr` (looking through variables of the block).
  std::optional<PatternMatch> Match(const DFPattern& pattern, const graph::Expr& expr) const;

  const std::vector<graph::Binding>& bindings() const { return bindings_; }
  // The index of the binding that defines `var` in this block, or nullopt.
  std::optional<size_t> DefiningBinding(const graph::VarNode* var) const;
  // Indices of the bindings that use `var` (ascending, each once).
  const std::vector<size_t>& Users(const graph::VarNode* var) const;
  // Whether `var` is used after the block.
  bool UsedAfter(const graph::VarNode* var) const { return used_after_.count(var) != 0; }

 private:
  struct State;
  bool MatchNode(const DFPattern& pattern, const graph::Expr& expr, State* state) const;
  // The binding a variable of the block is bound to by a plain binding, if it
  // may be looked through.
  std::optional<size_t> LookThrough(const graph::Expr& expr, const State& state) const;

  const std::vector<graph::Binding>& bindings_;
  std::map<const graph::VarNode*, size_t> definitions_;
  std::map<const graph::VarNode*, std::vector<size_t>> users_;
  std::set<const graph::VarNode*> used_after_;
};

// Every use of what `producer` matched must be the binding `consumer` matched.
// When the match did not use one of them (it took the other side of an `|`), the
// constraint does not apply.
struct UsedOnlyBy {
  DFPattern producer, consumer;
};

struct FusionPattern {
  // "backend.pattern", e.g. "dnnl.dense_bias_relu". The part before the first
  // '.' names the backend whose codegen takes the composite functions.
  std::string name;
  DFPattern pattern;
  std::vector<UsedOnlyBy> used_only_by;
  // Optional: a last say on a structural match (e.g. a size threshold).
  std::function<bool(const PatternMatch&, const BlockMatcher&)> check;
};

// The backend part of a pattern or composite name ("dnnl" of "dnnl.dense").
std::string BackendOf(const std::string& pattern_name);

// Matches `pattern` at binding `index` and checks its constraints and callback.
std::optional<PatternMatch> MatchFusionPattern(const FusionPattern& pattern, const BlockMatcher& block, size_t index,
                                               const std::set<size_t>& excluded = {});

}  // namespace strata::pattern
