// The default kernels of matmul, dense and packed_matmul (what LegalizeOps
// generates, see compiler/op/linear_algebra.cc) against oneDNN's matmul
// primitive and OpenBLAS.
//
// The kernels come from the compiler exactly as a model gets them: a one-call
// graph function is parsed, normalized and legalized, and the generated tensor
// program is compiled by the LLVM codegen for this CPU and called through the
// kernel ABI as the VM calls it. Each Strata row reports `ratio_vs_onednn` and
// `ratio_vs_openblas`: the library's time on the same problem (with its own
// threads) divided by the kernel's time, so more than 1 is faster than the
// library. Both times in a ratio are the best of the same number of batches,
// measured in the same run in alternating rounds (kernel, oneDNN, OpenBLAS):
// the same statistic on both sides, taken while the machine is in the same
// state, which keeps the ratios meaningful on a machine shared with other work.
// (The row's own time is Google Benchmark's mean, which a busy neighbour
// raises; a best-of baseline against it understated the kernel by up to 10%.) Every result is checked against OpenBLAS
// (and oneDNN's against it too) before anything is timed.
//   Matmul/<variant>/<m>/<k>/<n>   y = matmul(x, w), x (m, k), w (k, n), both given per call
//   Dense/<variant>/<m>/<k>/<n>    y = dense(x, w),  x (m, k), w (n, k), both given per call
//   Packed/<variant>/<m>/<k>/<n>   y = dense(x, w) with w a constant of the model: Strata's
//                                  PackWeights panels (packed_matmul), oneDNN's weights in the
//                                  layout its primitive prefers, reordered once, as a
//                                  framework caches them (OpenBLAS has no such form: it packs
//                                  per call)
// The library rows time the libraries themselves.
//
// --shapes=MxKxN,MxKxN,... replaces the default problems (every operator gets
// them), for sweeps of the uneven sizes models meet at run time:
//   legalized_matmul_bench --shapes=33x800x500,59x800x500,64x800x500 --benchmark_filter=Packed
#include <algorithm>
#include <cblas.h>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <benchmark/benchmark.h>
#include <dnnl.hpp>

#include "abi/kernel_abi.h"
#include "benchmarks/bench_util.h"
#include "compiler/codegen/llvm/codegen_llvm.h"
#include "compiler/ir/parser.h"
#include "compiler/op/gemm_panels.h"
#include "compiler/transform/legalize_ops.h"
#include "compiler/transform/normalize.h"
#include "vm/kernel_runtime.h"
#include "vm/native_module.h"

namespace strata::bench {
namespace {

enum class Op { kMatmul, kDense, kPacked };
enum class Variant { kStrata, kOneDnn, kOpenBlas };

// One graph function per operator; the legalized kernel of each is named after
// it. packed_matmul's kernel depends on n (an attribute), so its program is
// made per n.
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

std::string PackedProgram(int64_t n) {
  const std::string ns = std::to_string(n);
  return "func @packed_main(x: Tensor[(m, k), f32], p: Tensor[(t, k, " + std::to_string(op::kGemmPanelWidth) +
         "), f32]) -> Tensor[(m, " + ns + "), f32] {\n  dataflow {\n    y = packed_matmul(x, p, n=" + ns +
         ")\n    output y\n  }\n  return y\n}\n";
}

// Legalized kernels, compiled and loaded once per program for the whole run.
class Kernels {
 public:
  static StrataKernelFn Get(Op op, int64_t n) {
    static std::map<std::string, std::unique_ptr<Kernels>> cache;
    const std::string program = op == Op::kPacked ? PackedProgram(n) : kProgram;
    std::unique_ptr<Kernels>& k = cache[program];
    if (!k) k.reset(new Kernels(program));
    return k->fns_.at(op == Op::kMatmul ? "matmul" : op == Op::kDense ? "dense" : "packed_matmul");
  }

