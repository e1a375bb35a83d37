// What Strata's generated kernels cost against hand-written C++ and OpenBLAS.
//
// The tensor programs are the ones of examples/matmul_relu.sir (parallel outer
// loop, vectorized inner loop), compiled by the LLVM codegen for this CPU and
// called through the kernel ABI exactly as the VM calls them. Each benchmark
// reports, next to its time, `speedup_vs_cpp`: the time of the same loop nest
// written in C++ (built with this project's compiler flags, single thread),
// measured in the same run, divided by its own time. Variants:
//   CppLoop          the baseline (i, r, j loop order, as the tensor program)
//   StrataSerial     the tensor program with every loop `range` (one thread)
//   Strata           the example as written: parallel i, vectorized j
//   OpenBLAS         cblas_sgemm (matmul only), the library bound
// Every variant's result is checked against the baseline before it is timed.
#include <algorithm>
#include <cblas.h>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "abi/kernel_abi.h"
#include "benchmarks/bench_util.h"
#include "compiler/codegen/llvm/codegen_llvm.h"
#include "compiler/ir/parser.h"
#include "vm/kernel_runtime.h"
#include "vm/native_module.h"

namespace strata::bench {
namespace {

// The example's programs, and the same ones with every loop serial.
constexpr const char* kPrograms = R"(
prim_func @matmul(A: Buffer[(m, n), f32], B: Buffer[(n, k), f32], C: Buffer[(m, k), f32]) {
  for i in parallel(0, m) {
    for j in range(0, k) {
      C[i, j] = 0.0
    }
    for r in range(0, n) {
      let a: f32 = A[i, r]
      for j in vectorized(0, k) {
        C[i, j] = C[i, j] + a * B[r, j]
      }
    }
  }
}

prim_func @matmul_serial(A: Buffer[(m, n), f32], B: Buffer[(n, k), f32], C: Buffer[(m, k), f32]) {
  for i in range(0, m) {
    for j in range(0, k) {
      C[i, j] = 0.0
    }
    for r in range(0, n) {
      let a: f32 = A[i, r]
      for j in range(0, k) {
        C[i, j] = C[i, j] + a * B[r, j]
      }
    }
  }
}

prim_func @relu(A: Buffer[(m, n), f32], B: Buffer[(m, n), f32]) {
  for i in parallel(0, m) {
    for j in vectorized(0, n) {
      B[i, j] = max(A[i, j], 0.0)
    }
  }
}

prim_func @relu_serial(A: Buffer[(m, n), f32], B: Buffer[(m, n), f32]) {
  for i in range(0, m) {
    for j in range(0, n) {
      B[i, j] = max(A[i, j], 0.0)
    }
  }
}
)";

// The compiled programs, loaded once for the whole run.
class Kernels {
 public:
  static const Kernels& Get() {
    static const Kernels kernels;
    return kernels;
  }
  StrataKernelFn operator[](const std::string& name) const {
    StatusOr<StrataKernelFn> fn = module_->Lookup(compiled_.symbols.at(name));
    if (!fn.ok()) Die(fn.status().message());
    return *fn;
  }

