// The default lowering pipeline: a parsed (or imported) module in, a module VM
// codegen accepts out. Its order, with what each pass does, is the list in
// pipeline.cc (DefaultPipelinePassNames); the passes register themselves where
// they are defined (transform/pass.h), so adding one to the default pipeline
// touches its own file and that list.
//
// CallTIRRewrite, PlanMemory, VMShapeLower and KillAfterLastUse are built on
// graph::Normalizer and emit normalized IR, so no Normalize is needed between or
// after them. Target dispatch, BYOC and optimization passes go in with
// Pipeline::InsertBefore / InsertAfter: target dispatchers such as "cpu-blas"
// (cpu_blas_dispatch.h) go before "LegalizeOps", after DispatchTIR, so
// hand-written kernels win; LegalizeOps packs constant matmul / dense weights
// as its first step (pack_weights.h), so they still see the original calls. The
// driver runs this pipeline with the compile's PassContext (compile_context.h),
// then CodegenVM (backend/vm/vm_codegen.h) and the LLVM codegen of the tensor
// programs.
#pragma once

#include <string>
#include <vector>

#include "compiler/transform/pass.h"

namespace strata::driver {

// Registers the passes of the layers above transform/ once per process: those
// their files register (byoc/: MergeCompositeFunctions, RunCodegen;
// backend/vm/: VMShapeLower, KillAfterLastUse), FuseOpsByPattern[<backend>] of
// each built-in BYOC backend, and the driver's constant evaluator
// (EvaluateConstants) for FoldConstants. Everything that builds pipelines by
// name calls it first; it is cheap after the first call.
void RegisterCompilerPasses();

// The default pipeline's pass names, in order.
std::vector<std::string> DefaultPipelinePassNames();
// The default pipeline built from the registry (run it with a PassContext; the
// default one describes a 512-bit vector target).
transform::Pipeline DefaultPipeline();

}  // namespace strata::driver
