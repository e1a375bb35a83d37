// CompileContext: see compile_context.h.
#include "compiler/driver/compile_context.h"

#include <string>

namespace strata::driver {

StatusOr<CompileContext> MakeCompileContext(const CompileOptions& options) {
  CompileContext context;
  std::vector<std::string> names;  // "" alone: the host's CPU
  const std::string& list = options.codegen.cpu;
  for (size_t begin = 0;;) {
    const size_t comma = list.find(',', begin);
    names.push_back(list.substr(begin, comma == std::string::npos ? std::string::npos : comma - begin));
    if (comma == std::string::npos) break;
    begin = comma + 1;
  }
  if (names.size() > 1) {
    for (size_t i = 0; i < names.size(); ++i) {
      if (names[i].empty()) return ErrorStatus() << "--cpu '" << options.codegen.cpu << "': an empty CPU name";
      for (size_t j = 0; j < i; ++j) {
        if (names[j] == names[i]) {
          return ErrorStatus() << "--cpu '" << options.codegen.cpu << "': CPU '" << names[i] << "' is named twice";
        }
      }
    }
  }
  for (const std::string& name : names) {
    codegen::CodegenOptions one = options.codegen;
    one.cpu = name;
    STRATA_ASSIGN_OR_RETURN(codegen::CpuTarget cpu, codegen::ResolveCpuTarget(one));
    context.cpus.push_back(std::move(cpu));
  }
  const codegen::CpuTarget& first = context.cpus.front();
  context.passes.target.cpu = first.cpu;
  context.passes.target.vector_bits = first.vector_bits;
  context.passes.target.cpu_features = first.required_cpu_features;
  context.passes.nchwc_layout = options.nchwc_layout;
  return context;
}

}  // namespace strata::driver
