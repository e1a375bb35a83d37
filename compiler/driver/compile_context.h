// CompileContext: what one compile decides once and every stage reads. The CPUs
// the kernels are compiled for are resolved (and checked) here, once; the
// passes get their PassContext from the first of them and the options (vector
// width, CPU features, NCHWc on or off), and code generation compiles for each,
// each compiling thread making its own LLVM target machine from it.
//
// Several CPUs (CodegenOptions::cpu "x86-64-v4,x86-64-v3", best first) make a
// multi-level executable: the kernels once per CPU, as alternative native
// modules of which the loader loads the first the machine runs. The graph is
// lowered once, for the first CPU (its NCHWc blocks fill that CPU's vectors;
// the others run the same layout with narrower vectors).
#pragma once

#include <vector>

#include "compiler/codegen/llvm/codegen_llvm.h"
#include "compiler/driver/compile_options.h"
#include "compiler/transform/pass_context.h"
#include "support/status.h"

namespace strata::driver {

struct CompileContext {
  std::vector<codegen::CpuTarget> cpus;  // best first; never empty
  transform::PassContext passes;
};

// An unknown --cpu or --cpu-features name, or a CPU named twice, is an error
// here, before any pass runs.
StatusOr<CompileContext> MakeCompileContext(const CompileOptions& options);

}  // namespace strata::driver
