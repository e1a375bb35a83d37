// CompileContext: see compile_context.h.
#include "compiler/driver/compile_context.h"

#include "compiler/driver/compile.h"

namespace strata::driver {

StatusOr<CompileContext> MakeCompileContext(const CompileOptions& options) {
  CompileContext context;
  STRATA_ASSIGN_OR_RETURN(context.cpu, codegen::ResolveCpuTarget(options.codegen));
  context.passes.target.cpu = context.cpu.cpu;
  context.passes.target.vector_bits = context.cpu.vector_bits;
  context.passes.target.cpu_features = context.cpu.required_cpu_features;
  context.passes.nchwc_layout = options.nchwc_layout;
  return context;
}

}  // namespace strata::driver
