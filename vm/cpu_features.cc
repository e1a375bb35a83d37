#include "vm/cpu_features.h"

#include <algorithm>
#include <array>
#include <cstdlib>

#include "abi/cpu_feature_names.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace strata::vm {
namespace {

struct CheckableFeature {
  std::string_view name;
  bool (*supported)();
};

#if defined(__x86_64__)
enum class Register { kEax, kEbx, kEcx, kEdx };

// One bit of CPUID(leaf, subleaf), for the features clang's
// __builtin_cpu_supports does not name (f16c, movbe, avxvnni in clang 16).
bool CpuidBit(unsigned leaf, unsigned subleaf, Register reg, int bit) {
  unsigned regs[4] = {};
  if (__get_cpuid_max(leaf & 0x80000000u, nullptr) < leaf) return false;
  __cpuid_count(leaf, subleaf, regs[0], regs[1], regs[2], regs[3]);
  return (regs[static_cast<int>(reg)] >> bit) & 1u;
}

// AVX-encoded instructions need the OS to save the YMM registers; "avx" checks XCR0.
bool AvxStateEnabled() { return __builtin_cpu_supports("avx") != 0; }

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
    CheckableFeature{"f16c", [] { return AvxStateEnabled() && CpuidBit(1, 0, Register::kEcx, 29); }},
    STRATA_X86_FEATURE("bmi"),
    STRATA_X86_FEATURE("bmi2"),
    CheckableFeature{"movbe", [] { return CpuidBit(1, 0, Register::kEcx, 22); }},
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
    CheckableFeature{"avxvnni", [] { return AvxStateEnabled() && CpuidBit(7, 1, Register::kEax, 4); }},
    STRATA_X86_FEATURE("gfni"),
};
#undef STRATA_X86_FEATURE
#else
constexpr std::array<CheckableFeature, 0> kFeatures = {};
#endif
// The compiler records only the features of the contract's list; this runtime
// must detect exactly those, in that order.
constexpr bool DetectsTheContractsFeatures() {
  if (kFeatures.size() != abi::kCheckableCpuFeatures.size()) return false;
  for (size_t i = 0; i < kFeatures.size(); ++i) {
    if (kFeatures[i].name != abi::kCheckableCpuFeatures[i]) return false;
  }
  return true;
}
static_assert(DetectsTheContractsFeatures(), "vm/cpu_features.cc and abi/cpu_feature_names.h list different features");

}  // namespace

std::span<const std::string_view> CheckableCpuFeatures() { return abi::kCheckableCpuFeatures; }

std::optional<bool> HostHasCpuFeature(std::string_view feature) {
  for (const CheckableFeature& f : kFeatures) {
    if (f.name == feature) return f.supported();
  }
  return std::nullopt;
}

std::vector<std::string> DisabledCpuFeaturesFromEnvironment() {
  std::vector<std::string> disabled;
  const char* value = std::getenv("STRATA_DISABLE_CPU_FEATURES");
  if (value == nullptr) return disabled;
  std::string_view rest(value);
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (!item.empty()) disabled.emplace_back(item);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
  }
  return disabled;
}

bool IsDisabledCpuFeature(std::string_view feature, std::span<const std::string> disabled) {
  for (const std::string& entry : disabled) {
    if (!entry.empty() && entry.back() == '*') {
      if (feature.substr(0, entry.size() - 1) == std::string_view(entry).substr(0, entry.size() - 1)) return true;
    } else if (feature == entry) {
      return true;
    }
  }
  return false;
}

CpuFeatureProbe HostCpuFeaturesWithout(std::vector<std::string> disabled) {
  if (disabled.empty()) return HostHasCpuFeature;
  return [disabled = std::move(disabled)](std::string_view feature) -> std::optional<bool> {
    std::optional<bool> has = HostHasCpuFeature(feature);
    if (has && *has && IsDisabledCpuFeature(feature, disabled)) return false;
    return has;
  };
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
