// What the default conv2d kernel costs against oneDNN.
//
// The kernel is the one LegalizeOps generates for `conv2d(x, w, ...)` with a
// symbolic batch and image size (x: Tensor[(n, C, h, w), f32]), compiled by the
// LLVM codegen for this CPU and called through the kernel ABI as the VM calls it.
// Variants:
//   OneDNN         convolution_forward, f32, the same plain NCHW input and output
//                  (weights in the layout oneDNN prefers, reordered once, as a
//                  runtime would for constant weights): the baseline
//   Strata         the legalized kernel
//   OneDNNBlocked  oneDNN with input and output in its own blocked layouts (no
//                  reorders timed): the library's bound, for reference
// Each row reports `ratio_vs_onednn`: the baseline's time, measured in the same
// run, divided by the row's time (above 1 is faster than oneDNN). Every variant's
// result is checked against the baseline before it is timed.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <dnnl.hpp>

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

struct ConvShape {
  const char* name;
  int64_t n, c, h, w, o, kh, kw, stride, pad;
  int64_t out_h() const { return (h + 2 * pad - kh) / stride + 1; }
  int64_t out_w() const { return (w + 2 * pad - kw) / stride + 1; }
  double flops() const { return 2.0 * n * o * out_h() * out_w() * c * kh * kw; }
};

// ResNet-50 layers: a 3x3 layer of the first stage, its 1x1 bottleneck
// expansion, the strided 3x3 layer that enters the second stage, and a 3x3
// layer of the third stage (many channels, small image).
constexpr ConvShape kShapes[] = {
    {"resnet3x3_64x56", 1, 64, 56, 56, 64, 3, 3, 1, 1},
    {"resnet1x1_64to256x56", 1, 64, 56, 56, 256, 1, 1, 1, 0},
    {"resnet3x3s2_128x56", 1, 128, 56, 56, 128, 3, 3, 2, 1},
    {"resnet3x3_256x14", 1, 256, 14, 14, 256, 3, 3, 1, 1},
};

// A row-major f32 tensor, filled with values in [-1, 1).
struct Tensor4 {
  Tensor4(int64_t a, int64_t b, int64_t c, int64_t d, uint32_t seed)
      : shape{a, b, c, d}, data(static_cast<size_t>(a * b * c * d)) {
    uint32_t state = seed * 2654435761u + 1;
    for (float& v : data) {
      state = state * 1664525u + 1013904223u;
      v = static_cast<float>(state >> 8) / static_cast<float>(1u << 24) * 2.0f - 1.0f;
    }
  }
  // The DLTensor view the kernel ABI takes (kernels do not write their inputs).
  DLTensor View() const {
    DLTensor dl;
    dl.data = const_cast<float*>(data.data());
    dl.device = {kDLCPU, 0};
    dl.ndim = 4;
    dl.dtype = {kDLFloat, 32, 1};
    dl.shape = const_cast<int64_t*>(shape);
    dl.strides = nullptr;
    dl.byte_offset = 0;
    return dl;
  }
  int64_t shape[4];
  std::vector<float> data;
};

// The legalized kernel of one shape, compiled and loaded.
class StrataConv {
 public:
  explicit StrataConv(const ConvShape& s) {
    const std::string weight = "(" + std::to_string(s.o) + ", " + std::to_string(s.c) + ", " + std::to_string(s.kh) +
                               ", " + std::to_string(s.kw) + ")";
    const std::string text = "func @main(x: Tensor[(n, " + std::to_string(s.c) + ", h, w), f32], wt: Tensor[" + weight +
                             ", f32]) -> Tensor[ndim=4, f32] {\n  y = conv2d(x, wt, strides=[" +
                             std::to_string(s.stride) + ", " + std::to_string(s.stride) + "], padding=[" +
                             std::to_string(s.pad) + ", " + std::to_string(s.pad) + "])\n  return y\n}\n";
    StatusOr<ir::IRModule> module = ir::ParseModule(text, "legalized_conv2d_bench.sir");
    if (module.ok()) module = transform::Normalize(std::move(module).value());
    if (module.ok()) module = transform::LegalizeOps(std::move(module).value());
    if (!module.ok()) Die(module.status().message());
    StatusOr<codegen::CompiledKernels> compiled =
        codegen::CompileTensorPrograms({{"conv2d", module->GetPrimFunc("conv2d")}});
    if (!compiled.ok()) Die(compiled.status().message());
    StatusOr<std::unique_ptr<vm::NativeModule>> loaded = vm::NativeModule::Load(compiled->shared_object, s.name);
    if (!loaded.ok()) Die(loaded.status().message());
    module_ = std::move(loaded).value();
    StatusOr<StrataKernelFn> fn = module_->Lookup(compiled->symbols.at("conv2d"));
    if (!fn.ok()) Die(fn.status().message());
    fn_ = *fn;
  }

