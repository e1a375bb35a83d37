// CompileContext: see compile_context.h.
#include "compiler/driver/compile_context.h"

#include <algorithm>
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
  // A graph-level choice must hold at every level: the features all of them have.
  for (const std::string& feature : first.required_cpu_features) {
    bool everywhere = true;
    for (const codegen::CpuTarget& cpu : context.cpus) {
      everywhere = everywhere && std::find(cpu.required_cpu_features.begin(), cpu.required_cpu_features.end(),
                                           feature) != cpu.required_cpu_features.end();
    }
    if (everywhere) context.passes.target.cpu_features.push_back(feature);
  }
  context.passes.nchwc_layout = options.nchwc_layout;
  return context;
}

}  // namespace strata::driver
