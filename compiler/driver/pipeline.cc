// The default lowering pipeline and the registration of the upper layers' passes (see pipeline.h).
#include "compiler/driver/pipeline.h"

#include <cassert>
#include <cstdio>
#include <mutex>

#include "compiler/byoc/backend.h"
#include "compiler/driver/evaluate_constants.h"
#include "compiler/transform/fold_constants.h"

// The passes the layers above transform/ register where they define them
// (STRATA_REGISTER_PASS), as the build lists them (cmake/StrataPasses.cmake).
namespace strata::generated {
std::vector<transform::Pass> BackendVmPasses();
std::vector<transform::Pass> ByocPasses();
}  // namespace strata::generated

namespace strata::driver {

void RegisterCompilerPasses() {
  static std::once_flag once;
  std::call_once(once, [] {
    byoc::RegisterBuiltinBackends();  // their FuseOpsByPattern[backend] passes
    transform::SetConstantEvaluator(EvaluateConstants);
    for (std::vector<transform::Pass> passes : {generated::BackendVmPasses(), generated::ByocPasses()}) {
      for (transform::Pass& pass : passes) {
        Status status = transform::RegisterPass(std::move(pass));
        assert(status.ok() && "a compiler pass was registered twice");
        (void)status;
      }
    }
  });
}

std::vector<std::string> DefaultPipelinePassNames() {
  return {
      "Normalize",               // struct info on every value; annotations and call_tir checked
      "WellFormed",              // scoping, dataflow, @names, bound symbolic variables
      "Canonicalize",            // reshape/transpose chains merged; identity reshapes, x * 1, x + 0 removed
      "FoldBatchNorm",           // batch_norm after a conv folded into its weight and bias
      "FoldConstants",           // operator calls on constants alone computed once, at compile time
      "EliminateCommonSubexpr",  // a pure value computed twice in a block computed once
      "DeadCodeElimination",     // unused bindings without effects removed
      "DispatchTIR",             // operator calls -> call_tir of hand-written programs with attrs {dispatch = "op"}
      "LegalizeOps",             // operator calls -> call_tir of generated default kernels (NCHWc, packed weights)
      "FuseOps",                 // elementwise chains and epilogues grouped into primitive functions
      "FuseTIR",                 // each primitive function -> one fused kernel
      "CallTIRRewrite",          // call_tir / call_dps_packed -> alloc_tensor + a destination-passing call
      "PlanMemory",              // intermediates -> views of an arena or reused symbolic storages
      "VMShapeLower",            // shape heap, parameter checks, match_shape / make_shape, shape functions
      "KillAfterLastUse",        // kill(x) after the last use of every object
      "WellFormed",              // the lowered module still satisfies every invariant
  };
}

transform::Pipeline DefaultPipeline() {
  RegisterCompilerPasses();
  StatusOr<transform::Pipeline> pipeline = transform::Pipeline::FromNames(DefaultPipelinePassNames());
  assert(pipeline.ok() && "a built-in pass is missing from the registry");
  return std::move(pipeline).value();
}

}  // namespace strata::driver