  void Run(const Tensor4& x, const Tensor4& w, Tensor4* y) const {
    DLTensor views[3] = {x.View(), w.View(), y->View()};
    StrataKernelArg args[3];
    int32_t codes[3] = {STRATA_ARG_TENSOR, STRATA_ARG_TENSOR, STRATA_ARG_TENSOR};
    for (int i = 0; i < 3; ++i) args[i].tensor = &views[i];
    if (fn_(args, codes, 3) != 0) Die(vm::TakeKernelError());
  }

 private:
  std::unique_ptr<vm::NativeModule> module_;
  StrataKernelFn fn_ = nullptr;
};

// oneDNN's convolution for one shape. `blocked`: input and output in the
// layouts the primitive prefers; otherwise plain NCHW (nchw / oihw user data).
class OneDnnConv {
 public:
  OneDnnConv(const ConvShape& s, bool blocked, const Tensor4& weights)
      : engine_(dnnl::engine::kind::cpu, 0), stream_(engine_) {
    using tag = dnnl::memory::format_tag;
    using dt = dnnl::memory::data_type;
    const dnnl::memory::dims src = {s.n, s.c, s.h, s.w}, wei = {s.o, s.c, s.kh, s.kw},
                             dst = {s.n, s.o, s.out_h(), s.out_w()};
    const dnnl::memory::desc src_md(src, dt::f32, blocked ? tag::any : tag::nchw);
    const dnnl::memory::desc dst_md(dst, dt::f32, blocked ? tag::any : tag::nchw);
    const dnnl::memory::desc wei_md(wei, dt::f32, tag::any);
    dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_auto, src_md,
                                         wei_md, dst_md, {s.stride, s.stride}, {0, 0}, {s.pad, s.pad}, {s.pad, s.pad});
    pd_ = dnnl::convolution_forward::primitive_desc(desc, engine_);
    conv_ = dnnl::convolution_forward(pd_);
    src_ = dnnl::memory(pd_.src_desc(), engine_);
    dst_ = dnnl::memory(pd_.dst_desc(), engine_);
    weights_ = dnnl::memory(pd_.weights_desc(), engine_);
    dnnl::memory user_weights({wei, dt::f32, tag::oihw}, engine_, const_cast<float*>(weights.data.data()));
    dnnl::reorder(user_weights, weights_).execute(stream_, user_weights, weights_);
    stream_.wait();
  }

  // Copies (reorders) plain NCHW data in and out; not timed.
  void SetInput(const Tensor4& x) { Reorder(const_cast<float*>(x.data.data()), src_, /*to_plain=*/false); }
  void GetOutput(Tensor4* y) { Reorder(y->data.data(), dst_, /*to_plain=*/true); }

  void Run() {
    conv_.execute(stream_, {{DNNL_ARG_SRC, src_}, {DNNL_ARG_WEIGHTS, weights_}, {DNNL_ARG_DST, dst_}});
    stream_.wait();
  }

  std::string implementation() const { return pd_.impl_info_str(); }

 private:
  void Reorder(float* plain, dnnl::memory& mem, bool to_plain) {
    const dnnl::memory::desc& md = mem.get_desc();
    dnnl::memory user({md.dims(), dnnl::memory::data_type::f32, dnnl::memory::format_tag::nchw}, engine_, plain);
    if (to_plain) {
      dnnl::reorder(mem, user).execute(stream_, mem, user);
    } else {
      dnnl::reorder(user, mem).execute(stream_, user, mem);
    }
    stream_.wait();
  }

  dnnl::engine engine_;
  dnnl::stream stream_;
  dnnl::convolution_forward::primitive_desc pd_;
  dnnl::convolution_forward conv_;
  dnnl::memory src_, dst_, weights_;
};