 private:
  Kernels() {
    StatusOr<ir::IRModule> module = ir::ParseModule(kPrograms, "kernel_codegen_bench.sir");
    if (!module.ok()) Die(module.status().message());
    std::vector<std::pair<std::string, tir::PrimFunc>> funcs;
    for (const char* name : {"matmul", "matmul_serial", "relu", "relu_serial"}) {
      funcs.emplace_back(name, module->GetPrimFunc(name));
    }
    StatusOr<codegen::CompiledKernels> compiled = codegen::CompileTensorPrograms(funcs);
    if (!compiled.ok()) Die(compiled.status().message());
    compiled_ = std::move(compiled).value();
    StatusOr<std::unique_ptr<vm::NativeModule>> loaded = vm::NativeModule::Load(compiled_.shared_object, "bench");
    if (!loaded.ok()) Die(loaded.status().message());
    module_ = std::move(loaded).value();
  }
  codegen::CompiledKernels compiled_;
  std::unique_ptr<vm::NativeModule> module_;
};

void CallKernel(StrataKernelFn fn, std::initializer_list<DLTensor*> tensors) {
  StrataKernelArg args[3];
  int32_t codes[3];
  int32_t n = 0;
  for (DLTensor* t : tensors) {
    args[n].tensor = t;
    codes[n++] = STRATA_ARG_TENSOR;
  }
  if (fn(args, codes, n) != 0) Die(vm::TakeKernelError());
}

// --- the C++ baselines --------------------------------------------------------

void CppMatmul(const float* a, const float* b, float* c, int64_t m, int64_t n, int64_t k) {
  for (int64_t i = 0; i < m; ++i) {
    float* row = c + i * k;
    std::fill(row, row + k, 0.0f);
    for (int64_t r = 0; r < n; ++r) {
      const float x = a[i * n + r];
      const float* brow = b + r * k;
      for (int64_t j = 0; j < k; ++j) row[j] += x * brow[j];
    }
  }
}

void CppRelu(const float* a, float* b, int64_t count) {
  for (int64_t i = 0; i < count; ++i) b[i] = std::max(a[i], 0.0f);
}

void ExpectSame(const std::vector<float>& actual, const std::vector<float>& expected, const char* what,
                double tolerance) {
  for (size_t i = 0; i < expected.size(); ++i) {
    if (std::fabs(actual[i] - expected[i]) > tolerance * (1.0 + std::fabs(expected[i]))) {
      Die(std::string(what) + ": element " + std::to_string(i) + " is " + std::to_string(actual[i]) + ", expected " +
          std::to_string(expected[i]));
    }
  }
}

// --- matmul -----------------------------------------------------------------

enum class Variant { kCppLoop, kStrataSerial, kStrata, kOpenBlas };

void BM_Matmul(benchmark::State& state, Variant variant) {
  const int64_t size = state.range(0);
  Matrix a(size, size, 1), b(size, size, 2), c(size, size, 3), expected(size, size, 4);
  CppMatmul(a.data.data(), b.data.data(), expected.data.data(), size, size, size);
  static std::map<int64_t, double> baseline_seconds;
  if (!baseline_seconds.count(size)) {
    baseline_seconds[size] =
        SecondsPerCall([&] { CppMatmul(a.data.data(), b.data.data(), c.data.data(), size, size, size); });
  }
  const int blas_size = static_cast<int>(size);
  auto run = [&] {
    switch (variant) {
      case Variant::kCppLoop: CppMatmul(a.data.data(), b.data.data(), c.data.data(), size, size, size); break;
      case Variant::kStrataSerial: CallKernel(Kernels::Get()["matmul_serial"], {&a.dl, &b.dl, &c.dl}); break;
      case Variant::kStrata: CallKernel(Kernels::Get()["matmul"], {&a.dl, &b.dl, &c.dl}); break;
      case Variant::kOpenBlas:
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, blas_size, blas_size, blas_size, 1.0f, a.data.data(),
                    blas_size, b.data.data(), blas_size, 0.0f, c.data.data(), blas_size);
        break;
    }
  };
  run();
  ExpectSame(c.data, expected.data, "matmul", 1e-4 * static_cast<double>(size));
  for (auto _ : state) {
    run();
    benchmark::DoNotOptimize(c.data.data());
    benchmark::ClobberMemory();
  }
  state.counters["FLOPS"] = benchmark::Counter(2.0 * size * size * size, benchmark::Counter::kIsIterationInvariantRate,
                                               benchmark::Counter::kIs1000);
  state.counters["cpp_loop_us"] = baseline_seconds[size] * 1e6;
}

// --- relu -------------------------------------------------------------------

void BM_Relu(benchmark::State& state, Variant variant) {
  const int64_t rows = state.range(0), cols = 1024;
  Matrix a(rows, cols, 5), b(rows, cols, 6), expected(rows, cols, 7);
  CppRelu(a.data.data(), expected.data.data(), rows * cols);
  static std::map<int64_t, double> baseline_seconds;
  if (!baseline_seconds.count(rows)) {
    baseline_seconds[rows] = SecondsPerCall([&] { CppRelu(a.data.data(), b.data.data(), rows * cols); });
  }
  auto run = [&] {
    switch (variant) {
      case Variant::kCppLoop: CppRelu(a.data.data(), b.data.data(), rows * cols); break;
      case Variant::kStrataSerial: CallKernel(Kernels::Get()["relu_serial"], {&a.dl, &b.dl}); break;
      default: CallKernel(Kernels::Get()["relu"], {&a.dl, &b.dl}); break;
    }
  };
  run();
  ExpectSame(b.data, expected.data, "relu", 0);
  for (auto _ : state) {
    run();
    benchmark::DoNotOptimize(b.data.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * rows * cols * 2 * static_cast<int64_t>(sizeof(float)));
  state.counters["cpp_loop_us"] = baseline_seconds[rows] * 1e6;
}

}  // namespace
}  // namespace strata::bench

int main(int argc, char** argv) {
  using strata::bench::BM_Matmul;
  using strata::bench::BM_Relu;
  using strata::bench::Variant;
  const std::pair<const char*, Variant> variants[] = {{"CppLoop", Variant::kCppLoop},
                                                      {"StrataSerial", Variant::kStrataSerial},
                                                      {"Strata", Variant::kStrata},
                                                      {"OpenBLAS", Variant::kOpenBlas}};
  for (const auto& [name, variant] : variants) {
    benchmark::RegisterBenchmark((std::string("Matmul/") + name).c_str(), BM_Matmul, variant)
        ->Arg(64)
        ->Arg(256)
        ->Arg(512)
        ->Unit(benchmark::kMicrosecond)
        ->UseRealTime();
    if (variant != Variant::kOpenBlas) {
      benchmark::RegisterBenchmark((std::string("Relu/") + name).c_str(), BM_Relu, variant)
          ->Arg(16)
          ->Arg(1024)
          ->Unit(benchmark::kMicrosecond)
          ->UseRealTime();
    }
  }
  const bool json = strata::bench::JsonRequested(argc, argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  strata::bench::RunBenchmarksWithRatios(json, {{"cpp_loop_us", "speedup_vs_cpp"}});
  benchmark::Shutdown();
  return 0;
}
