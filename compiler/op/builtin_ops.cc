// Gathers the built-in operator families for the registry.
#include "compiler/op/builtin_ops.h"

#include <string_view>
#include <utility>

namespace strata::op {

namespace {

using P = OpPattern;

// Each family's fusion pattern, with the ops that differ from it. Kept in one
// table so that the whole fusion vocabulary reads at a glance; an op missing
// here keeps its family's pattern.
struct FamilyPatterns {
  std::vector<OpDef> (*family)();
  OpPattern pattern;
  std::vector<std::pair<std::string_view, OpPattern>> exceptions;
};

const std::vector<FamilyPatterns>& Families() {
  static const std::vector<FamilyPatterns> families = {
      // One-input ops are elementwise, the others broadcast (their inputs
      // follow numpy broadcasting).
      {&ElementwiseOps, P::kBroadcast, {}},
      {&LinearAlgebraOps, P::kOutputFusable, {{"bias_add", P::kBroadcast}, {"take_panel_columns", P::kInjective}}},
      {&NeuralNetworkOps,
       P::kOutputFusable,
       {{"global_avg_pool2d", P::kReduction},
        {"softmax", P::kReduction},
        {"log_softmax", P::kReduction},
        {"layer_norm", P::kReduction},
        {"batch_norm", P::kBroadcast},
        {"dropout", P::kElementwise}}},
      {&ReductionOps, P::kReduction, {}},
      // split has several results; the rest compute each output element from
      // input elements at computed indices.
      {&ManipulationOps, P::kInjective, {{"split", P::kOpaque}}},
      {&ReshapeOps, P::kInjective, {}},
      {&ShapeValueOps, P::kOpaque, {}},
      {&IndexingOps,
       P::kOpaque,
       {{"gather_elements", P::kInjective},
        {"gather_nd", P::kInjective},
        {"argmax", P::kReduction},
        {"argmin", P::kReduction}}},
      {&PadOps, P::kInjective, {}},
      {&ConvTransposeOps, P::kOutputFusable, {}},
      {&DepthToSpaceOps, P::kInjective, {}},
      {&ResizeOps, P::kInjective, {}},
      // The blocked (NCHWc) layout's operators (ConvertToNchwc makes them).
      {&Conv2dNchwcOps, P::kOutputFusable, {}},
      {&NchwcLayoutOps,
       P::kInjective,
       {{"max_pool2d_nchwc", P::kOutputFusable}, {"avg_pool2d_nchwc", P::kOutputFusable}}},
      // topk has two results.
      {&SelectionOps, P::kOpaque, {{"one_hot", P::kInjective}}},
  };
  return families;
}

}  // namespace

std::vector<OpDef> BuiltinOps() {
  std::vector<OpDef> all;
  for (const FamilyPatterns& entry : Families()) {
    for (OpDef& def : entry.family()) {
      def.pattern = entry.pattern;
      if (entry.family == &ElementwiseOps && def.params.size() == 1) def.pattern = P::kElementwise;
      for (const auto& [name, pattern] : entry.exceptions) {
        if (def.name == name) def.pattern = pattern;
      }
      all.push_back(std::move(def));
    }
  }
  return all;
}

}  // namespace strata::op
