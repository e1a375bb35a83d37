// The Strata side of benchmarks/peers/tvm_relax_peers.py: VM dispatch overhead
// and one end-to-end model, to compare with Apache TVM's Relax VM.
//
// Chain/<kind>/<n>: one VirtualMachine::Invoke of @main(x, a, b), a straight
// chain of n destination-passing calls on 1-element f32 tensors:
//
//   f(x, a); f(a, b); f(b, a); f(a, b); ...   return the last output
//
// where f computes out[0] = in[0] + 1, so the result is x + n (checked before
// timing). The two outputs `a` and `b` are allocated once by the caller and
// passed in: nothing is allocated inside the chain, and every call depends on
// the previous one. <kind> is how f is implemented:
//   library  a C++ library function "peer.add_one" registered with
//            vm::RegisterLibraryFunction and called with call_packed (the same
//            checks as the TVM side's C++ function: two f32 tensors of one
//            element each);
//   compiled_kernel  the tensor program @add_one, compiled by Strata's LLVM
//            codegen and called directly as a destination-passing compiled kernel.
// With n = 0 the row is the cost of an Invoke that only checks its three
// parameters. Counter ns_per_call = real time of one Invoke / n.
//
// Mlp/batch17: one Invoke("main", {x}) of the ONNX zoo MLP
// (tests/fixtures/onnx/mlp/model.onnx) at batch 17 (run_2), imported and
// compiled with the default pipeline exactly as benchmarks/onnx_zoo_bench.cc
// does; its result is checked against run_2/out0.npy (rtol 1e-4, atol 1e-5)
// before timing. The time is one whole call as a service makes it: bytecode,
// kernels, and the program's allocations (the result's at least).
//
// The text IR of the chains is generated here and compiled with driver::Compile;
// --dump-chain-ir=DIR writes the lowered modules (driver --dump-ir) for inspection.
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "benchmarks/bench_util.h"
#include "compiler/driver/compile.h"
#include "compiler/frontend/onnx/onnx_importer.h"
#include "compiler/ir/parser.h"
#include "vm/registry.h"
#include "vm/tensor_io/npy.h"
#include "vm/virtual_machine.h"

#ifndef STRATA_SOURCE_DIR
#error "STRATA_SOURCE_DIR must name the source tree (set by benchmarks/peers/CMakeLists.txt)"
#endif

