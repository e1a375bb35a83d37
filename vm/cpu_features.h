// CPU features that native code may require, checked before the code is loaded.
//
// Kernels are compiled for a CPU (the compiling machine's by default). Running
// AVX2 code on a CPU without AVX2 dies of SIGILL, so the compiler records the
// instruction-set extensions the code may use (NativeModule.cpu_features) and the
// runtime refuses a module whose features this CPU lacks, with an error that
// says which and how to recompile.
//
// Feature names are LLVM's spellings ("avx2", "fma", "avx512f"). Only features
// this runtime can check are recorded: abi/cpu_feature_names.h is the list the
// compiler filters by, and CheckableCpuFeatures() returns it.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "support/status.h"

namespace strata::vm {

// The features this build can check on the running CPU (empty when not on x86-64).
std::span<const std::string_view> CheckableCpuFeatures();

// Whether this CPU and OS support `feature`; nullopt when it cannot be checked.
std::optional<bool> HostHasCpuFeature(std::string_view feature);

using CpuFeatureProbe = std::function<std::optional<bool>(std::string_view feature)>;

// Ok when `probe` reports every feature of `required`; otherwise an error naming
// the missing (or uncheckable) features and the CPU the code was compiled for.
Status CheckCpuFeatures(std::span<const std::string> required, std::string_view compiled_for_cpu,
                        const CpuFeatureProbe& probe = HostHasCpuFeature);

}  // namespace strata::vm