void ExpectSame(const std::vector<float>& actual, const std::vector<float>& expected, const std::string& what) {
  for (size_t i = 0; i < expected.size(); ++i) {
    if (std::fabs(actual[i] - expected[i]) > 1e-3 * (1.0 + std::fabs(expected[i]))) {
      Die(what + ": element " + std::to_string(i) + " is " + std::to_string(actual[i]) + ", expected " +
          std::to_string(expected[i]));
    }
  }
}

enum class Variant { kOneDnn, kStrata, kOneDnnBlocked };

// Inputs, the oneDNN baseline's output and time, per shape.
struct Fixture {
  explicit Fixture(const ConvShape& s)
      : x(s.n, s.c, s.h, s.w, 1), w(s.o, s.c, s.kh, s.kw, 2), expected(s.n, s.o, s.out_h(), s.out_w(), 3) {
    OneDnnConv baseline(s, /*blocked=*/false, w);
    baseline.SetInput(x);
    baseline.Run();
    baseline.GetOutput(&expected);
    baseline_seconds = SecondsPerCall([&] { baseline.Run(); }, 15, 0.05);
    std::fprintf(stderr, "%s: oneDNN implementations: %s (plain layouts), %s (blocked)\n", s.name,
                 baseline.implementation().c_str(), OneDnnConv(s, /*blocked=*/true, w).implementation().c_str());
  }
  Tensor4 x, w, expected;
  double baseline_seconds;
};

const Fixture& GetFixture(const ConvShape& s) {
  static std::map<std::string, std::unique_ptr<Fixture>> fixtures;
  std::unique_ptr<Fixture>& f = fixtures[s.name];
  if (!f) f = std::make_unique<Fixture>(s);
  return *f;
}

void BM_Conv2d(benchmark::State& state, const ConvShape& s, Variant variant) {
  const Fixture& f = GetFixture(s);
  Tensor4 y(s.n, s.o, s.out_h(), s.out_w(), 4);
  std::function<void()> run;
  std::unique_ptr<StrataConv> strata;
  std::unique_ptr<OneDnnConv> onednn;
  if (variant == Variant::kStrata) {
    strata = std::make_unique<StrataConv>(s);
    run = [&] { strata->Run(f.x, f.w, &y); };
    run();
  } else {
    onednn = std::make_unique<OneDnnConv>(s, variant == Variant::kOneDnnBlocked, f.w);
    onednn->SetInput(f.x);
    run = [&] { onednn->Run(); };
    run();
    onednn->GetOutput(&y);
  }
  ExpectSame(y.data, f.expected.data, s.name);
  for (auto _ : state) {
    run();
    benchmark::DoNotOptimize(y.data.data());
    benchmark::ClobberMemory();
  }
  state.counters["GFLOPS"] =
      benchmark::Counter(s.flops(), benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
  state.counters["onednn_us"] = f.baseline_seconds * 1e6;
}

}  // namespace
}  // namespace strata::bench

int main(int argc, char** argv) {
  using strata::bench::Variant;
  const std::pair<const char*, Variant> variants[] = {
      {"OneDNN", Variant::kOneDnn}, {"Strata", Variant::kStrata}, {"OneDNNBlocked", Variant::kOneDnnBlocked}};
  for (const strata::bench::ConvShape& shape : strata::bench::kShapes) {
    for (const auto& [name, variant] : variants) {
      benchmark::RegisterBenchmark((std::string("Conv2d/") + shape.name + "/" + name).c_str(), strata::bench::BM_Conv2d,
                                   shape, variant)
          ->Unit(benchmark::kMicrosecond)
          ->UseRealTime();
    }
  }
  const bool json = strata::bench::JsonRequested(argc, argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  strata::bench::RunBenchmarksWithRatios(json, {{"onednn_us", "ratio_vs_onednn"}});
  benchmark::Shutdown();
  return 0;
}
