// Outlining: turning a group of bindings of one block into a function and a call.
//
// FuseOpsByPattern outlines each pattern match into a composite function and
// MergeCompositeFunctions outlines groups of composite calls into one offloaded
// function; both go through here, so they agree on what a legal group is and how
// it is cut out:
//
//  - A group is legal when no binding outside it lies on a path between two of
//    its bindings (it is convex). Outlining a non-convex group would make the new
//    call both depend on and feed the outside binding: a cycle.
//  - The function's parameters are the group's inputs in first-use order: the
//    variables it reads that it does not define, and its inline constants (so
//    weights reach an external function as arguments). Other inline arguments
//    (shapes, scalars, strings) stay inside. A parameter dimension that is an
//    expression of the caller's (`(h + 1) // 2`) becomes a variable of the
//    function's own; symbolic variables the body names that no parameter's
//    shape defines come in as one trailing shape argument (`shape_vars`).
//  - The return struct info is inferred from the body, in the function's own
//    variables, so each call's result is exact in the caller's (`((h + 1) // 2
//    + 1) // 2` after two stride-2 convolutions), at every shape.
//  - Its results are the group's variables used outside it: one result is
//    returned as is, several as a tuple the caller unpacks.
//  - The block is rebuilt with the call in place of the group and re-sorted
//    stably by data dependencies, so a binding that used an intermediate result
//    moves after the call and everything else keeps its order.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "compiler/ir/attrs.h"
#include "compiler/ir/graph.h"
#include "compiler/ir/module.h"
#include "compiler/pattern/pattern_matcher.h"
#include "support/status.h"

namespace strata::transform {

// Attributes that mark outlined functions; passes that must leave them alone,
// or that lower them, read these.
inline constexpr const char* kCompositeAttr = "composite";  // a BYOC composite: the pattern name
inline constexpr const char* kCodegenAttr = "codegen";      // offloaded to a BYOC backend: its name
inline constexpr const char* kPrimitiveAttr = "primitive";  // a FuseOps group, for FuseTIR

// Global names "base_0", "base_1", ... that the module does not use yet.
class GlobalNames {
 public:
  explicit GlobalNames(const ir::IRModule& module) : module_(module) {}
  std::string Fresh(const std::string& base);

 private:
  const ir::IRModule& module_;
  std::map<std::string, int> counters_;
  std::set<std::string> taken_;
};

// Variables of block `block_index` of `body` used after that block (by later
// blocks or the result).
std::set<const graph::VarNode*> VarsUsedAfterBlock(const graph::SeqExprNode& body, size_t block_index);

// Whether `members` (indices into the block) can be outlined without a cycle.
bool IsConvex(const pattern::BlockMatcher& block, const std::set<size_t>& members);

// One group to outline: its bindings and the function to create.
struct OutlineGroup {
  std::set<size_t> members;
  std::string function_name;
  ir::Attrs function_attrs;
};

// Outlines every group of `block` (groups must be disjoint and convex). Each new
// function (not yet normalized) is appended to `functions` with its name; the
// rewritten block (not yet normalized) is returned.
std::vector<graph::Binding> OutlineGroups(const pattern::BlockMatcher& block, bool is_dataflow,
                                          const std::vector<OutlineGroup>& groups,
                                          std::vector<std::pair<std::string, graph::Function>>* functions);

// Outlines `groups[b]` of block b of the graph function `caller` (matchers[b]
// indexes that block), adds the new functions and the rewritten caller to
// `module`, all normalized.
Status OutlineInFunction(ir::IRModule* module, const std::string& caller,
                         const std::vector<pattern::BlockMatcher>& matchers,
                         const std::vector<std::vector<OutlineGroup>>& groups);

// The groups to outline from one block of `caller`, in the order to name them.
using BlockGrouper = std::function<std::vector<OutlineGroup>(const std::string& caller, size_t block_index,
                                                             const pattern::BlockMatcher& block)>;

// For every graph function that `is_caller` accepts (in module order), asks
// `group_block` for the groups of each block of its body and outlines them
// (OutlineInFunction). Passes that outline (FuseOps, MergeCompositeFunctions)
// differ only in how they group.
Status OutlineInCallers(ir::IRModule* module, const std::function<bool(const graph::FunctionNode&)>& is_caller,
                        const BlockGrouper& group_block);

}  // namespace strata::transform
