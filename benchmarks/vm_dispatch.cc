// The VM's dispatch cost: what interpreting a call costs on top of making it.
//
// Four programs, each written directly as bytecode (serialization::ExecutableSpec
// -> WriteExecutable -> Executable::LoadFromBytes; no compiler), and for each a
// baseline row that does the same work by calling the same library functions
// from C++ through the same registry function pointers, with argument arrays
// built the way a C++ caller builds them:
//
//   chain        1000 calls of bench.add_one(in, out) (out = in + 1 on 1-element
//                f32 tensors), each reading the previous call's output; both
//                outputs are preallocated (parameters), so the program is the
//                1000 Call instructions, each reading 2 registers, and a Ret.
//   chain_kernel the same chain with a compiled kernel in place of the library
//                function: add_one(A: f32[1], B: f32[1]) behind the kernel ABI
//                (abi/kernel_abi.h), written in C with the checks the compiler's
//                generated entry makes (benchmarks/bench_kernel_module.c), so the
//                benchmark needs no compiler. Its direct row calls the kernel
//                from C++ with the StrataKernelArg array and type codes built on
//                the stack per call, as a C++ caller builds them.
//   chain_alloc  the same chain with vm.builtin.alloc_tensor(shape, dtype)
//                before every call: 2000 Calls (the tensor freed when its
//                register is overwritten two steps later, in both rows; both
//                allocate from a MemoryPool installed for the run, the direct
//                row from its own).
//   shape        300 rounds of shape_of + match_shape + make_shape (the
//                builtins of every dynamic-shape function prologue; immediates
//                and string constants as operands).
//   loop         a counted loop of 1000 iterations: If on a register, a call of
//                bench.decrement, a backward Goto.
//
// Rows are VmDispatch/<case>/direct and VmDispatch/<case>/vm. Counters (from
// the thread's CPU time, see TimeRows):
//   ns_per_instr   time per Invoke / VM instructions executed per Invoke (the
//                  direct row divides by the same count, for comparison); the
//                  Invoke's own set-up is included, spread over the program
//   ns_per_call    time per Invoke / library calls per Invoke (for loop: per
//                  iteration, which makes one call)
//   vm rows only, against the direct row of the same case in the same run:
//   direct_ns_per_call, overhead_ns_per_call (vm - direct) and vm_over_direct
//   (the ratio; 1 = free dispatch).
//   chain_kernel's vm row also: library_vm_ns_per_call (the chain/vm row of the
//   same run) and kernel_over_library (the ratio; <= 1: a kernel call costs no
//   more than a library call).
// The overhead counters need the direct row to have run first: filter by case
// (--benchmark_filter=chain/), not by row; kernel_over_library needs the chain
// case too (--benchmark_filter=chain).
//
// Every row runs its program once and checks the result before it is timed;
// a wrong result fails the row (SkipWithError) and the program exits 1, which
// is what the smoke test (VmDispatchBench.ChecksEveryCase) relies on.
#include <cstdint>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <time.h>
#include <utility>
#include <vector>

#include <benchmark/benchmark.h>

#include "abi/kernel_abi.h"
#include "benchmarks/bench_util.h"
#include "tests/vm/executable_builder.h"
#include "vm/executable.h"
#include "vm/kernel_runtime.h"
#include "vm/memory_pool.h"
#include "vm/registry.h"
#include "vm/virtual_machine.h"

