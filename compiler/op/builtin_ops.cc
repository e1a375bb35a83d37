// Gathers the built-in operator families for the registry.
#include "compiler/op/builtin_ops.h"

namespace strata::op {

std::vector<OpDef> BuiltinOps() {
  std::vector<OpDef> all;
  for (auto family : {&ElementwiseOps, &LinearAlgebraOps, &NeuralNetworkOps, &ReductionOps, &ManipulationOps,
                      &ShapeValueOps, &IndexingOps, &PadOps, &ConvTransposeOps, &ResizeOps, &SelectionOps}) {
    for (OpDef& def : family()) all.push_back(std::move(def));
  }
  return all;
}

}  // namespace strata::op
