// The default lowering pipeline (see pipeline.h).
#include "compiler/transform/pipeline.h"

#include <cassert>

namespace strata::transform {

std::vector<std::string> DefaultPipelinePassNames() {
  return {"Normalize",  "WellFormed",   "DispatchTIR",      "LegalizeOps", "CallTIRRewrite",
          "PlanMemory", "VMShapeLower", "KillAfterLastUse", "WellFormed"};
}

Pipeline DefaultPipeline() {
  StatusOr<Pipeline> pipeline = Pipeline::FromNames(DefaultPipelinePassNames());
  assert(pipeline.ok() && "a built-in pass is missing from the registry");
  return std::move(pipeline).value();
}

}  // namespace strata::transform
