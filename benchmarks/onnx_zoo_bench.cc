// End-to-end latency of the ONNX model zoo (tests/fixtures/onnx, exported from
// PyTorch by scripts/onnx/export_zoo.py) through the VM.
//
// Each model is imported (frontend::ImportOnnxFile), compiled with the default
// pipeline (driver::Compile), loaded and run exactly as a service would run it:
// one VirtualMachine, `Invoke("main", inputs)` on the largest exported shape
// (run_2 of every model in tests/fixtures/onnx). A row's time
// is one whole call: the bytecode, every kernel, and the allocations of the
// intermediate tensors and of the result. Import and compilation happen once per
// model, before timing, and the first result is checked against onnxruntime's
// (run_2/out0.npy) before any call is timed.
//   Zoo/<model>             real time of one Invoke, in microseconds
//   Zoo/<model>/byoc_dnnl   the same model compiled with --byoc dnnl (dense,
//                           matmul and conv2d chains on oneDNN); default_us is the
//                           default build's time measured in the same run and
//                           speedup_vs_default = default_us / this row's time
//   Zoo/<model>/npu         compiled with --target cpu,npu and run on the
//                           simulated NPU plug-in: the row's time is the host's
//                           wall time (the simulator computes with plain loops);
//                           npu_device_us is the device time the cost model
//                           charges for one call (docs/devices.md), with the
//                           host->device / device->host copies per call
//   Zoo/<model>/no_fuse     compiled with --no-fuse (every operator its own
//                           kernel): fused_us is the default (fused) build's
//                           time in the same run and fusion_speedup = this row's
//                           time / fused_us (above 1, fusion is faster)
// Every row also counts, for one call, the kernel launches (kernels) and the VM
// instructions (instructions) its build executes.
//   Zoo/<model>/no_memory_plan  compiled with --no-memory-plan: every tensor
//                           its own allocation from the VM's pool instead of the
//                           plan's arena and tokens; same counters (below 1,
//                           the plan saves time)
// benchmarks/peers/onnx_zoo_peers.py runs this program and times onnxruntime
// and PyTorch on the same inputs, reporting ratios (see benchmarks/peers/README.md).
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "benchmarks/bench_util.h"
#include "compiler/driver/compile.h"
#include "compiler/frontend/onnx/onnx_importer.h"
#include "vm/profiler.h"
#include "vm/tensor_io/npy.h"
#include "vm/virtual_machine.h"

#ifndef STRATA_SOURCE_DIR
#error "STRATA_SOURCE_DIR must name the source tree (set by benchmarks/CMakeLists.txt)"
#endif

