// The CPU the kernels are compiled for: explicit CPUs and feature strings, the
// features recorded for the runtime's check, and clear errors for unknown names.
#include <algorithm>

#include <gtest/gtest.h>

#include "tests/codegen/codegen_test_util.h"
#include "vm/cpu_features.h"

namespace strata::codegen::testing {
namespace {

bool Has(const std::vector<std::string>& list, const std::string& name) {
  return std::find(list.begin(), list.end(), name) != list.end();
}

TEST(CodegenTarget, HostCodeRequiresOnlyFeaturesThisCpuHas) {
  StatusOr<CompiledKernels> compiled = CompileTensorPrograms({{"tir_relu", MakeRelu()}});
  ASSERT_TRUE(compiled.ok()) << compiled.status().message();
  EXPECT_TRUE(vm::CheckCpuFeatures(compiled->cpu_features, compiled->cpu).ok());
#if defined(__x86_64__)
  EXPECT_TRUE(Has(compiled->cpu_features, "sse2"));
#endif
  for (const std::string& feature : compiled->cpu_features) {
    EXPECT_EQ(vm::HostHasCpuFeature(feature), std::optional<bool>(true)) << feature;
  }
}

#if defined(__x86_64__)
TEST(CodegenTarget, ExplicitCpuRecordsExactlyItsCheckableFeatures) {
  CodegenOptions options;
  options.cpu = "x86-64-v2";
  StatusOr<CompiledKernels> v2 = CompileTensorPrograms({{"tir_relu", MakeRelu()}}, options);
  ASSERT_TRUE(v2.ok()) << v2.status().message();
  EXPECT_EQ(v2->cpu, "x86-64-v2");
  // x86-64-v2 is defined as SSE3, SSSE3, SSE4.1, SSE4.2 and POPCNT on top of the baseline.
  EXPECT_EQ(v2->cpu_features, (std::vector<std::string>{"sse2", "sse3", "ssse3", "sse4.1", "sse4.2", "popcnt"}));

  options.cpu = "skylake-avx512";
  StatusOr<CompiledKernels> avx512 = CompileTensorPrograms({{"tir_relu", MakeRelu()}}, options);
  ASSERT_TRUE(avx512.ok()) << avx512.status().message();
  for (const char* feature : {"avx2", "fma", "avx512f", "avx512bw", "avx512dq", "avx512vl"}) {
    EXPECT_TRUE(Has(avx512->cpu_features, feature)) << feature;
  }
}

TEST(CodegenTarget, FeatureStringAddsAndRemovesFeatures) {
  CodegenOptions options;
  options.cpu = "x86-64-v3";
  options.features = "-fma";
  StatusOr<CompiledKernels> without_fma = CompileTensorPrograms({{"tir_relu", MakeRelu()}}, options);
  ASSERT_TRUE(without_fma.ok()) << without_fma.status().message();
  EXPECT_TRUE(Has(without_fma->cpu_features, "avx2"));
  EXPECT_FALSE(Has(without_fma->cpu_features, "fma"));
  // Enabling a feature enables what it implies: AVX-512F brings AVX2 and FMA.
  options.cpu = "x86-64-v2";
  options.features = "+avx512f";
  StatusOr<CompiledKernels> with_avx512 = CompileTensorPrograms({{"tir_relu", MakeRelu()}}, options);
  ASSERT_TRUE(with_avx512.ok()) << with_avx512.status().message();
  for (const char* feature : {"avx512f", "avx2", "fma", "avx"}) {
    EXPECT_TRUE(Has(with_avx512->cpu_features, feature)) << feature;
  }
}

TEST(CodegenTarget, PortableCodeRunsHere) {
  CodegenOptions options;
  options.cpu = "x86-64";
  LoadedKernels kernels({{"tir_relu", MakeRelu()}}, options);
  ASSERT_KERNELS_OK(kernels);
  EXPECT_EQ(kernels.compiled().cpu_features, (std::vector<std::string>{"sse2"}));
  HostTensor<float> x({1, 4}, {-1.5f, 0.0f, 2.5f, -0.0f});
  HostTensor<float> y({1, 4}, {9, 9, 9, 9});
  ASSERT_EQ(Call(kernels.Get("tir_relu"), {TensorArg(x.dl()), TensorArg(y.dl())}), 0) << vm::TakeKernelError();
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_EQ(y[2], 2.5f);
}
#endif

TEST(CodegenTarget, UnknownCpuIsAnErrorListingKnownCpus) {
  CodegenOptions options;
  options.cpu = "pentium-9000";
  StatusOr<CompiledKernels> compiled = CompileTensorPrograms({{"tir_relu", MakeRelu()}}, options);
  ASSERT_FALSE(compiled.ok());
  EXPECT_EQ(compiled.status().message().rfind("unknown CPU 'pentium-9000' for ", 0), 0u) << compiled.status().message();
#if defined(__x86_64__)
  EXPECT_NE(compiled.status().message().find("x86-64-v3"), std::string::npos) << compiled.status().message();
#endif
}

TEST(CodegenTarget, MalformedOrUnknownFeaturesAreErrors) {
  CodegenOptions options;
  options.features = "avx2";
  StatusOr<CompiledKernels> unsigned_feature = CompileTensorPrograms({{"tir_relu", MakeRelu()}}, options);
  ASSERT_FALSE(unsigned_feature.ok());
  EXPECT_EQ(unsigned_feature.status().message(), "CPU feature 'avx2' must start with + (enable) or - (disable)");
  options.features = "+sse2,+warp-drive";
  StatusOr<CompiledKernels> unknown = CompileTensorPrograms({{"tir_relu", MakeRelu()}}, options);
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().message().rfind("unknown CPU feature 'warp-drive' for ", 0), 0u)
      << unknown.status().message();
}

}  // namespace
}  // namespace strata::codegen::testing