 private:
  explicit Kernels(const std::string& program) {
    ir::IRModule module = OrDie(ir::ParseModule(program, "legalized_matmul_bench.sir"));
    module = OrDie(transform::LegalizeOps(OrDie(transform::Normalize(std::move(module)))));
    std::vector<std::pair<std::string, tir::PrimFunc>> funcs;
    for (const char* name : {"matmul", "dense", "packed_matmul"}) {
      if (module.GetPrimFunc(name) != nullptr) funcs.emplace_back(name, module.GetPrimFunc(name));
    }
    compiled_ = OrDie(codegen::CompileTensorPrograms(funcs));
    module_ = OrDie(vm::NativeModule::Load(compiled_.shared_object, "bench"));
    for (const auto& [name, func] : funcs) fns_[name] = OrDie(module_->Lookup(compiled_.symbols.at(name)));
  }
  codegen::CompiledKernels compiled_;
  std::unique_ptr<vm::NativeModule> module_;
  std::map<std::string, StrataKernelFn> fns_;
};

// Rows of the panels of a weight with n output features and k inputs, as a
// (panels * k) x width matrix.
int64_t PanelRows(int64_t n, int64_t k) { return (n + op::kGemmPanelWidth - 1) / op::kGemmPanelWidth * k; }

// The panels of gemm_panels.h for dense's weight w (n x k): B = w^T.
void PackPanels(const Matrix& w, Matrix& p) {
  const int64_t n = w.shape[0], k = w.shape[1], width = op::kGemmPanelWidth;
  const int64_t panels = (n + width - 1) / width;
  std::fill(p.data.begin(), p.data.end(), 0.0f);
  for (int64_t t = 0; t < panels; ++t)
    for (int64_t kk = 0; kk < k; ++kk)
      for (int64_t c = 0; c < width && t * width + c < n; ++c)
        p.data[static_cast<size_t>((t * k + kk) * width + c)] = w.data[static_cast<size_t>((t * width + c) * k + kk)];
}

// oneDNN's matmul on the problem's buffers. A constant weight (Packed) is
// reordered once into the layout the primitive prefers.
class OneDnnMatmul {
 public:
  OneDnnMatmul(Op op, int64_t m, int64_t k, int64_t n, float* x, float* w, float* y)
      : engine_(dnnl::engine::kind::cpu, 0), stream_(engine_) {
    using tag = dnnl::memory::format_tag;
    using dt = dnnl::memory::data_type;
    const dnnl::memory::desc x_md({m, k}, dt::f32, tag::ab);
    // matmul's w is k x n row-major (ab); dense's is n x k row-major, i.e. a
    // k x n matrix stored column-major (ba).
    const dnnl::memory::desc w_user_md({k, n}, dt::f32, op == Op::kMatmul ? tag::ab : tag::ba);
    const dnnl::memory::desc y_md({m, n}, dt::f32, tag::ab);
    const dnnl::memory::desc w_md = op == Op::kPacked ? dnnl::memory::desc({k, n}, dt::f32, tag::any) : w_user_md;
    dnnl::matmul::desc desc(x_md, w_md, y_md);
    pd_ = dnnl::matmul::primitive_desc(desc, engine_);
    matmul_ = dnnl::matmul(pd_);
    x_ = dnnl::memory(x_md, engine_, x);
    y_ = dnnl::memory(y_md, engine_, y);
    dnnl::memory w_user(w_user_md, engine_, w);
    if (pd_.weights_desc() == w_user_md) {
      w_ = w_user;
    } else {
      w_ = dnnl::memory(pd_.weights_desc(), engine_);
      dnnl::reorder(w_user, w_).execute(stream_, w_user, w_);
      stream_.wait();
    }
  }
  void Run() {
    matmul_.execute(stream_, {{DNNL_ARG_SRC, x_}, {DNNL_ARG_WEIGHTS, w_}, {DNNL_ARG_DST, y_}});
    stream_.wait();
  }
  std::string implementation() const { return pd_.impl_info_str(); }

