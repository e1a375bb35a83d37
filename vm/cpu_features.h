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
#include <vector>

#include "support/status.h"

namespace strata::vm {

// The features this build can check on the running CPU (empty when not on x86-64).
std::span<const std::string_view> CheckableCpuFeatures();

// Whether this CPU and OS support `feature`; nullopt when it cannot be checked.
std::optional<bool> HostHasCpuFeature(std::string_view feature);

using CpuFeatureProbe = std::function<std::optional<bool>(std::string_view feature)>;

// The features the runtime treats as absent whatever the CPU has, from the
// environment variable STRATA_DISABLE_CPU_FEATURES: comma-separated LLVM names,
// a name ending in '*' standing for every name with that prefix ("avx512*").
// For testing the lower-level kernels of a multi-level executable on a bigger
// machine, and for holding a mixed fleet to one level. Read at each call.
std::vector<std::string> DisabledCpuFeaturesFromEnvironment();

// Whether `feature` is one of `disabled` (exact names, or prefixes ending in '*').
bool IsDisabledCpuFeature(std::string_view feature, std::span<const std::string> disabled);

// The host's features (HostHasCpuFeature) with `disabled` reported absent.
CpuFeatureProbe HostCpuFeaturesWithout(std::vector<std::string> disabled);

// Ok when `probe` reports every feature of `required`; otherwise an error naming
// the missing (or uncheckable) features and the CPU the code was compiled for.
Status CheckCpuFeatures(std::span<const std::string> required, std::string_view compiled_for_cpu,
                        const CpuFeatureProbe& probe = HostHasCpuFeature);

}  // namespace strata::vm
