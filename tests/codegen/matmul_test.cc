// Compiled matmul and relu (parallel + vectorized loops over symbolic shapes)
// against plain C++ loops, at several shapes, from several threads, and from two
// modules loaded side by side.
#include <cmath>
#include <thread>

#include <gtest/gtest.h>

#include "tests/codegen/codegen_test_util.h"

namespace strata::codegen::testing {
namespace {

// Runs the compiled matmul on m x n @ n x k and compares with a double-precision
// reference; the tolerance is relative to the magnitude of the summed products.
void CheckMatmul(StrataKernelFn matmul, int64_t m, int64_t n, int64_t k, uint32_t seed) {
  HostTensor<float> a({m, n}, RandomFloats(m * n, seed));
  HostTensor<float> b({n, k}, RandomFloats(n * k, seed + 1));
  HostTensor<float> c({m, k}, std::vector<float>(m * k, 123.0f));  // the kernel must overwrite
  ASSERT_EQ(Call(matmul, {TensorArg(a.dl()), TensorArg(b.dl()), TensorArg(c.dl())}), 0) << vm::TakeKernelError();
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < k; ++j) {
      double sum = 0, magnitude = 0;
      for (int64_t r = 0; r < n; ++r) {
        double p = static_cast<double>(a[i * n + r]) * b[r * k + j];
        sum += p;
        magnitude += std::fabs(p);
      }
      ASSERT_NEAR(c[i * k + j], sum, 1e-5 * (1.0 + magnitude))
          << "at (" << i << ", " << j << ") of " << m << "x" << n << "x" << k;
    }
  }
}

TEST(CodegenMatmul, MatchesReferenceAtSeveralShapes) {
  LoadedKernels kernels({{"tir_matmul", MakeMatmul()}});
  ASSERT_KERNELS_OK(kernels);
  StrataKernelFn matmul = kernels.Get("tir_matmul");
  ASSERT_NE(matmul, nullptr);
  EXPECT_EQ(kernels.compiled().symbols.at("tir_matmul"), "strata_kernel_tir_matmul");
  CheckMatmul(matmul, 1, 1, 1, 1);
  CheckMatmul(matmul, 7, 13, 5, 2);
  CheckMatmul(matmul, 128, 256, 64, 3);
  CheckMatmul(matmul, 3, 4, 17, 4);  // a vector remainder in the j loop
}

TEST(CodegenMatmul, GenericCpuAndNoOptimization) {
  std::vector<CodegenOptions> variants(1);
  variants[0].opt_level = 0;
#if defined(__x86_64__)
  variants.emplace_back().cpu = "x86-64";  // portable code: SSE2 only
#endif
  for (const CodegenOptions& options : variants) {
    LoadedKernels kernels({{"tir_matmul", MakeMatmul()}}, options);
    ASSERT_KERNELS_OK(kernels);
    if (!options.cpu.empty()) {
      EXPECT_EQ(kernels.compiled().cpu, "x86-64");
    }
    CheckMatmul(kernels.Get("tir_matmul"), 7, 13, 5, 5);
  }
}

TEST(CodegenMatmul, EmptyShapesDoNothing) {
  LoadedKernels kernels({{"tir_matmul", MakeMatmul()}});
  ASSERT_KERNELS_OK(kernels);
  StrataKernelFn matmul = kernels.Get("tir_matmul");
  HostTensor<float> a({0, 3}), b({3, 4}), c({0, 4});
  EXPECT_EQ(Call(matmul, {TensorArg(a.dl()), TensorArg(b.dl()), TensorArg(c.dl())}), 0);
}

TEST(CodegenMatmul, InnerLoopIsVectorized) {
  IrDump dump("strata_matmul_dump");
  LoadedKernels kernels({{"tir_matmul", MakeMatmul()}}, dump.options);
  ASSERT_KERNELS_OK(kernels);
  const std::string ir = dump.Take();
  EXPECT_NE(ir.find("x float>"), std::string::npos) << "no float vector operations in the optimized IR";
  EXPECT_NE(ir.find("define i32 @strata_kernel_tir_matmul"), std::string::npos);
}

TEST(CodegenRelu, MatchesReference) {
  LoadedKernels kernels({{"tir_relu", MakeRelu()}});
  ASSERT_KERNELS_OK(kernels);
  StrataKernelFn relu = kernels.Get("tir_relu");
  for (auto [m, n] : {std::pair<int64_t, int64_t>{1, 1}, {7, 13}, {128, 64}, {0, 5}}) {
    HostTensor<float> a({m, n}, RandomFloats(m * n, 7));
    HostTensor<float> b({m, n});
    ASSERT_EQ(Call(relu, {TensorArg(a.dl()), TensorArg(b.dl())}), 0) << vm::TakeKernelError();
    for (int64_t i = 0; i < m * n; ++i) ASSERT_EQ(b[i], std::max(a[i], 0.0f));
  }
}