 private:
  dnnl::engine engine_;
  dnnl::stream stream_;
  dnnl::matmul::primitive_desc pd_;
  dnnl::matmul matmul_;
  dnnl::memory x_, w_, y_;
};

// One problem: x (m, k), w (k, n) for matmul or (n, k) for dense and packed,
// y (m, n); the weight's panels for packed.
struct Problem {
  Problem(Op op, int64_t m, int64_t k, int64_t n)
      : op(op),
        m(m),
        k(k),
        n(n),
        x(m, k, 1),
        w(op == Op::kMatmul ? k : n, op == Op::kMatmul ? n : k, 2),
        y(m, n, 3),
        panels(op == Op::kPacked ? PanelRows(n, k) : 0, op::kGemmPanelWidth, 0) {
    if (op == Op::kPacked) {
      PackPanels(w, panels);
      panels_shape[0] = panels.shape[0] / k;
      panels_shape[1] = k;
      panels_shape[2] = op::kGemmPanelWidth;
      panels.dl.ndim = 3;
      panels.dl.shape = panels_shape;
    }
    onednn = std::make_unique<OneDnnMatmul>(op, m, k, n, x.data.data(), w.data.data(), y.data.data());
  }
  void Run(Variant v) {
    if (v == Variant::kOneDnn) return onednn->Run();
    if (v == Variant::kOpenBlas) {
      const bool transposed = op != Op::kMatmul;
      cblas_sgemm(CblasRowMajor, CblasNoTrans, transposed ? CblasTrans : CblasNoTrans, static_cast<int>(m),
                  static_cast<int>(n), static_cast<int>(k), 1.0f, x.data.data(), static_cast<int>(k), w.data.data(),
                  static_cast<int>(transposed ? k : n), 0.0f, y.data.data(), static_cast<int>(n));
      return;
    }
    StrataKernelArg args[3];
    int32_t codes[3] = {STRATA_ARG_TENSOR, STRATA_ARG_TENSOR, STRATA_ARG_TENSOR};
    args[0].tensor = &x.dl;
    args[1].tensor = op == Op::kPacked ? &panels.dl : &w.dl;
    args[2].tensor = &y.dl;
    if (kernel(args, codes, 3) != 0) Die(vm::TakeKernelError());
  }
  Op op;
  int64_t m, k, n;
  Matrix x, w, y, panels;
  int64_t panels_shape[3] = {0, 0, 0};
  std::unique_ptr<OneDnnMatmul> onednn;
  StrataKernelFn kernel = nullptr;
};

const char* OpName(Op op) { return op == Op::kMatmul ? "Matmul" : op == Op::kDense ? "Dense" : "Packed"; }

// The problem, checked, and its baselines' times, per shape.
void Settle() { std::this_thread::sleep_for(std::chrono::milliseconds(250)); }

struct Fixture {
  Fixture(Op op, int64_t m, int64_t k, int64_t n) : p(op, m, k, n) {
    p.kernel = Kernels::Get(op, n);
    const std::string what =
        std::string(OpName(op)) + " " + std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n);
    p.Run(Variant::kOpenBlas);
    const std::vector<float> expected = p.y.data;
    for (Variant v : {Variant::kStrata, Variant::kOneDnn}) {
      std::fill(p.y.data.begin(), p.y.data.end(), NAN);
      p.Run(v);
      for (size_t i = 0; i < expected.size(); ++i) {
        if (!(std::fabs(p.y.data[i] - expected[i]) <= 1e-5 * static_cast<double>(k) * (1.0 + std::fabs(expected[i])))) {
          Die(what + (v == Variant::kStrata ? " Strata" : " oneDNN") + ": element " + std::to_string(i) + " is " +
              std::to_string(p.y.data[i]) + ", OpenBLAS gives " + std::to_string(expected[i]));
        }
      }
    }
    // Alternate rounds, so that the baselines see the load the kernel sees.
    for (int round = 0; round < 3; ++round) {
      // Each side starts after a pause: the side before it leaves worker
      // threads spinning for up to ~0.1 s (OpenBLAS's wait loop), and on 2
      // cores they took one from the next side's every batch (a 90 us GEMM
      // measured 171 us right after OpenBLAS).
      Settle();
      strata_seconds = std::min(strata_seconds, SecondsPerCall([&] { p.Run(Variant::kStrata); }));
      Settle();
      onednn_seconds = std::min(onednn_seconds, SecondsPerCall([&] { p.Run(Variant::kOneDnn); }));
      Settle();
      openblas_seconds = std::min(openblas_seconds, SecondsPerCall([&] { p.Run(Variant::kOpenBlas); }));
    }
    std::fprintf(stderr, "%s: oneDNN implementation %s\n", what.c_str(), p.onednn->implementation().c_str());
  }
  Problem p;
  double strata_seconds = 1e30, onednn_seconds = 1e30, openblas_seconds = 1e30;
};

Fixture& GetFixture(Op op, int64_t m, int64_t k, int64_t n) {
  static std::map<std::tuple<Op, int64_t, int64_t, int64_t>, std::unique_ptr<Fixture>> fixtures;
  std::unique_ptr<Fixture>& f = fixtures[{op, m, k, n}];
  if (!f) f = std::make_unique<Fixture>(op, m, k, n);
  return *f;
}

void BM_Gemm(benchmark::State& state, Op op, Variant variant) {
  Fixture& f = GetFixture(op, state.range(0), state.range(1), state.range(2));
  for (auto _ : state) {
    f.p.Run(variant);
    benchmark::DoNotOptimize(f.p.y.data.data());
    benchmark::ClobberMemory();
  }
  state.counters["GFLOPS"] =
      benchmark::Counter(2.0 * static_cast<double>(f.p.m * f.p.k * f.p.n),
                         benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
  if (variant == Variant::kStrata) {
    state.counters["best_us"] = f.strata_seconds * 1e6;
    state.counters["onednn_us"] = f.onednn_seconds * 1e6;
    state.counters["openblas_us"] = f.openblas_seconds * 1e6;
    state.counters["ratio_vs_onednn"] = f.onednn_seconds / f.strata_seconds;
    state.counters["ratio_vs_openblas"] = f.openblas_seconds / f.strata_seconds;
  }
}

}  // namespace
}  // namespace strata::bench

