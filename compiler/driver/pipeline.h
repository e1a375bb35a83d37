// The default lowering pipeline: a parsed (or imported) module in, a module VM
// codegen accepts out.
//
//   Normalize        struct info on every value; annotations and call_tir checked
//   WellFormed       scoping, dataflow, @names, bound symbolic variables
//   Canonicalize     reshape/transpose chains merged, identity reshapes and
//                    transposes, x * 1 and x + 0 removed (canonicalize.h)
//   FoldBatchNorm    batch_norm after a conv folded into its weight and bias,
//                    as calls on constants (fold_batch_norm.h)
//   FoldConstants    operator calls on constants alone (work on weights, the
//                    folded batch norms) computed once at compile time
//                    (transform/fold_constants.h)
//   EliminateCommonSubexpr  a pure value computed twice in a block computed once
//   DeadCodeElimination     unused bindings without effects removed; what the
//                    passes before left behind (dead_code_elimination.h)
//   DispatchTIR      operator calls -> call_tir of hand-written tensor programs
//                    that opt in with attrs {dispatch = "op"} (dispatch_tir.h)
//   LegalizeOps      operator calls -> call_tir of generated default kernels
//   FuseOps          groups of call_tir (elementwise chains, epilogues of conv2d
//                    / matmul / reductions) -> primitive functions (fuse_ops.h)
//   FuseTIR          each primitive function -> one fused kernel (fuse_tir.h)
//   CallTIRRewrite   call_tir / call_dps_packed -> alloc_tensor + DPS call
//   PlanMemory       intermediate tensors -> views of a static arena or of
//                    reused symbolic storages (plan_memory.h)
//   VMShapeLower     shape heap, parameter checks, match_shape / make_shape,
//                    shape functions for composite dimensions (backend/vm)
//   KillAfterLastUse kill(x) after the last use of every object (backend/vm)
//   WellFormed       the lowered module still satisfies every invariant
//
// CallTIRRewrite, PlanMemory, VMShapeLower and KillAfterLastUse are built on
// graph::Normalizer and emit normalized IR, so no Normalize is needed between or
// after them. Target dispatch, BYOC and optimization passes go in with
// Pipeline::InsertBefore / InsertAfter: target dispatchers such as "cpu-blas"
// (cpu_blas_dispatch.h) go before "LegalizeOps", after DispatchTIR, so
// hand-written kernels win; LegalizeOps packs constant matmul / dense weights
// as its first step (pack_weights.h), so they still see the original calls. The driver runs this pipeline, then
// CodegenVM (backend/vm/vm_codegen.h) and the LLVM codegen of the tensor programs.
#pragma once

#include <string>
#include <vector>

#include "compiler/transform/pass.h"

namespace strata::driver {

// Registers the passes of the layers above transform/ once per process:
// MergeCompositeFunctions, RunCodegen and FuseOpsByPattern[<backend>] (byoc/),
// VMShapeLower and KillAfterLastUse (backend/vm/), and FoldConstants with the
// driver's evaluator (EvaluateConstants). Everything that builds pipelines by
// name calls it first; it is cheap after the first call.
void RegisterCompilerPasses();

// The pass names above, in order.
std::vector<std::string> DefaultPipelinePassNames();
// The default pipeline built from the registry.
transform::Pipeline DefaultPipeline();

}  // namespace strata::driver
