// PassContext: what one compile tells its passes. The driver builds it once per
// compile (driver/compile_context.h) from the resolved target and the compile
// options; every pass of the pipeline reads the same one and none changes it.
// A pass takes its options from here, never by having its run function
// replaced.
#pragma once

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

namespace strata::transform {

// What passes may ask of the CPU the kernels are compiled for (the code
// generator owns the rest: codegen::CpuTarget).
struct TargetFacts {
  std::string cpu;  // LLVM's name; empty when no target was resolved
  // The widest vector register the kernels use (of the first, best, CPU level).
  // 512 unless the driver says otherwise: the layout the NCHWc kernels were
  // tuned for.
  int vector_bits = 512;
  // abi::kCheckableCpuFeatures the kernels may use ("avx2", "avx512f", ...):
  // with several CPU levels (--cpu x86-64-v4,x86-64-v3), those every level has,
  // since the graph is lowered once for all of them.
  std::vector<std::string> cpu_features;

  bool Has(std::string_view feature) const {
    return std::find(cpu_features.begin(), cpu_features.end(), feature) != cpu_features.end();
  }
};

struct PassContext {
  TargetFacts target;
  // LegalizeOps / ConvertToNchwc: convolutions with constant weights run in the
  // blocked NCHWc layout, blocks sized by target.vector_bits (strata compile
  // --no-nchwc turns it off).
  bool nchwc_layout = true;
};

}  // namespace strata::transform
