// What Strata's convolution kernels cost against oneDNN, layer by layer.
//
// The layers are those of ResNet-18 and MobileNetV3-Small at batch 1, 224x224
// (3x3, 1x1, strided, depthwise and the stems), and some at odd image sizes.
// Variants:
//   OneDNNBlocked  convolution_forward, f32, with input, weights and output in
//                  the blocked layouts the primitive prefers (no reorders
//                  timed): the baseline, the library at its best
//   StrataNchwc    conv2d_nchwc, the kernel ConvertToNchwc gives a conv2d with
//                  constant weights: input blocked and weights packed as that
//                  pass does (same blocks), batch symbolic, image size constant
//                  (as in an exported model)
//   OneDNN         oneDNN on plain NCHW input and output, for reference
//   Strata         the NCHW conv2d kernel (strata compile --no-nchwc), with a
//                  symbolic batch and image size
// Each row reports `ratio_vs_onednn_blocked`: the baseline's time, measured in
// the same run, divided by the row's time (above 1 is faster than oneDNN).
// Every variant's result is checked against oneDNN's before it is timed.
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

#include "abi/kernel_abi.h"
#include "benchmarks/bench_util.h"
#include "compiler/codegen/llvm/codegen_llvm.h"
#include "compiler/ir/parser.h"
#include "compiler/transform/convert_to_nchwc.h"
#include "compiler/transform/legalize_ops.h"
#include "compiler/transform/normalize.h"
#include "vm/kernel_runtime.h"
#include "vm/native_module.h"

namespace strata::bench {
namespace {

struct ConvShape {
  const char* name;
  int64_t n, c, h, w, o, kh, kw, stride, pad, groups;
  int64_t out_h() const { return (h + 2 * pad - kh) / stride + 1; }
  int64_t out_w() const { return (w + 2 * pad - kw) / stride + 1; }
  double flops() const { return 2.0 * n * o * out_h() * out_w() * (c / groups) * kh * kw; }
};

constexpr ConvShape kShapes[] = {
    // ResNet-18: the stem, a 3x3 layer of each stage, the strided 3x3 and 1x1
    // layers entering stage 2.
    {"resnet18_stem7x7s2_3to64", 1, 3, 224, 224, 64, 7, 7, 2, 3, 1},
    {"resnet18_3x3_64x56", 1, 64, 56, 56, 64, 3, 3, 1, 1, 1},
    {"resnet18_3x3s2_64to128", 1, 64, 56, 56, 128, 3, 3, 2, 1, 1},
    {"resnet18_1x1s2_64to128", 1, 64, 56, 56, 128, 1, 1, 2, 0, 1},
    {"resnet18_3x3_128x28", 1, 128, 28, 28, 128, 3, 3, 1, 1, 1},
    {"resnet18_3x3_256x14", 1, 256, 14, 14, 256, 3, 3, 1, 1, 1},
    {"resnet18_3x3_512x7", 1, 512, 7, 7, 512, 3, 3, 1, 1, 1},
    // MobileNetV3-Small: the stem, depthwise 3x3 (stride 2) and 5x5 layers,
    // an expansion, a projection and the last 1x1 layer.
    {"mnv3_stem3x3s2_3to16", 1, 3, 224, 224, 16, 3, 3, 2, 1, 1},
    {"mnv3_dw3x3s2_16x112", 1, 16, 112, 112, 16, 3, 3, 2, 1, 16},
    {"mnv3_1x1_16to72x56", 1, 16, 56, 56, 72, 1, 1, 1, 0, 1},
    {"mnv3_dw3x3s2_72x56", 1, 72, 56, 56, 72, 3, 3, 2, 1, 72},
    {"mnv3_1x1_72to24x28", 1, 72, 28, 28, 24, 1, 1, 1, 0, 1},
    {"mnv3_dw5x5_240x14", 1, 240, 14, 14, 240, 5, 5, 1, 2, 240},
    {"mnv3_1x1_96to576x7", 1, 96, 7, 7, 576, 1, 1, 1, 0, 1},
    // Odd image sizes (MobileNetV3 and EfficientNet at 193 px, ResNet at 180).
    {"odd_dw3x3s2_16x97", 1, 16, 97, 97, 16, 3, 3, 2, 1, 16},
    {"odd_dw3x3_96x49", 1, 96, 49, 49, 96, 3, 3, 1, 1, 96},
    {"odd_dw5x5_240x13", 1, 240, 13, 13, 240, 5, 5, 1, 2, 240},
    {"odd_3x3_64x45", 1, 64, 45, 45, 64, 3, 3, 1, 1, 1},
};

// A row-major f32 tensor of any rank, filled with values in [-1, 1).
struct HostTensor {
  HostTensor(std::vector<int64_t> dims, uint32_t seed) : shape(std::move(dims)) {
    int64_t count = 1;
    for (int64_t d : shape) count *= d;
    data.resize(static_cast<size_t>(count));
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
    dl.ndim = static_cast<int32_t>(shape.size());
    dl.dtype = {kDLFloat, 32, 1};
    dl.shape = const_cast<int64_t*>(shape.data());
    dl.strides = nullptr;
    dl.byte_offset = 0;
    return dl;
  }
  std::vector<int64_t> shape;
  std::vector<float> data;
};

std::string Dims(const std::vector<std::string>& dims) {
  std::string text = "(";
  for (size_t i = 0; i < dims.size(); ++i) text += (i ? ", " : "") + dims[i];
  return text + ")";
}
std::string Num(int64_t v) { return std::to_string(v); }

// One legalized kernel (the only one of `text`'s @main), compiled and loaded.
class StrataKernel {
 public:
  StrataKernel(const std::string& text, const std::string& kernel, const std::string& name) {
    StatusOr<ir::IRModule> module = ir::ParseModule(text, "legalized_conv2d_bench.sir");
    if (module.ok()) module = transform::Normalize(std::move(module).value());
    if (module.ok()) module = transform::LegalizeOps(std::move(module).value());
    if (!module.ok()) Die(module.status().message());
    StatusOr<codegen::CompiledKernels> compiled =
        codegen::CompileTensorPrograms({{kernel, module->GetPrimFunc(kernel)}});
    if (!compiled.ok()) Die(compiled.status().message());
    StatusOr<std::unique_ptr<vm::NativeModule>> loaded = vm::NativeModule::Load(compiled->shared_object, name);
    if (!loaded.ok()) Die(loaded.status().message());
    module_ = std::move(loaded).value();
    StatusOr<StrataKernelFn> fn = module_->Lookup(compiled->symbols.at(kernel));
    if (!fn.ok()) Die(fn.status().message());
    fn_ = *fn;
  }

