// CompileOptions: what a caller asks of one compile (the CLI's flags, Python's
// keyword arguments), read by the driver (compile.h) and by the compile
// context it builds (compile_context.h).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "compiler/codegen/llvm/codegen_llvm.h"

namespace strata::driver {

struct CompileOptions {
  // When non-empty, the module is written to DIR/NN-PassName.sir after every pass
  // that changed it (and DIR/00-Input.sir before the first).
  std::string dump_ir_dir;
  // Passes inserted into the default pipeline: {"Anchor", "RegisteredPassName"}.
  std::vector<std::pair<std::string, std::string>> passes_before;
  std::vector<std::pair<std::string, std::string>> passes_after;
  // Text-IR files whose tensor programs are added to the module before lowering
  // (hand-written kernels that DispatchTIR can put in place of operator calls).
  std::vector<std::string> tir_library_paths;
  // BYOC backends (byoc/backend.h), in priority order: their FuseOpsByPattern
  // passes, then MergeCompositeFunctions and RunCodegen, run right after DispatchTIR.
  std::vector<std::string> byoc_backends;
  // Devices to offload to besides the CPU (strata compile --target cpu,npu):
  // "npu" is the simulated NPU plug-in; its BYOC backend (byoc/sim_npu) runs
  // after DispatchTIR and PlaceOnDevices after CallTIRRewrite.
  std::vector<std::string> device_targets;
  // Run FoldConstants (transform/fold_constants.h). Off only where the module
  // is itself the evaluation of folded constants (EvaluateConstants).
  bool fold_constants = true;
  // Run FuseOps and FuseTIR (transform/fuse_ops.h, fuse_tir.h). Off, every
  // operator is its own kernel (for debugging, and the benchmarks' baseline).
  bool fuse = true;
  // Run PlanMemory (plan_memory.h). Off, every tensor is its own allocation from
  // the VM's pool; results are bit-identical either way.
  bool plan_memory = true;
  // Convolutions with constant weights run in the blocked NCHWc layout
  // (transform/convert_to_nchwc.h, LegalizeOps' first step). Off, they stay
  // NCHW (strata compile --no-nchwc), for comparison and debugging.
  bool nchwc_layout = true;
  // Print per-pass wall time to stderr.
  bool print_pass_timing = false;
  codegen::CodegenOptions codegen;
};

}  // namespace strata::driver