namespace strata::bench {
namespace {

namespace fs = std::filesystem;

constexpr double kRtol = 1e-4, kAtol = 1e-5;
constexpr const char* kLibraryFunction = "peer.add_one";

std::string& DumpDir() {
  static std::string dir;
  return dir;
}

// out[0] = in[0] + 1 on two one-element f32 tensors (args: in, out). It checks
// what the TVM side's C++ function checks (its ffi::TensorView parameters add
// the argument-count and is-a-tensor checks, done here by hand).
Status AddOne(void* /*context*/, const vm::Value* const* args, int32_t num_args, vm::Value* /*out_result*/) {
  if (num_args != 2 || !args[0]->is_tensor() || !args[1]->is_tensor()) {
    return Status::Error("peer.add_one expects two tensors (in, out)");
  }
  const vm::Tensor& in = *args[0]->tensor();
  vm::Tensor& out = *args[1]->tensor();
  if (in.dtype() != DataType::Float(32) || out.dtype() != DataType::Float(32) || in.num_elements() != 1 ||
      out.num_elements() != 1) {
    return Status::Error("peer.add_one expects one-element f32 tensors");
  }
  out.data_as<float>()[0] = in.data_as<float>()[0] + 1.0f;
  return Status::Ok();
}

enum class ChainKind { kLibrary, kCompiledKernel };

// The text IR of @main(x, a, b): `calls` calls of the library function or of the
// tensor program @add_one, alternating between the outputs a and b.
std::string ChainSource(ChainKind kind, int calls) {
  std::string text;
  if (kind == ChainKind::kCompiledKernel) {
    text +=
        "prim_func @add_one(A: Buffer[(1,), f32], B: Buffer[(1,), f32]) {\n"
        "  for i in range(0, 1) {\n"
        "    B[i] = A[i] + 1.0\n"
        "  }\n"
        "}\n\n";
  }
  text += "func @main(x: Tensor[(1,), f32], a: Tensor[(1,), f32], b: Tensor[(1,), f32]) -> Tensor[(1,), f32] {\n";
  std::string in = "x";
  for (int i = 0; i < calls; ++i) {
    const std::string out = i % 2 == 0 ? "a" : "b";
    // The call's value (no value) is never used, so the VM discards it.
    text += "  c" + std::to_string(i) + " = ";
    if (kind == ChainKind::kLibrary) {
      text += std::string("call_packed(\"") + kLibraryFunction + "\", " + in + ", " + out + ")\n";
    } else {
      text += "@add_one(" + in + ", " + out + ")\n";
    }
    in = out;
  }
  text += "  return " + in + "\n}\n";
  return text;
}

// A loaded executable with its VM and the arguments of one call.
struct Loaded {
  std::unique_ptr<vm::VirtualMachine> machine;
  std::vector<vm::Value> inputs;
};

Loaded& GetChain(ChainKind kind, int calls) {
  static std::map<std::pair<ChainKind, int>, Loaded> cache;
  auto found = cache.find({kind, calls});
  if (found != cache.end()) return found->second;

  const std::string name =
      std::string(kind == ChainKind::kLibrary ? "library" : "compiled_kernel") + "_" + std::to_string(calls);
  ir::IRModule module = OrDie(ir::ParseModule(ChainSource(kind, calls), "chain_" + name + ".sir"));
  driver::CompileOptions options;
  if (!DumpDir().empty()) options.dump_ir_dir = (fs::path(DumpDir()) / name).string();
  const std::vector<uint8_t> bytes = OrDie(driver::Compile(std::move(module), options));
  Loaded loaded;
  loaded.machine = std::make_unique<vm::VirtualMachine>(OrDie(vm::Executable::LoadFromBytes(bytes)));
  // x = 0; the outputs are allocated once here, outside the timed calls.
  for (int i = 0; i < 3; ++i) {
    loaded.inputs.push_back(vm::Value::FromTensor(OrDie(vm::Tensor::FromValues<float>({1}, {0.0f}))));
  }
  const vm::Value result = OrDie(loaded.machine->Invoke("main", loaded.inputs));
  if (!result.is_tensor() || result.tensor()->num_elements() != 1 ||
      result.tensor()->data_as<float>()[0] != static_cast<float>(calls)) {
    Die("chain " + name + ": the result is " + result.Describe() + ", expected [" + std::to_string(calls) + "]");
  }
  return cache.emplace(std::pair{kind, calls}, std::move(loaded)).first->second;
}

void BM_Chain(benchmark::State& state, ChainKind kind) {
  const int calls = static_cast<int>(state.range(0));
  Loaded& loaded = GetChain(kind, calls);
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    StatusOr<vm::Value> result = loaded.machine->Invoke("main", loaded.inputs);
    if (!result.ok()) Die("chain: " + result.status().message());
    benchmark::DoNotOptimize(result);
  }
  const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
  if (calls > 0) state.counters["ns_per_call"] = ns / static_cast<double>(state.iterations()) / calls;
}

vm::Value ReadNpyOrDie(const fs::path& path) { return vm::Value::FromTensor(OrDie(vm::ReadNpyFile(path.string()))); }

// Dies unless `actual` is a tensor of `expected`'s type and shape within
// kRtol (relative, plus kAtol absolute) of it, as numpy.allclose.
void CheckOrDie(const std::string& what, const vm::Value& actual, const vm::Value& expected) {
  if (!actual.is_tensor()) Die(what + ": the result is " + actual.Describe() + ", not a tensor");
  const vm::Tensor& a = *actual.tensor();
  const vm::Tensor& e = *expected.tensor();
  if (a.TypeString() != e.TypeString()) {
    Die(what + ": the result is " + a.TypeString() + ", expected " + e.TypeString());
  }
  const std::vector<float> av = OrDie(a.ToVector<float>());
  const std::vector<float> ev = OrDie(e.ToVector<float>());
  for (size_t i = 0; i < av.size(); ++i) {
    if (!(std::fabs(av[i] - ev[i]) <= kAtol + kRtol * std::fabs(ev[i]))) {
      Die(what + ": element " + std::to_string(i) + " is " + std::to_string(av[i]) + ", expected " +
          std::to_string(ev[i]));
    }
  }
}

Loaded& GetMlp() {
  static Loaded* loaded = [] {
    const fs::path dir = fs::path(STRATA_SOURCE_DIR) / "tests" / "fixtures" / "onnx" / "mlp";
    ir::IRModule module = OrDie(frontend::ImportOnnxFile((dir / "model.onnx").string()));
    const std::vector<uint8_t> bytes = OrDie(driver::Compile(std::move(module), driver::CompileOptions{}));
    auto* model = new Loaded;
    model->machine = std::make_unique<vm::VirtualMachine>(OrDie(vm::Executable::LoadFromBytes(bytes)));
    model->inputs.push_back(ReadNpyOrDie(dir / "run_2" / "in0.npy"));
    CheckOrDie("mlp", OrDie(model->machine->Invoke("main", model->inputs)), ReadNpyOrDie(dir / "run_2" / "out0.npy"));
    return model;
  }();
  return *loaded;
}

void BM_Mlp(benchmark::State& state) {
  Loaded& loaded = GetMlp();
  for (auto _ : state) {
    StatusOr<vm::Value> result = loaded.machine->Invoke("main", loaded.inputs);
    if (!result.ok()) Die("mlp: " + result.status().message());
    benchmark::DoNotOptimize(result);
  }
}

}  // namespace
}  // namespace strata::bench

int main(int argc, char** argv) {
  using namespace strata::bench;
  // Our own flag, taken out before Google Benchmark sees the arguments.
  for (int i = 1; i < argc; ++i) {
    constexpr const char* kDumpFlag = "--dump-chain-ir=";
    if (std::strncmp(argv[i], kDumpFlag, std::strlen(kDumpFlag)) == 0) {
      DumpDir() = argv[i] + std::strlen(kDumpFlag);
      for (int j = i; j + 1 < argc; ++j) argv[j] = argv[j + 1];
      --argc;
      --i;
    }
  }
  // Registered before any executable loads: library functions resolve at load time.
  strata::Status registered = strata::vm::RegisterLibraryFunction(kLibraryFunction, AddOne);
  if (!registered.ok()) Die(registered.message());

  benchmark::RegisterBenchmark("Chain/library", BM_Chain, ChainKind::kLibrary)
      ->Arg(1000)
      ->Arg(0)
      ->Unit(benchmark::kMicrosecond)
      ->UseRealTime();
  benchmark::RegisterBenchmark("Chain/compiled_kernel", BM_Chain, ChainKind::kCompiledKernel)
      ->Arg(1000)
      ->Unit(benchmark::kMicrosecond)
      ->UseRealTime();
  benchmark::RegisterBenchmark("Mlp/batch17", BM_Mlp)->Unit(benchmark::kMicrosecond)->UseRealTime();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
