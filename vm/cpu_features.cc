#include "vm/cpu_features.h"

#include <algorithm>
#include <array>

namespace strata::vm {
namespace {

struct CheckableFeature {
  std::string_view name;
  bool (*supported)();
};

#if defined(__x86_64__)
// __builtin_cpu_supports takes only string literals, hence one function per name.
// It also checks that the OS saves the wide registers (XCR0) for AVX and AVX-512.
#define STRATA_X86_FEATURE(name)                           \
  CheckableFeature {                                       \
    name, [] { return __builtin_cpu_supports(name) != 0; } \
  }
constexpr std::array kFeatures = {
    STRATA_X86_FEATURE("sse2"),
    STRATA_X86_FEATURE("sse3"),
    STRATA_X86_FEATURE("ssse3"),
    STRATA_X86_FEATURE("sse4.1"),
    STRATA_X86_FEATURE("sse4.2"),
    STRATA_X86_FEATURE("popcnt"),
    STRATA_X86_FEATURE("avx"),
    STRATA_X86_FEATURE("avx2"),
    STRATA_X86_FEATURE("fma"),
    STRATA_X86_FEATURE("f16c"),
    STRATA_X86_FEATURE("bmi"),
    STRATA_X86_FEATURE("bmi2"),
    STRATA_X86_FEATURE("movbe"),
    STRATA_X86_FEATURE("avx512f"),
    STRATA_X86_FEATURE("avx512bw"),
    STRATA_X86_FEATURE("avx512cd"),
    STRATA_X86_FEATURE("avx512dq"),
    STRATA_X86_FEATURE("avx512vl"),
    STRATA_X86_FEATURE("avx512ifma"),
    STRATA_X86_FEATURE("avx512vbmi"),
    STRATA_X86_FEATURE("avx512vbmi2"),
    STRATA_X86_FEATURE("avx512vnni"),
    STRATA_X86_FEATURE("avx512bf16"),
    STRATA_X86_FEATURE("avx512bitalg"),
    STRATA_X86_FEATURE("avx512vpopcntdq"),
    STRATA_X86_FEATURE("avxvnni"),
    STRATA_X86_FEATURE("gfni"),
};
#undef STRATA_X86_FEATURE
constexpr std::array<std::string_view, kFeatures.size()> kFeatureNames = [] {
  std::array<std::string_view, kFeatures.size()> names{};
  for (size_t i = 0; i < kFeatures.size(); ++i) names[i] = kFeatures[i].name;
  return names;
}();
#else
constexpr std::array<CheckableFeature, 0> kFeatures = {};
constexpr std::array<std::string_view, 0> kFeatureNames = {};
#endif

}  // namespace

std::span<const std::string_view> CheckableCpuFeatures() { return kFeatureNames; }

std::optional<bool> HostHasCpuFeature(std::string_view feature) {
  for (const CheckableFeature& f : kFeatures) {
    if (f.name == feature) return f.supported();
  }
  return std::nullopt;
}

Status CheckCpuFeatures(std::span<const std::string> required, std::string_view compiled_for_cpu,
                        const CpuFeatureProbe& probe) {
  std::string missing, unknown;
  for (const std::string& feature : required) {
    std::optional<bool> has = probe(feature);
    std::string& list = !has ? unknown : missing;
    if (has && *has) continue;
    list += (list.empty() ? "" : ", ") + feature;
  }
  if (missing.empty() && unknown.empty()) return Status::Ok();
  ErrorStatus error(StatusCode::kFailedPrecondition);  // valid code, the wrong machine
  error << "the native code was compiled for CPU '" << compiled_for_cpu << "' and ";
  if (!missing.empty()) error << "needs " << missing << ", which this CPU lacks";
  if (!missing.empty() && !unknown.empty()) error << "; it also ";
  if (!unknown.empty()) error << "needs " << unknown << ", which this runtime cannot check";
  error << " (recompile with --cpu set to this machine's CPU or an older one, e.g. --cpu=x86-64-v2)";
  return error;
}

}  // namespace strata::vm
