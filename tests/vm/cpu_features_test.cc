// The CPU-feature gate in front of native code: a module compiled for features
// this CPU lacks is refused at load time instead of dying of SIGILL.
#include "vm/cpu_features.h"

#include <map>

#include <gtest/gtest.h>

#include "tests/vm/executable_builder.h"
#include "tests/vm/test_util.h"

namespace strata::testing {
namespace {

// A CPU with SSE4.2 and AVX but no AVX2, and a runtime that knows no "amx-tile".
std::optional<bool> FakeCpu(std::string_view feature) {
  static const std::map<std::string_view, bool> kCpu = {
      {"sse4.2", true}, {"avx", true}, {"avx2", false}, {"fma", false}};
  auto it = kCpu.find(feature);
  if (it == kCpu.end()) return std::nullopt;
  return it->second;
}

TEST(CpuFeaturesTest, SupportedFeaturesPass) {
  std::vector<std::string> required = {"sse4.2", "avx"};
  EXPECT_TRUE(vm::CheckCpuFeatures(required, "sandybridge", FakeCpu).ok());
  EXPECT_TRUE(vm::CheckCpuFeatures({}, "generic", FakeCpu).ok());
}

TEST(CpuFeaturesTest, MissingFeaturesAreListedWithTheCompiledCpu) {
  std::vector<std::string> required = {"sse4.2", "avx", "avx2", "fma"};
  Status status = vm::CheckCpuFeatures(required, "haswell", FakeCpu);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.message(),
            "the native code was compiled for CPU 'haswell' and needs avx2, fma, which this CPU lacks (recompile "
            "with --cpu set to this machine's CPU or an older one, e.g. --cpu=x86-64-v2)");
}

TEST(CpuFeaturesTest, FeaturesTheRuntimeCannotCheckAreRefused) {
  std::vector<std::string> required = {"avx2", "amx-tile"};
  Status status = vm::CheckCpuFeatures(required, "sapphirerapids", FakeCpu);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("needs avx2, which this CPU lacks; it also needs amx-tile, which this runtime "
                                  "cannot check"),
            std::string::npos)
      << status.message();
}

TEST(CpuFeaturesTest, HostProbeKnowsTheCheckableList) {
  for (std::string_view feature : vm::CheckableCpuFeatures()) {
    EXPECT_TRUE(vm::HostHasCpuFeature(feature).has_value()) << feature;
  }
  EXPECT_FALSE(vm::HostHasCpuFeature("no-such-feature").has_value());
#if defined(__x86_64__)
  // Every x86-64 CPU has SSE2.
  EXPECT_EQ(vm::HostHasCpuFeature("sse2"), std::optional<bool>(true));
  EXPECT_GE(vm::CheckableCpuFeatures().size(), 10u);
#endif
}

TEST(CpuFeaturesTest, LoadingRefusesAModuleNeedingAnUncheckableFeatureBeforeLoadingIt) {
  ExecutableBuilder b;
  serialization::NativeModuleSpec module;
  module.cpu = "future-cpu";
  module.code = {1, 2, 3, 4};  // never reaches the dynamic loader
  module.cpu_features = {"sse2", "quantum-ops"};
  b.spec.native_modules.push_back(module);
  EXPECT_EQ(LoadError(b.Write()),
            "native_modules[0]: the native code was compiled for CPU 'future-cpu' and needs quantum-ops, which this "
            "runtime cannot check (recompile with --cpu set to this machine's CPU or an older one, e.g. "
            "--cpu=x86-64-v2)");
}

}  // namespace
}  // namespace strata::testing
