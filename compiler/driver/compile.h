// The compile driver: source file -> executable bytes.
//
// Reads a text-IR module, runs the lowering pipeline (driver/pipeline.h),
// generates bytecode for the graph functions and native code for the tensor
// programs, and writes one executable. Every step reports user errors as a
// Status; --dump-ir support writes the module after each pass that changed it.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/codegen/llvm/codegen_llvm.h"
#include "compiler/driver/compile_context.h"
#include "compiler/ir/module.h"
#include "compiler/transform/pass.h"
#include "support/status.h"

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

// Reads and parses a .sir file; parse errors carry file:line:col.
StatusOr<ir::IRModule> LoadModuleFile(const std::string& path);

// Lowers `module` and returns the executable file's bytes.
// Times the stages around the passes (import, code generation, writing) for
// --time-passes, printed like the passes' times: End(name) prints the time
// since construction or the previous End.
class StageTimer {
 public:
  explicit StageTimer(bool print) : print_(print) {}
  void End(const char* name);

 private:
  bool print_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

StatusOr<std::vector<uint8_t>> Compile(ir::IRModule module, const CompileOptions& options);

// Compile, written to `path` straight from the flatbuffer builder (no second
// in-memory copy of the weights); the error of a failed write names the path.
Status CompileToFile(ir::IRModule module, const CompileOptions& options, const std::string& path);

// Runs the (extended) pipeline only, returning the lowered module.
StatusOr<ir::IRModule> Lower(ir::IRModule module, const CompileOptions& options);
// The same, with the context of a compile already under way.
StatusOr<ir::IRModule> Lower(ir::IRModule module, const CompileOptions& options, const CompileContext& context);

}  // namespace strata::driver
