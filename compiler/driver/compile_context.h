// CompileContext: what one compile decides once and every stage reads. The CPU
// the kernels are compiled for is resolved (and checked) here, once; the
// passes get their PassContext from it and the options (vector width, CPU
// features, NCHWc on or off), and code generation compiles for the same
// target, each compiling thread making its own LLVM target machine from it.
#pragma once

#include "compiler/codegen/llvm/codegen_llvm.h"
#include "compiler/transform/pass_context.h"
#include "support/status.h"

namespace strata::driver {

struct CompileOptions;

struct CompileContext {
  codegen::CpuTarget cpu;
  transform::PassContext passes;
};

// An unknown --cpu or --cpu-features name is an error here, before any pass runs.
StatusOr<CompileContext> MakeCompileContext(const CompileOptions& options);

}  // namespace strata::driver