  void Run(const HostTensor& x, const HostTensor& w, HostTensor* y) const {
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

std::string WindowAttrs(const ConvShape& s) {
  return "strides=[" + Num(s.stride) + ", " + Num(s.stride) + "], padding=[" + Num(s.pad) + ", " + Num(s.pad) +
         "], groups=" + Num(s.groups);
}

// The NCHW kernel, symbolic batch and image size.
StrataKernel PlainConv(const ConvShape& s) {
  const std::string text = "func @main(x: Tensor[(n, " + Num(s.c) + ", h, w), f32], wt: Tensor[" +
                           Dims({Num(s.o), Num(s.c / s.groups), Num(s.kh), Num(s.kw)}) +
                           ", f32]) -> Tensor[ndim=4, f32] {\n  y = conv2d(x, wt, " + WindowAttrs(s) +
                           ")\n  return y\n}\n";
  return StrataKernel(text, "conv2d", s.name);
}

// The blocks ConvertToNchwc picks for a layer (AVX-512: up to 16 per block, 32 lanes).
struct NchwcBlocks {
  explicit NchwcBlocks(const ConvShape& s) {
    ob = transform::NchwcBlock(s.o, 16);
    if (s.groups == 1) {
      ib = transform::NchwcBlock(s.c, 16) >= 4 ? transform::NchwcBlock(s.c, 16) : 1;
      plain_input = ib == 1;
      lanes = transform::NchwcLanes(s.o, ob, transform::NchwcOptions{16, 32});
    } else {
      ib = ob, lanes = ob, plain_input = false;
    }
  }
  int64_t ib, ob, lanes;
  bool plain_input;
};

StrataKernel BlockedConv(const ConvShape& s, const NchwcBlocks& b, bool symbolic_image) {
  const std::string h = symbolic_image ? "h" : Num(s.h), w = symbolic_image ? "w" : Num(s.w);
  const std::string x_type =
      b.plain_input ? Dims({"n", Num(s.c), h, w}) : Dims({"n", Num(s.c / b.ib), h, w, Num(b.ib)});
  const bool dw = s.groups > 1;
  const std::string w_type =
      Dims({Num(s.o / b.lanes), Num(dw ? 1 : s.c / b.ib), Num(s.kh), Num(s.kw), Num(dw ? 1 : b.ib), Num(b.lanes)});
  const std::string text = "func @main(x: Tensor[" + x_type + ", f32], wt: Tensor[" + w_type +
                           ", f32]) -> Tensor[ndim=5, f32] {\n  y = conv2d_nchwc(x, wt, " + WindowAttrs(s) +
                           ", out_block=" + Num(b.ob) + ")\n  return y\n}\n";
  return StrataKernel(text, "conv2d_nchwc", s.name);
}

// [N, C, H, W] -> [N, C / b, H, W, b] and back.
HostTensor Block(const HostTensor& t, int64_t b) {
  const int64_t n = t.shape[0], c = t.shape[1], hw = t.shape[2] * t.shape[3];
  HostTensor out({n, c / b, t.shape[2], t.shape[3], b}, 0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t p = 0; p < hw; ++p)
        out.data[((i * (c / b) + ch / b) * hw + p) * b + ch % b] = t.data[(i * c + ch) * hw + p];
  return out;
}
std::vector<float> Unblock(const HostTensor& t) {
  const int64_t n = t.shape[0], cb = t.shape[1], hw = t.shape[2] * t.shape[3], b = t.shape[4];
  std::vector<float> out(t.data.size());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < cb * b; ++ch)
      for (int64_t p = 0; p < hw; ++p)
        out[(i * cb * b + ch) * hw + p] = t.data[((i * cb + ch / b) * hw + p) * b + ch % b];
  return out;
}
// OIHW -> [O / lanes, I / ib, KH, KW, ib, lanes], as ConvertToNchwc packs it.
HostTensor PackWeight(const HostTensor& w, int64_t ib, int64_t lanes) {
  const int64_t o_n = w.shape[0], i_n = w.shape[1], kh_n = w.shape[2], kw_n = w.shape[3];
  HostTensor out({o_n / lanes, i_n / ib, kh_n, kw_n, ib, lanes}, 0);
  for (int64_t o = 0; o < o_n; ++o)
    for (int64_t i = 0; i < i_n; ++i)
      for (int64_t k = 0; k < kh_n * kw_n; ++k)
        out.data[(((o / lanes * (i_n / ib) + i / ib) * kh_n * kw_n + k) * ib + i % ib) * lanes + o % lanes] =
            w.data[(o * i_n + i) * kh_n * kw_n + k];
  return out;
}

// oneDNN's convolution for one shape. `blocked`: input and output in the
// layouts the primitive prefers; otherwise plain NCHW (nchw / oihw user data).
class OneDnnConv {
 public:
  OneDnnConv(const ConvShape& s, bool blocked, const HostTensor& weights)
      : engine_(dnnl::engine::kind::cpu, 0), stream_(engine_) {
    using tag = dnnl::memory::format_tag;
    using dt = dnnl::memory::data_type;
    const dnnl::memory::dims src = {s.n, s.c, s.h, s.w}, dst = {s.n, s.o, s.out_h(), s.out_w()};
    const dnnl::memory::dims wei = s.groups == 1
                                       ? dnnl::memory::dims{s.o, s.c, s.kh, s.kw}
                                       : dnnl::memory::dims{s.groups, s.o / s.groups, s.c / s.groups, s.kh, s.kw};
    const dnnl::memory::desc src_md(src, dt::f32, blocked ? tag::any : tag::nchw);
    const dnnl::memory::desc dst_md(dst, dt::f32, blocked ? tag::any : tag::nchw);
    const dnnl::memory::desc wei_md(wei, dt::f32, tag::any);
    dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                         src_md, wei_md, dst_md, {s.stride, s.stride}, {0, 0}, {s.pad, s.pad},
                                         {s.pad, s.pad});
    pd_ = dnnl::convolution_forward::primitive_desc(desc, engine_);
    conv_ = dnnl::convolution_forward(pd_);
    src_ = dnnl::memory(pd_.src_desc(), engine_);
    dst_ = dnnl::memory(pd_.dst_desc(), engine_);
    weights_ = dnnl::memory(pd_.weights_desc(), engine_);
    dnnl::memory user_weights({wei, dt::f32, s.groups == 1 ? tag::oihw : tag::goihw}, engine_,
                              const_cast<float*>(weights.data.data()));
    dnnl::reorder(user_weights, weights_).execute(stream_, user_weights, weights_);
    stream_.wait();
  }