TEST(CodegenModules, TwoModulesLoadedAtOnce) {
  LoadedKernels first({{"tir_matmul", MakeMatmul()}}, {}, "native_modules[0]");
  LoadedKernels second({{"tir_relu", MakeRelu()}, {"tir_matmul", MakeMatmul()}}, {}, "native_modules[1]");
  ASSERT_KERNELS_OK(first);
  ASSERT_KERNELS_OK(second);
  StrataKernelFn matmul0 = first.Get("tir_matmul");
  StrataKernelFn matmul1 = second.Get("tir_matmul");
  ASSERT_NE(matmul0, nullptr);
  ASSERT_NE(matmul1, nullptr);
  EXPECT_NE(matmul0, matmul1);
  CheckMatmul(matmul0, 7, 13, 5, 11);
  CheckMatmul(matmul1, 9, 3, 21, 12);
  HostTensor<float> a({2, 3}, {-1, 2, -3, 4, -5, 6});
  HostTensor<float> b({2, 3});
  ASSERT_EQ(Call(second.Get("tir_relu"), {TensorArg(a.dl()), TensorArg(b.dl())}), 0);
  EXPECT_EQ(b.values(), (std::vector<float>{0, 2, 0, 4, 0, 6}));
}

// Programs compile in one LLVM module per thread, linked into one shared object:
// every part's kernels (parallel ones too, which reach the runtime through
// the API slot only the first part defines) load and run, and the shared
// object is the same whatever the thread count.
TEST(CodegenModules, ProgramsCompiledOnSeveralThreadsLinkIntoOneModule) {
  std::vector<std::pair<std::string, PrimFunc>> programs;
  for (int i = 0; i < 5; ++i) {
    programs.emplace_back("matmul" + std::to_string(i), MakeMatmul());
    programs.emplace_back("relu" + std::to_string(i), MakeRelu());
  }
  for (int threads : {1, 3, 16}) {
    SCOPED_TRACE("threads=" + std::to_string(threads));
    CodegenOptions options;
    options.threads = threads;
    LoadedKernels kernels(programs, options);
    ASSERT_KERNELS_OK(kernels);
    for (int i = 0; i < 5; ++i) {
      StrataKernelFn matmul = kernels.Get("matmul" + std::to_string(i));
      ASSERT_NE(matmul, nullptr);
      CheckMatmul(matmul, 33, 7, 19, 40 + i);
      HostTensor<float> a({1, 3}, {-1, 2, -3});
      HostTensor<float> b({1, 3});
      ASSERT_EQ(Call(kernels.Get("relu" + std::to_string(i)), {TensorArg(a.dl()), TensorArg(b.dl())}), 0);
      EXPECT_EQ(b.values(), (std::vector<float>{0, 2, 0}));
    }
  }
}

TEST(CodegenModules, SymbolsAreSanitizedAndUnique) {
  LoadedKernels kernels({{"relu.v1", MakeRelu()}, {"relu_v1", MakeRelu()}});
  ASSERT_KERNELS_OK(kernels);
  EXPECT_EQ(kernels.compiled().symbols.at("relu.v1"), "strata_kernel_relu_v1");
  EXPECT_EQ(kernels.compiled().symbols.at("relu_v1"), "strata_kernel_relu_v1_1");
  for (const char* name : {"relu.v1", "relu_v1"}) {
    HostTensor<float> a({1, 2}, {-1, 1});
    HostTensor<float> b({1, 2});
    ASSERT_EQ(Call(kernels.Get(name), {TensorArg(a.dl()), TensorArg(b.dl())}), 0);
    EXPECT_EQ(b.values(), (std::vector<float>{0, 1}));
  }
  // Errors name the program as the user wrote it.
  HostTensor<float> wrong({3});
  HostTensor<float> b({1, 2});
  EXPECT_NE(Call(kernels.Get("relu.v1"), {TensorArg(wrong.dl()), TensorArg(b.dl())}), 0);
  EXPECT_EQ(vm::TakeKernelError(), "relu.v1: argument 'A' (#0): expected ndim 2, got 1");
}

TEST(CodegenConcurrency, SameKernelFromFourThreads) {
  LoadedKernels kernels({{"tir_matmul", MakeMatmul()}});
  ASSERT_KERNELS_OK(kernels);
  StrataKernelFn matmul = kernels.Get("tir_matmul");
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([matmul, t] {
      for (int iteration = 0; iteration < 5; ++iteration) {
        CheckMatmul(matmul, 16 + t * 7, 33 + iteration, 40 - t, 100 * t + iteration);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
}

}  // namespace
}  // namespace strata::codegen::testing