namespace strata::bench {
namespace {

namespace fs = std::filesystem;

constexpr const char* kModels[] = {"mlp", "cnn", "transformer"};
// Every zoo model, for the fused vs --no-fuse rows.
constexpr const char* kZoo[] = {"mlp",  "cnn", "transformer",       "transformer_opset13", "bert",
                                "gpt2", "vit", "resnet_basicblock", "mobilenet_v3_small",  "kws_conv1d"};
constexpr const char* kRun = "run_2";  // the largest shape of every model
constexpr double kRtol = 1e-4, kAtol = 1e-5;

vm::Value ReadNpyOrDie(const fs::path& path) { return vm::Value::FromTensor(OrDie(vm::ReadNpyFile(path.string()))); }

// Dies unless `actual` is a tensor of `expected`'s type and shape whose values
// are within kRtol (relative, plus kAtol absolute) of it.
void CheckOrDie(const std::string& model, const vm::Value& actual, const vm::Value& expected) {
  if (!actual.is_tensor()) Die(model + ": the result is " + actual.Describe() + ", not a tensor");
  const vm::Tensor& a = *actual.tensor();
  const vm::Tensor& e = *expected.tensor();
  if (a.TypeString() != e.TypeString()) {
    Die(model + ": the result is " + a.TypeString() + ", the reference " + e.TypeString());
  }
  const std::vector<float> av = OrDie(a.ToVector<float>());
  const std::vector<float> ev = OrDie(e.ToVector<float>());
  int64_t bad = 0, first = -1;
  for (size_t i = 0; i < av.size(); ++i) {
    if (!(std::fabs(av[i] - ev[i]) <= kAtol + kRtol * std::fabs(ev[i]))) {
      if (bad++ == 0) first = static_cast<int64_t>(i);
    }
  }
  if (bad > 0) {
    Die(model + ": " + std::to_string(bad) + " of " + std::to_string(av.size()) +
        " elements differ from onnxruntime's reference; first at flat index " + std::to_string(first) + ": got " +
        std::to_string(av[first]) + ", expected " + std::to_string(ev[first]));
  }
}

// One model compiled, loaded and checked, with its VM and inputs.
struct LoadedModel {
  std::unique_ptr<vm::VirtualMachine> machine;
  std::vector<vm::Value> inputs;
  int64_t kernels = 0;       // kernel launches of one call
  int64_t instructions = 0;  // VM instructions of one call
};

// Imports, compiles, loads and checks `model` the first time it is asked for;
// Google Benchmark calls a benchmark function several times (to size the
// iteration count, and once per repetition), and compilation must not repeat.
LoadedModel& GetModel(const std::string& model, const std::string& byoc = "", bool plan_memory = true, bool npu = false,
                      bool fuse = true) {
  static std::map<std::string, LoadedModel> cache;
  const std::string key =
      model + "/" + byoc + (plan_memory ? "" : "/no_memory_plan") + (npu ? "/npu" : "") + (fuse ? "" : "/no_fuse");
  auto found = cache.find(key);
  if (found != cache.end()) return found->second;

  const fs::path dir = fs::path(STRATA_SOURCE_DIR) / "tests" / "fixtures" / "onnx" / model;
  ir::IRModule module = OrDie(frontend::ImportOnnxFile((dir / "model.onnx").string()));
  driver::CompileOptions options;
  if (!byoc.empty()) options.byoc_backends = {byoc};
  options.plan_memory = plan_memory;
  options.fuse = fuse;
  if (npu) options.device_targets = {"npu"};
  const std::vector<uint8_t> bytes = OrDie(driver::Compile(std::move(module), options));
  LoadedModel loaded;
  loaded.machine = std::make_unique<vm::VirtualMachine>(OrDie(vm::Executable::LoadFromBytes(bytes)));
  const fs::path run = dir / kRun;
  for (int i = 0; fs::exists(run / ("in" + std::to_string(i) + ".npy")); ++i) {
    loaded.inputs.push_back(ReadNpyOrDie(run / ("in" + std::to_string(i) + ".npy")));
  }
  if (loaded.inputs.empty()) Die(model + ": no inputs in " + run.string());
  const vm::Value expected = ReadNpyOrDie(run / "out0.npy");
  CheckOrDie(model, OrDie(loaded.machine->Invoke("main", loaded.inputs)), expected);
  vm::Profiler profiler(loaded.machine->executable(), {});
  OrDie(loaded.machine->SetProfiler(&profiler));
  OrDie(loaded.machine->Invoke("main", loaded.inputs));
  OrDie(loaded.machine->SetProfiler(nullptr));
  loaded.kernels = profiler.kind_stat(vm::InstructionKind::kCallCompiledKernel).count;
  for (int kind = 0; kind < vm::kNumInstructionKinds; ++kind) {
    loaded.instructions += profiler.kind_stat(static_cast<vm::InstructionKind>(kind)).count;
  }
  return cache.emplace(key, std::move(loaded)).first->second;
}

void BM_Zoo(benchmark::State& state, const std::string& model) {
  LoadedModel& loaded = GetModel(model);
  for (auto _ : state) {
    StatusOr<vm::Value> result = loaded.machine->Invoke("main", loaded.inputs);
    if (!result.ok()) Die(model + ": " + result.status().message());
    benchmark::DoNotOptimize(result);
  }
  state.counters["kernels"] = static_cast<double>(loaded.kernels);
  state.counters["instructions"] = static_cast<double>(loaded.instructions);
}

// The --no-fuse build, timed against the fused (default) one in the same run.
void BM_ZooNoFuse(benchmark::State& state, const std::string& model) {
  LoadedModel& fused = GetModel(model);
  LoadedModel& loaded = GetModel(model, "", true, false, /*fuse=*/false);
  const double fused_seconds = SecondsPerCall([&] {
    StatusOr<vm::Value> result = fused.machine->Invoke("main", fused.inputs);
    if (!result.ok()) Die(model + ": " + result.status().message());
  });
  for (auto _ : state) {
    StatusOr<vm::Value> result = loaded.machine->Invoke("main", loaded.inputs);
    if (!result.ok()) Die(model + " (no_fuse): " + result.status().message());
    benchmark::DoNotOptimize(result);
  }
  state.counters["fused_us"] = fused_seconds * 1e6;
  state.counters["kernels"] = static_cast<double>(loaded.kernels);
  state.counters["instructions"] = static_cast<double>(loaded.instructions);
  state.counters["fused_kernels"] = static_cast<double>(fused.kernels);
  state.counters["fused_instructions"] = static_cast<double>(fused.instructions);
}

// A variant of the default build, timed against it in the same run.
void BM_ZooVariant(benchmark::State& state, const std::string& model, const std::string& byoc, bool plan_memory) {
  LoadedModel& baseline = GetModel(model);
  LoadedModel& loaded = GetModel(model, byoc, plan_memory);
  const double baseline_seconds = SecondsPerCall([&] {
    StatusOr<vm::Value> result = baseline.machine->Invoke("main", baseline.inputs);
    if (!result.ok()) Die(model + ": " + result.status().message());
  });
  for (auto _ : state) {
    StatusOr<vm::Value> result = loaded.machine->Invoke("main", loaded.inputs);
    if (!result.ok()) Die(model + " (" + byoc + "): " + result.status().message());
    benchmark::DoNotOptimize(result);
  }
  state.counters["default_us"] = baseline_seconds * 1e6;
}

void BM_ZooNpu(benchmark::State& state, const std::string& model) {
  LoadedModel& baseline = GetModel(model);
  LoadedModel& loaded = GetModel(model, "", true, /*npu=*/true);
  const double baseline_seconds = SecondsPerCall([&] {
    StatusOr<vm::Value> result = baseline.machine->Invoke("main", baseline.inputs);
    if (!result.ok()) Die(model + ": " + result.status().message());
  });
  for (auto _ : state) {
    StatusOr<vm::Value> result = loaded.machine->Invoke("main", loaded.inputs);
    if (!result.ok()) Die(model + " (npu): " + result.status().message());
    benchmark::DoNotOptimize(result);
  }
  const vm::DeviceStats& device = loaded.machine->last_device_stats();
  state.counters["default_us"] = baseline_seconds * 1e6;
  state.counters["npu_device_us"] = static_cast<double>(device.device_time_ns) / 1e3;
  state.counters["h2d_copies"] = static_cast<double>(device.host_to_device_copies);
  state.counters["d2h_copies"] = static_cast<double>(device.device_to_host_copies);
}

}  // namespace
}  // namespace strata::bench