  // Copies (reorders) plain NCHW data in and out; not timed.
  void SetInput(const HostTensor& x) { Reorder(const_cast<float*>(x.data.data()), src_, /*to_plain=*/false); }
  void GetOutput(HostTensor* y) { Reorder(y->data.data(), dst_, /*to_plain=*/true); }

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

enum class Variant { kOneDnnBlocked, kStrataNchwc, kStrataNchwcDynamic, kOneDnn, kStrata };

// Inputs, oneDNN's output and the baseline's time, per shape.
struct Fixture {
  explicit Fixture(const ConvShape& s)
      : x({s.n, s.c, s.h, s.w}, 1),
        w({s.o, s.c / s.groups, s.kh, s.kw}, 2),
        expected({s.n, s.o, s.out_h(), s.out_w()}, 3) {
    OneDnnConv baseline(s, /*blocked=*/true, w);
    baseline.SetInput(x);
    baseline.Run();
    baseline.GetOutput(&expected);
    baseline_seconds = SecondsPerCall([&] { baseline.Run(); }, 15, 0.05);
    std::fprintf(stderr, "%s: oneDNN implementations: %s (blocked), %s (plain layouts)\n", s.name,
                 baseline.implementation().c_str(), OneDnnConv(s, /*blocked=*/false, w).implementation().c_str());
  }
  HostTensor x, w, expected;
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
  HostTensor y({s.n, s.o, s.out_h(), s.out_w()}, 4);
  std::function<void()> run;
  std::function<std::vector<float>()> result = [&] { return y.data; };
  std::unique_ptr<StrataKernel> strata;
  std::unique_ptr<OneDnnConv> onednn;
  std::unique_ptr<HostTensor> xb, wb, yb;
  if (variant == Variant::kStrata) {
    strata = std::make_unique<StrataKernel>(PlainConv(s));
    run = [&] { strata->Run(f.x, f.w, &y); };
  } else if (variant == Variant::kStrataNchwc || variant == Variant::kStrataNchwcDynamic) {
    const NchwcBlocks b(s);
    strata = std::make_unique<StrataKernel>(BlockedConv(s, b, variant == Variant::kStrataNchwcDynamic));
    xb = std::make_unique<HostTensor>(b.plain_input ? f.x : Block(f.x, b.ib));
    wb = std::make_unique<HostTensor>(PackWeight(f.w, s.groups > 1 ? 1 : b.ib, b.lanes));
    yb = std::make_unique<HostTensor>(std::vector<int64_t>{s.n, s.o / b.ob, s.out_h(), s.out_w(), b.ob}, 4);
    run = [&] { strata->Run(*xb, *wb, yb.get()); };
    result = [&] { return Unblock(*yb); };
  } else {
    onednn = std::make_unique<OneDnnConv>(s, variant == Variant::kOneDnnBlocked, f.w);
    onednn->SetInput(f.x);
    run = [&] { onednn->Run(); };
    result = [&] {
      onednn->GetOutput(&y);
      return y.data;
    };
  }
  run();
  ExpectSame(result(), f.expected.data, s.name);
  for (auto _ : state) {
    run();
    benchmark::ClobberMemory();
  }
  state.counters["GFLOPS"] =
      benchmark::Counter(s.flops(), benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
  state.counters["onednn_blocked_us"] = f.baseline_seconds * 1e6;
}

}  // namespace
}  // namespace strata::bench

int main(int argc, char** argv) {
  using strata::bench::Variant;
  const std::pair<const char*, Variant> variants[] = {{"OneDNNBlocked", Variant::kOneDnnBlocked},
                                                      {"StrataNchwc", Variant::kStrataNchwc},
                                                      {"StrataNchwcDynamic", Variant::kStrataNchwcDynamic},
                                                      {"OneDNN", Variant::kOneDnn},
                                                      {"Strata", Variant::kStrata}};
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
  strata::bench::RunBenchmarksWithRatios(json, {{"onednn_blocked_us", "ratio_vs_onednn_blocked"}});
  benchmark::Shutdown();
  return 0;
}
