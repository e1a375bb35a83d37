// The default lowering pipeline and the registration of the upper layers' passes (see pipeline.h).
#include "compiler/driver/pipeline.h"

#include <cassert>
#include <cstdio>
#include <mutex>

#include "compiler/backend/vm/kill_after_last_use.h"
#include "compiler/backend/vm/vm_shape_lower.h"
#include "compiler/byoc/backend.h"
#include "compiler/byoc/merge_composite_functions.h"
#include "compiler/byoc/run_codegen.h"
#include "compiler/driver/evaluate_constants.h"
#include "compiler/transform/fold_constants.h"

namespace strata::driver {

void RegisterCompilerPasses() {
  static std::once_flag once;
  std::call_once(once, [] {
    byoc::RegisterBuiltinBackends();  // their FuseOpsByPattern[backend] passes
    for (transform::Pass pass :
         {transform::Pass{"MergeCompositeFunctions", byoc::MergeCompositeFunctions},
          transform::Pass{"RunCodegen", byoc::RunCodegen}, transform::Pass{"VMShapeLower", backend::VMShapeLower},
          transform::Pass{"KillAfterLastUse", backend::KillAfterLastUse},
          transform::Pass{"FoldConstants",
                          [](ir::IRModule m) { return transform::FoldConstants(std::move(m), EvaluateConstants); }}}) {
      Status status = transform::RegisterPass(std::move(pass));
      assert(status.ok() && "a compiler pass was registered twice");
      (void)status;
    }
  });
}

std::vector<std::string> DefaultPipelinePassNames() {
  return {"Normalize",
          "WellFormed",
          "Canonicalize",
          "FoldBatchNorm",
          "FoldConstants",
          "EliminateCommonSubexpr",
          "DeadCodeElimination",
          "DispatchTIR",
          "LegalizeOps",
          "FuseOps",
          "FuseTIR",
          "CallTIRRewrite",
          "PlanMemory",
          "VMShapeLower",
          "KillAfterLastUse",
          "WellFormed"};
}

transform::Pipeline DefaultPipeline() {
  RegisterCompilerPasses();
  StatusOr<transform::Pipeline> pipeline = transform::Pipeline::FromNames(DefaultPipelinePassNames());
  assert(pipeline.ok() && "a built-in pass is missing from the registry");
  return std::move(pipeline).value();
}

}  // namespace strata::driver
