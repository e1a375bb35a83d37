// The default kernels of matmul and dense (what LegalizeOps generates, see
// compiler/op/linear_algebra.cc) against OpenBLAS.
//
// The kernels come from the compiler exactly as a model gets them: a one-call
// graph function is parsed, normalized and legalized, and the generated tensor
// program is compiled by the LLVM codegen for this CPU and called through the
// kernel ABI as the VM calls it. Each row reports `ratio_vs_openblas`: the time
// of cblas_sgemm on the same problem (with OpenBLAS's own threads) divided by
// the kernel's time, so more than 1 is faster than OpenBLAS. Both times are the
// best of batches measured alternately in the same run, which keeps the ratio
// meaningful on a machine shared with other work. Every result is checked
// against OpenBLAS before it is timed.
//   Matmul/<variant>/<m>/<k>/<n>   y = matmul(x, w), x (m, k), w (k, n)
//   Dense/<variant>/<m>/<k>/<n>    y = dense(x, w),  x (m, k), w (n, k)
// The OpenBLAS rows time the library itself (their ratio is 1 by definition).
#include <algorithm>
#include <cblas.h>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "benchmarks/bench_util.h"
#include "compiler/codegen/llvm/codegen_llvm.h"
#include "compiler/ir/parser.h"
#include "compiler/transform/legalize_ops.h"
#include "compiler/transform/normalize.h"
#include "vm/kernel_abi.h"
#include "vm/kernel_runtime.h"
#include "vm/native_module.h"

namespace strata::bench {
namespace {

enum class Op { kMatmul, kDense };

// One graph function per operator; the legalized kernel of each is named after it.
constexpr const char* kProgram = R"(
func @matmul_main(x: Tensor[(m, k), f32], w: Tensor[(k, n), f32]) -> Tensor[(m, n), f32] {
  dataflow {
    y = matmul(x, w)
    output y
  }
  return y
}

func @dense_main(x: Tensor[(m, k), f32], w: Tensor[(n, k), f32]) -> Tensor[(m, n), f32] {
  dataflow {
    y = dense(x, w)
    output y
  }
  return y
}
)";

// The legalized kernels, compiled and loaded once for the whole run.
class Kernels {
 public:
  static const Kernels& Get() {
    static const Kernels kernels;
    return kernels;
  }
  StrataKernelFn operator[](Op op) const { return op == Op::kMatmul ? matmul_ : dense_; }

 private:
  Kernels() {
    ir::IRModule module = OrDie(ir::ParseModule(kProgram, "legalized_matmul_bench.sir"));
    module = OrDie(transform::LegalizeOps(OrDie(transform::Normalize(std::move(module)))));
    std::vector<std::pair<std::string, tir::PrimFunc>> funcs;
    for (const char* name : {"matmul", "dense"}) funcs.emplace_back(name, module.GetPrimFunc(name));
    compiled_ = OrDie(codegen::CompileTensorPrograms(funcs));
    module_ = OrDie(vm::NativeModule::Load(compiled_.shared_object, "bench"));
    matmul_ = OrDie(module_->Lookup(compiled_.symbols.at("matmul")));
    dense_ = OrDie(module_->Lookup(compiled_.symbols.at("dense")));
  }
  codegen::CompiledKernels compiled_;
  std::unique_ptr<vm::NativeModule> module_;
  StrataKernelFn matmul_ = nullptr, dense_ = nullptr;
};

// One problem: x (m, k), w (k, n) for matmul or (n, k) for dense, y (m, n).
struct Problem {
  Problem(Op op, int64_t m, int64_t k, int64_t n)
      : op(op), m(m), k(k), n(n), x(m, k, 1), w(op == Op::kMatmul ? k : n, op == Op::kMatmul ? n : k, 2), y(m, n, 3) {}
  void RunStrata() {
    StrataKernelArg args[3];
    int32_t codes[3] = {STRATA_ARG_TENSOR, STRATA_ARG_TENSOR, STRATA_ARG_TENSOR};
    args[0].tensor = &x.dl;
    args[1].tensor = &w.dl;
    args[2].tensor = &y.dl;
    if (Kernels::Get()[op](args, codes, 3) != 0) Die(vm::TakeKernelError());
  }
  void RunOpenBlas() {
    const bool dense = op == Op::kDense;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, dense ? CblasTrans : CblasNoTrans, static_cast<int>(m),
                static_cast<int>(n), static_cast<int>(k), 1.0f, x.data.data(), static_cast<int>(k), w.data.data(),
                static_cast<int>(dense ? k : n), 0.0f, y.data.data(), static_cast<int>(n));
  }
  Op op;
  int64_t m, k, n;
  Matrix x, w, y;
};

void BM_Gemm(benchmark::State& state, Op op, bool strata) {
  Problem p(op, state.range(0), state.range(1), state.range(2));
  // The kernel's result must match OpenBLAS's before either is timed.
  p.RunOpenBlas();
  const std::vector<float> expected = p.y.data;
  std::fill(p.y.data.begin(), p.y.data.end(), NAN);
  p.RunStrata();
  for (size_t i = 0; i < expected.size(); ++i) {
    if (!(std::fabs(p.y.data[i] - expected[i]) <= 1e-5 * static_cast<double>(p.k) * (1.0 + std::fabs(expected[i])))) {
      Die(std::string(op == Op::kMatmul ? "matmul" : "dense") + ": element " + std::to_string(i) + " is " +
          std::to_string(p.y.data[i]) + ", OpenBLAS gives " + std::to_string(expected[i]));
    }
  }
  // Alternate rounds, so that both sides see the same load.
  double strata_seconds = 1e30, openblas_seconds = 1e30;
  for (int round = 0; round < 3; ++round) {
    strata_seconds = std::min(strata_seconds, SecondsPerCall([&] { p.RunStrata(); }));
    openblas_seconds = std::min(openblas_seconds, SecondsPerCall([&] { p.RunOpenBlas(); }));
  }
  for (auto _ : state) {
    if (strata) {
      p.RunStrata();
    } else {
      p.RunOpenBlas();
    }
    benchmark::DoNotOptimize(p.y.data.data());
    benchmark::ClobberMemory();
  }
  state.counters["FLOPS"] =
      benchmark::Counter(2.0 * static_cast<double>(p.m * p.k * p.n), benchmark::Counter::kIsIterationInvariantRate,
                         benchmark::Counter::kIs1000);
  state.counters["ratio_vs_openblas"] = strata ? openblas_seconds / strata_seconds : 1.0;
}

}  // namespace
}  // namespace strata::bench

int main(int argc, char** argv) {
  using strata::bench::BM_Gemm;
  using strata::bench::Op;
  for (const auto& [op_name, op] : {std::pair{"Matmul", Op::kMatmul}, std::pair{"Dense", Op::kDense}}) {
    for (const auto& [variant, strata] : {std::pair{"Strata", true}, std::pair{"OpenBLAS", false}}) {
      auto* bench = benchmark::RegisterBenchmark((std::string(op_name) + "/" + variant).c_str(), BM_Gemm, op, strata);
      for (int64_t size : {256, 512, 1024}) bench->Args({size, size, size});
      // Few rows (a small batch through a layer): the tile's rows are mostly padding.
      bench->Args({1, 1024, 1024})->Args({16, 1024, 1024});
      bench->ArgNames({"m", "k", "n"})->Unit(benchmark::kMicrosecond)->UseRealTime();
    }
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