namespace strata::bench {
namespace {

using testing::C;
using testing::CodeBuilder;
using testing::ExecutableBuilder;
using testing::Imm;
using testing::kVoid;
using testing::R;
using vm::Value;

constexpr int kChainCalls = 1000;
constexpr int kShapeRounds = 300;
constexpr int64_t kLoopIterations = 1000;

// ---- the library functions under test ---------------------------------------

// bench.add_one(in: f32[1], out: f32[1]): out = in + 1 (destination passing).
Status AddOne(void*, const Value* const* args, int32_t num_args, Value*) {
  if (num_args != 2 || !args[0]->is_tensor() || !args[1]->is_tensor()) {
    return Status::Error("bench.add_one expects (in: Tensor, out: Tensor)");
  }
  const vm::Tensor* in = args[0]->tensor();
  vm::Tensor* out = args[1]->tensor();
  if (in->dtype() != DataType::F32() || out->dtype() != DataType::F32() || in->num_elements() != 1 ||
      out->num_elements() != 1) {
    return Status::Error("bench.add_one expects 1-element f32 tensors, got " + in->TypeString() + " and " +
                         out->TypeString());
  }
  *out->data_as<float>() = *in->data_as<float>() + 1.0f;
  return Status::Ok();
}

// bench.decrement(n: Int) -> Int n - 1.
Status Decrement(void*, const Value* const* args, int32_t num_args, Value* out_result) {
  if (num_args != 1 || !args[0]->is_int()) return Status::Error("bench.decrement expects one Int");
  *out_result = Value::FromInt(args[0]->int_value() - 1);
  return Status::Ok();
}

// The registered entry of `name`: what the VM resolves at load time and what
// the direct rows call.
vm::LibraryFunction Lookup(const char* name) {
  std::optional<vm::LibraryFunction> fn = vm::LookupLibraryFunction(name);
  if (!fn) Die(std::string("library function '") + name + "' is not registered");
  return *fn;
}

void RegisterFunctions() {
  static const bool registered = [] {
    vm::RegisterBuiltins();
    for (auto [name, fn] : {std::pair{"bench.add_one", &AddOne}, std::pair{"bench.decrement", &Decrement}}) {
      Status status = vm::RegisterLibraryFunction(name, fn);
      if (!status.ok()) Die(status.message());
    }
    return true;
  }();
  (void)registered;
}

Value F32Scalar(float v) {
  return Value::FromTensor(OrDie(vm::Tensor::FromValues<float>(std::vector<int64_t>{1}, std::vector<float>{v})));
}

// Register of the chain's i-th output: the two preallocated outputs alternate,
// and call i reads call i-1's output (call 0 reads the input, r0).
int64_t ChainOut(int i) { return 1 + i % 2; }
int64_t ChainIn(int i) { return i == 0 ? 0 : ChainOut(i - 1); }

// ---- the cases --------------------------------------------------------------

// One benchmark case: the program, its arguments, how to check its result, and
// the same work done directly from C++.
struct Case {
  std::string name;
  std::shared_ptr<const vm::Executable> executable;
  // Fresh arguments: every row checks its first result on new ones, so a
  // result left in an output tensor by an earlier row cannot pass the check.
  std::vector<Value> (*make_args)() = nullptr;
  std::vector<Value> args;   // make_args(), reused by the timed runs
  int64_t instructions = 0;  // executed per Invoke
  int64_t calls = 0;         // library calls per Invoke
  // Empty when `result` (of the VM or of Direct) is right, else what is wrong.
  std::string (*check)(const Value& result) = nullptr;
  // The baseline: the same calls from C++; returns what the program returns.
  StatusOr<Value> (*direct)(const std::vector<Value>& args) = nullptr;
};

std::string CheckChain(const Value& result) {
  const float want = 0.5f + kChainCalls;
  if (!result.is_tensor() || result.tensor()->dtype() != DataType::F32() || result.tensor()->num_elements() != 1) {
    return "expected a 1-element f32 tensor, got " + result.Describe();
  }
  const float got = *result.tensor()->data_as<float>();
  if (got != want) return "expected " + std::to_string(want) + ", got " + std::to_string(got);
  return "";
}

Case ChainCase() {
  ExecutableBuilder b;
  const int add = b.Library("bench.add_one");
  CodeBuilder code;
  for (int i = 0; i < kChainCalls; ++i) code.Call(kVoid, add, {R(ChainIn(i)), R(ChainOut(i))});
  code.Ret(ChainOut(kChainCalls - 1));
  b.Bytecode("main", {"x", "out0", "out1"}, 3, code);
  Case c;
  c.name = "chain";
  c.executable = OrDie(vm::Executable::LoadFromBytes(b.Write()));
  c.make_args = [] { return std::vector<Value>{F32Scalar(0.5f), F32Scalar(0), F32Scalar(0)}; };
  c.instructions = kChainCalls + 1;
  c.calls = kChainCalls;
  c.check = CheckChain;
  c.direct = [](const std::vector<Value>& args) -> StatusOr<Value> {
    static const vm::LibraryFunction add = Lookup("bench.add_one");
    const Value* regs = args.data();
    for (int i = 0; i < kChainCalls; ++i) {
      const Value* argv[2] = {&regs[ChainIn(i)], &regs[ChainOut(i)]};
      Value result;
      Status status = add.fn(add.context, argv, 2, &result);
      if (!status.ok()) return status;
    }
    return regs[ChainOut(kChainCalls - 1)];
  };
  return c;
}

#ifndef STRATA_BENCH_KERNEL_MODULE
#error "STRATA_BENCH_KERNEL_MODULE must name the kernel module (set by benchmarks/CMakeLists.txt)"
#endif

std::vector<uint8_t> ReadFileOrDie(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in.good()) Die("cannot read " + path);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// The kernel add_one as the executable resolved it: what the direct row calls.
StrataKernelFn g_add_one_kernel = nullptr;

Case ChainKernelCase() {
  ExecutableBuilder b;
  serialization::NativeModuleSpec module;
  module.target_triple = "x86_64-pc-linux-gnu";
  module.cpu = "generic";
  module.code = ReadFileOrDie(STRATA_BENCH_KERNEL_MODULE);
  module.symbols = {"add_one"};
  b.spec.native_modules.push_back(std::move(module));
  const int add = b.Kernel("add_one", 0, "add_one");
  CodeBuilder code;
  for (int i = 0; i < kChainCalls; ++i) code.Call(kVoid, add, {R(ChainIn(i)), R(ChainOut(i))});
  code.Ret(ChainOut(kChainCalls - 1));
  b.Bytecode("main", {"x", "out0", "out1"}, 3, code);
  Case c;
  c.name = "chain_kernel";
  c.executable = OrDie(vm::Executable::LoadFromBytes(b.Write()));
  g_add_one_kernel = c.executable->functions()[static_cast<size_t>(add)].kernel;
  c.make_args = [] { return std::vector<Value>{F32Scalar(0.5f), F32Scalar(0), F32Scalar(0)}; };
  c.instructions = kChainCalls + 1;
  c.calls = kChainCalls;
  c.check = CheckChain;
  c.direct = [](const std::vector<Value>& args) -> StatusOr<Value> {
    const Value* regs = args.data();
    for (int i = 0; i < kChainCalls; ++i) {
      StrataKernelArg argv[2];
      argv[0].tensor = regs[ChainIn(i)].tensor()->dl();
      argv[1].tensor = regs[ChainOut(i)].tensor()->dl();
      const int32_t codes[2] = {STRATA_ARG_TENSOR, STRATA_ARG_TENSOR};
      if (g_add_one_kernel(argv, codes, 2) != 0) return Status::Error("add_one failed: " + vm::TakeKernelError());
    }
    return regs[ChainOut(kChainCalls - 1)];
  };
  return c;
}

Case ChainAllocCase() {
  ExecutableBuilder b;
  const int add = b.Library("bench.add_one");
  const int alloc = b.Library("vm.builtin.alloc_tensor");
  const int shape = b.Shape({1});
  const int f32 = b.DType(DataType::F32());
  CodeBuilder code;
  for (int i = 0; i < kChainCalls; ++i) {
    code.Call(ChainOut(i), alloc, {C(shape), C(f32)});
    code.Call(kVoid, add, {R(ChainIn(i)), R(ChainOut(i))});
  }
  code.Ret(ChainOut(kChainCalls - 1));
  b.Bytecode("main", {"x"}, 3, code);
  Case c;
  c.name = "chain_alloc";
  c.executable = OrDie(vm::Executable::LoadFromBytes(b.Write()));
  c.make_args = [] { return std::vector<Value>{F32Scalar(0.5f)}; };
  c.instructions = 2 * kChainCalls + 1;
  c.calls = 2 * kChainCalls;
  c.check = CheckChain;
  c.direct = [](const std::vector<Value>& args) -> StatusOr<Value> {
    static const vm::LibraryFunction add = Lookup("bench.add_one");
    static const vm::LibraryFunction alloc = Lookup("vm.builtin.alloc_tensor");
    // The program's constants, made once as the loader makes them.
    static const Value shape = Value::FromShape({1});
    static const Value f32 = Value::FromDataType(DataType::F32());
    Value regs[3] = {args[0], Value(), Value()};
    for (int i = 0; i < kChainCalls; ++i) {
      const Value* alloc_argv[2] = {&shape, &f32};
      Value tensor;
      Status status = alloc.fn(alloc.context, alloc_argv, 2, &tensor);
      if (!status.ok()) return status;
      regs[ChainOut(i)] = std::move(tensor);
      const Value* argv[2] = {&regs[ChainIn(i)], &regs[ChainOut(i)]};
      Value result;
      status = add.fn(add.context, argv, 2, &result);
      if (!status.ok()) return status;
    }
    return regs[ChainOut(kChainCalls - 1)];
  };
  return c;
}

// Every round binds m and n from x: f32[4, 8] into the heap and rebuilds the shape.
std::string CheckShape(const Value& result) {
  if (!result.is_shape() || result.shape().size() != 2 || result.shape()[0] != 4 || result.shape()[1] != 8) {
    return "expected Shape (4, 8), got " + result.Describe();
  }
  return "";
}

Case ShapeCase() {
  ExecutableBuilder b;
  const int shape_of = b.Library("vm.builtin.shape_of");
  const int match = b.Library("vm.builtin.match_shape");
  const int make = b.Library("vm.builtin.make_shape");
  const int m = b.String("m"), n = b.String("n");
  const int ctx = b.String("main: parameter 'x' (match_shape)");
  CodeBuilder code;
  for (int i = 0; i < kShapeRounds; ++i) {
    code.Call(2, shape_of, {R(0)})
        .Call(kVoid, match, {R(2), R(1), Imm(2), Imm(1), Imm(0), C(m), Imm(1), Imm(1), C(n), C(ctx)})
        .Call(3, make, {R(1), Imm(2), Imm(1), Imm(0), Imm(1), Imm(1)});
  }
  code.Ret(3);
  b.Bytecode("main", {"x", "heap"}, 4, code);
  Case c;
  c.name = "shape";
  c.executable = OrDie(vm::Executable::LoadFromBytes(b.Write()));
  c.make_args = [] {
    vm::Ref<vm::Tensor> heap = OrDie(vm::Tensor::Empty({2}, DataType::I64()));
    heap->data_as<int64_t>()[0] = heap->data_as<int64_t>()[1] = 0;
    return std::vector<Value>{Value::FromTensor(OrDie(vm::Tensor::Empty({4, 8}, DataType::F32()))),
                              Value::FromTensor(std::move(heap))};
  };
  c.instructions = 3 * kShapeRounds + 1;
  c.calls = 3 * kShapeRounds;
  c.check = CheckShape;
  c.direct = [](const std::vector<Value>& args) -> StatusOr<Value> {
    static const vm::LibraryFunction shape_of = Lookup("vm.builtin.shape_of");
    static const vm::LibraryFunction match = Lookup("vm.builtin.match_shape");
    static const vm::LibraryFunction make = Lookup("vm.builtin.make_shape");
    // The program's constants (loaded once) and its immediates as Values.
    static const Value m = Value::FromString("m"), n = Value::FromString("n");
    static const Value ctx = Value::FromString("main: parameter 'x' (match_shape)");
    const Value zero = Value::FromInt(0), one = Value::FromInt(1), two = Value::FromInt(2);
    const Value& x = args[0];
    const Value& heap = args[1];
    Value shape, made;
    for (int i = 0; i < kShapeRounds; ++i) {
      const Value* shape_of_argv[1] = {&x};
      Value s;
      Status status = shape_of.fn(shape_of.context, shape_of_argv, 1, &s);
      if (!status.ok()) return status;
      shape = std::move(s);
      const Value* match_argv[10] = {&shape, &heap, &two, &one, &zero, &m, &one, &one, &n, &ctx};
      Value none;
      status = match.fn(match.context, match_argv, 10, &none);
      if (!status.ok()) return status;
      const Value* make_argv[6] = {&heap, &two, &one, &zero, &one, &one};
      Value result;
      status = make.fn(make.context, make_argv, 6, &result);
      if (!status.ok()) return status;
      made = std::move(result);
    }
    return made;
  };
  return c;
}

std::string CheckLoop(const Value& result) {
  if (!result.is_int() || result.int_value() != 0) return "expected Int 0, got " + result.Describe();
  return "";
}

Case LoopCase() {
  ExecutableBuilder b;
  const int dec = b.Library("bench.decrement");
  CodeBuilder code;
  code.Label("loop").If(0, "done").Call(0, dec, {R(0)}).Goto("loop").Label("done").Ret(0);
  b.Bytecode("main", {"n"}, 1, code);
  Case c;
  c.name = "loop";
  c.executable = OrDie(vm::Executable::LoadFromBytes(b.Write()));
  c.make_args = [] { return std::vector<Value>{Value::FromInt(kLoopIterations)}; };
  c.instructions = 3 * kLoopIterations + 2;  // + the last If and the Ret
  c.calls = kLoopIterations;
  c.check = CheckLoop;
  c.direct = [](const std::vector<Value>& args) -> StatusOr<Value> {
    static const vm::LibraryFunction dec = Lookup("bench.decrement");
    Value n = args[0];
    // The If's test (an Int is true when non-zero), the call, the jump back.
    while (n.is_int() && n.int_value() != 0) {
      const Value* argv[1] = {&n};
      Value result;
      Status status = dec.fn(dec.context, argv, 1, &result);
      if (!status.ok()) return status;
      n = std::move(result);
    }
    return n;
  };
  return c;
}

Case& GetCase(const std::string& name) {
  static std::map<std::string, Case> cases = [] {
    RegisterFunctions();
    std::map<std::string, Case> all;
    for (Case c : {ChainCase(), ChainKernelCase(), ChainAllocCase(), ShapeCase(), LoopCase()}) {
      c.args = c.make_args();
      all.emplace(c.name, std::move(c));
    }
    return all;
  }();
  auto it = cases.find(name);
  if (it == cases.end()) Die("no case named " + name);
  return it->second;
}

// Set when any row failed: the process then exits 1 (SkipWithError alone
// reports the row but exits 0).
bool g_failed = false;

void Fail(benchmark::State& state, const std::string& message) {
  g_failed = true;
  state.SkipWithError(message.c_str());
}

// ns per call of each case's direct row, the last time it ran.
std::map<std::string, double>& DirectNsPerCall() {
  static std::map<std::string, double> ns;
  return ns;
}

// ns per call of each case's vm row, the last time it ran.
std::map<std::string, double>& VmNsPerCall() {
  static std::map<std::string, double> ns;
  return ns;
}

// CPU time of the calling thread, in ns.
double ThreadCpuNs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

// Times the loop of `state` around `run_once` and sets the per-row counters.
// They use the thread's CPU time, not wall time: on a machine shared with
// other work, time spent descheduled would otherwise land in the difference
// between two rows timed seconds apart.
template <typename F>
void TimeRows(benchmark::State& state, const Case& c, F&& run_once) {
  const double start = ThreadCpuNs();
  for (auto _ : state) {
    if (!run_once()) return;
  }
  const double ns = (ThreadCpuNs() - start) / static_cast<double>(state.iterations());
  state.counters["ns_per_instr"] = ns / static_cast<double>(c.instructions);
  state.counters["ns_per_call"] = ns / static_cast<double>(c.calls);
  state.SetItemsProcessed(state.iterations() * c.calls);
}

void BM_Direct(benchmark::State& state, const std::string& name) {
  const Case& c = GetCase(name);
  // Builtins allocate from the running VM's memory pool; the direct calls get
  // a pool of their own, installed per run as Invoke installs the VM's.
  const std::shared_ptr<vm::MemoryPool> pool = vm::MemoryPool::Create();
  auto run = [&](const std::vector<Value>& args) {
    vm::MemoryPoolScope scope(pool.get());
    return c.direct(args);
  };
  StatusOr<Value> first = run(c.make_args());
  if (!first.ok()) return Fail(state, "direct: " + first.status().message());
  if (std::string error = c.check(*first); !error.empty()) return Fail(state, "direct: " + error);
  TimeRows(state, c, [&] {
    StatusOr<Value> result = run(c.args);
    if (!result.ok()) {
      Fail(state, "direct: " + result.status().message());
      return false;
    }
    benchmark::DoNotOptimize(result);
    return true;
  });
  if (!state.error_occurred()) {
    DirectNsPerCall()[name] = state.counters["ns_per_call"];
  }
}

void BM_Vm(benchmark::State& state, const std::string& name) {
  const Case& c = GetCase(name);
  vm::VirtualMachine machine(c.executable);
  StatusOr<Value> first = machine.Invoke("main", c.make_args());
  if (!first.ok()) return Fail(state, "vm: " + first.status().message());
  if (std::string error = c.check(*first); !error.empty()) return Fail(state, "vm: " + error);
  TimeRows(state, c, [&] {
    StatusOr<Value> result = machine.Invoke("main", c.args);
    if (!result.ok()) {
      Fail(state, "vm: " + result.status().message());
      return false;
    }
    benchmark::DoNotOptimize(result);
    return true;
  });
  if (state.error_occurred()) return;
  const double vm_ns = state.counters["ns_per_call"];
  VmNsPerCall()[name] = vm_ns;
  // The kernel chain against the library chain, both through the VM.
  if (auto library = VmNsPerCall().find("chain"); name == "chain_kernel" && library != VmNsPerCall().end()) {
    state.counters["library_vm_ns_per_call"] = library->second;
    state.counters["kernel_over_library"] = vm_ns / library->second;
  }
  auto direct = DirectNsPerCall().find(name);
  if (direct == DirectNsPerCall().end()) return;
  state.counters["direct_ns_per_call"] = direct->second;
  state.counters["overhead_ns_per_call"] = vm_ns - direct->second;
  state.counters["vm_over_direct"] = vm_ns / direct->second;
}

}  // namespace
}  // namespace strata::bench

int main(int argc, char** argv) {
  // chain before chain_kernel: its vm row reads chain's.
  for (const char* name : {"chain", "chain_kernel", "chain_alloc", "shape", "loop"}) {
    // direct first: the vm row reads its time.
    benchmark::RegisterBenchmark((std::string("VmDispatch/") + name + "/direct").c_str(), strata::bench::BM_Direct,
                                 std::string(name))
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark((std::string("VmDispatch/") + name + "/vm").c_str(), strata::bench::BM_Vm,
                                 std::string(name))
        ->Unit(benchmark::kMicrosecond);
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return strata::bench::g_failed ? 1 : 0;
}
