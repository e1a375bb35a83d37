// The default lowering pipeline: a parsed (or imported) module in, a module VM
// codegen accepts out.
//
//   Normalize        struct info on every value; annotations and call_tir checked
//   WellFormed       scoping, dataflow, @names, bound symbolic variables
//   DispatchTIR      operator calls -> call_tir of hand-written tensor programs
//                    that opt in with attrs {dispatch = "op"} (tir_dispatch.h)
//   LegalizeOps      operator calls -> call_tir of generated default kernels
//   CallTIRRewrite   call_tir / call_dps_packed -> alloc_tensor + DPS call
//   PlanMemory       intermediate tensors -> views of a static arena or of
//                    reused symbolic storages (plan_memory.h)
//   VMShapeLower     shape heap, parameter checks, match_shape / make_shape,
//                    shape functions for composite dimensions
//   KillAfterLastUse kill(x) after the last use of every object (kill_after_last_use.h)
//   WellFormed       the lowered module still satisfies every invariant
//
// CallTIRRewrite, PlanMemory, VMShapeLower and KillAfterLastUse are built on graph::Normalizer and emit
// normalized IR, so no Normalize is needed between or after them. Target
// dispatch, BYOC and optimization passes go in with Pipeline::InsertBefore /
// InsertAfter: target dispatchers such as "cpu-blas" (cpu_blas_dispatch.h) go
// before "LegalizeOps", after DispatchTIR, so hand-written kernels win. The driver runs this pipeline,
// then CodegenVM (vm_codegen.h) and the LLVM codegen of the tensor programs.
#pragma once

#include <string>
#include <vector>

#include "compiler/transform/pass.h"

namespace strata::transform {

// The pass names above, in order.
std::vector<std::string> DefaultPipelinePassNames();
// The default pipeline built from the registry.
Pipeline DefaultPipeline();

}  // namespace strata::transform