namespace {

// The problems of --shapes=MxKxN,... (removed from argv), or none when absent.
struct GemmShape {
  int64_t m, k, n;
};
std::vector<GemmShape> TakeShapesFlag(int* argc, char** argv) {
  std::vector<GemmShape> shapes;
  const std::string flag = "--shapes=";
  int kept = 1;
  for (int i = 1; i < *argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind(flag, 0) != 0) {
      argv[kept++] = argv[i];
      continue;
    }
    size_t at = flag.size();
    while (at < arg.size()) {
      size_t end = arg.find(',', at);
      if (end == std::string::npos) end = arg.size();
      GemmShape s{};
      char tail = 0;
      if (std::sscanf(arg.substr(at, end - at).c_str(), "%ldx%ldx%ld%c", &s.m, &s.k, &s.n, &tail) != 3 || s.m <= 0 ||
          s.k <= 0 || s.n <= 0) {
        std::fprintf(stderr, "--shapes: '%s' is not MxKxN with positive sizes\n", arg.substr(at, end - at).c_str());
        std::exit(2);
      }
      shapes.push_back(s);
      at = end + 1;
    }
  }
  *argc = kept;
  return shapes;
}

}  // namespace

int main(int argc, char** argv) {
  using strata::bench::Op;
  using strata::bench::Variant;
  using Shape = GemmShape;
  const std::vector<Shape> requested = TakeShapesFlag(&argc, argv);
  // Square problems; a layer at batch 1 and 16 (the issue's targets); BERT-base
  // at sequence 128 and GPT-2 at sequence 64 (with its 50257-word LM head).
  const std::vector<Shape> square = {{256, 256, 256}, {512, 512, 512}, {1024, 1024, 1024}};
  const std::vector<Shape> layers = {{1, 768, 3072},   {16, 768, 768},  {128, 768, 768}, {128, 768, 3072},
                                     {128, 3072, 768}, {64, 768, 2304}, {64, 768, 50257}};
  const std::pair<const char*, Variant> variants[] = {
      {"Strata", Variant::kStrata}, {"oneDNN", Variant::kOneDnn}, {"OpenBLAS", Variant::kOpenBlas}};
  for (Op op : {Op::kMatmul, Op::kDense, Op::kPacked}) {
    for (const auto& [variant_name, variant] : variants) {
      auto* bench = benchmark::RegisterBenchmark((std::string(strata::bench::OpName(op)) + "/" + variant_name).c_str(),
                                                 strata::bench::BM_Gemm, op, variant);
      if (!requested.empty()) {
        for (const Shape& s : requested) bench->Args({s.m, s.k, s.n});
      } else {
        for (const Shape& s : square) bench->Args({s.m, s.k, s.n});
        if (op == Op::kMatmul) bench->Args({1, 1024, 1024})->Args({16, 1024, 1024});
        if (op != Op::kMatmul) {
          for (const Shape& s : layers) bench->Args({s.m, s.k, s.n});
        }
      }
      bench->ArgNames({"m", "k", "n"})->Unit(benchmark::kMicrosecond)->UseRealTime();
    }
  }
  const bool json = strata::bench::JsonRequested(argc, argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  strata::bench::RunBenchmarksWithRatios(json, {});
  benchmark::Shutdown();
  return 0;
}