int main(int argc, char** argv) {
  for (const char* model : strata::bench::kZoo) {
    benchmark::RegisterBenchmark((std::string("Zoo/") + model).c_str(), strata::bench::BM_Zoo, std::string(model))
        ->Unit(benchmark::kMicrosecond)
        ->UseRealTime();
  }
  for (const char* model : strata::bench::kZoo) {
    benchmark::RegisterBenchmark((std::string("Zoo/") + model + "/no_fuse").c_str(), strata::bench::BM_ZooNoFuse,
                                 std::string(model))
        ->Unit(benchmark::kMicrosecond)
        ->UseRealTime();
  }
  for (const char* model : strata::bench::kModels) {
    benchmark::RegisterBenchmark((std::string("Zoo/") + model + "/byoc_dnnl").c_str(), strata::bench::BM_ZooVariant,
                                 std::string(model), std::string("dnnl"), true)
        ->Unit(benchmark::kMicrosecond)
        ->UseRealTime();
  }
  for (const char* model : {"mlp", "cnn"}) {
    benchmark::RegisterBenchmark((std::string("Zoo/") + model + "/npu").c_str(), strata::bench::BM_ZooNpu,
                                 std::string(model))
        ->Unit(benchmark::kMicrosecond)
        ->UseRealTime();
  }
  for (const char* model : strata::bench::kModels) {
    benchmark::RegisterBenchmark((std::string("Zoo/") + model + "/no_memory_plan").c_str(),
                                 strata::bench::BM_ZooVariant, std::string(model), std::string(), false)
        ->Unit(benchmark::kMicrosecond)
        ->UseRealTime();
  }
  const bool json = strata::bench::JsonRequested(argc, argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  strata::bench::RunBenchmarksWithRatios(
      json, {{"default_us", "speedup_vs_default"}, {"fused_us", "fusion_speedup", /*row_over_baseline=*/true}});
  benchmark::Shutdown();
  return 0;
}
