// The runtime under concurrent use, written to run under ThreadSanitizer
// (scripts/test.sh) as well as in the normal build. Every test checks results
// computed independently here, not only that nothing crashed:
//  - VMs on 8 threads share one executable of a dynamic-shape layer and call it
//    at different shapes; its kernels split their loops on the kernel thread
//    pool (one with a nested loop), so the pool serves many VMs at once.
//  - The same with a oneDNN library kernel, whose primitive cache the threads share.
//  - The simulated NPU plug-in: VMs and direct PluggedDevice users submit to the
//    same device at once (more VMs than it has queues, too), a VM's failed
//    device command fails that VM's call only, and executables load on several
//    threads at once.
//  - MemoryPool: tensors allocated on some threads are freed on others while
//    another thread measures, trims and empties the pool.
//  - ThreadPool: parallel loops from several threads, nested loops, errors
//    from chunks, loops after the workers went to sleep, and shutdown at exit.
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/vm/device_programs.h"
#include "tests/vm/executable_builder.h"
#include "tests/vm/test_util.h"
#include "vm/kernel_runtime.h"
#include "vm/kernel_threads.h"
#include "vm/memory_pool.h"
#include "vm/plugged_device.h"
#include "vm/storage.h"
#include "vm/tensor.h"
#include "vm/thread_pool.h"
#include "vm/virtual_machine.h"

namespace strata::testing {
namespace {

using vm::Value;
using vm::VirtualMachine;

// The pool runs loops on this many threads (caller included): more than the
// two cores of the CI machine, so that a job's chunks really interleave.
constexpr int kPoolThreads = 4;

class ConcurrencyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Fixed before any kernel runs in this process (each test may be its own process).
    Status status = vm::SetKernelThreadCount(kPoolThreads);
    ASSERT_TRUE(status.ok()) << status.message();
    ASSERT_EQ(vm::ThreadPool::Global().num_threads(), kPoolThreads);
    vm::RegisterDevicePlugin("sim_npu", STRATA_SIM_NPU_PLUGIN);
  }
};

// Runs body(t) for t in [0, count) on `count` threads released together, and
// returns what each reported: "" when it passed, else the first failure.
std::vector<std::string> RunConcurrently(int count, const std::function<std::string(int)>& body) {
  std::vector<std::string> failures(static_cast<size_t>(count));
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < count; ++t) {
    threads.emplace_back([&, t] {
      ready.fetch_add(1);
      while (ready.load() < count) std::this_thread::yield();
      failures[static_cast<size_t>(t)] = body(t);
    });
  }
  for (std::thread& thread : threads) thread.join();
  return failures;
}

void ExpectAllPassed(const std::vector<std::string>& failures) {
  for (size_t t = 0; t < failures.size(); ++t) EXPECT_EQ(failures[t], "") << "thread " << t;
}

bool EndsWith(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// "" when `got` (a CPU f32 tensor of `shape`) matches `want` within
// `tolerance` absolute plus `tolerance` relative, else what differs.
std::string CompareF32(const Value& got, const std::vector<int64_t>& shape, const std::vector<float>& want,
                       double tolerance) {
  if (!got.is_tensor()) return "expected a tensor, got " + got.Describe();
  const vm::Tensor& t = *got.tensor();
  if (std::vector<int64_t>(t.shape().begin(), t.shape().end()) != shape) {
    return "expected shape " + vm::ShapeToString(shape) + ", got " + t.TypeString();
  }
  auto values = t.ToVector<float>();
  if (!values.ok()) return values.status().message();
  for (size_t i = 0; i < want.size(); ++i) {
    if (!(std::fabs((*values)[i] - want[i]) <= tolerance + tolerance * std::fabs(want[i]))) {
      return "element " + std::to_string(i) + " is " + std::to_string((*values)[i]) + ", expected " +
             std::to_string(want[i]);
    }
  }
  return "";
}

Value F32Tensor(const std::vector<int64_t>& shape, const std::vector<float>& values) {
  auto t = vm::Tensor::FromValues<float>(std::span<const int64_t>(shape), std::span<const float>(values));
  return t.ok() ? Value::FromTensor(std::move(t).value()) : Value();
}

// ---- 1. one dynamic-shape executable, VMs on 8 threads -------------------------------

serialization::NativeModuleSpec ConcurrencyKernels() {
  serialization::NativeModuleSpec m;
  m.target_triple = "x86_64-pc-linux-gnu";
  m.cpu = "generic";
  m.code = ReadFile(STRATA_CONCURRENCY_KERNELS);
  m.symbols = {"shape_func_matmul_bytes", "parallel_matmul", "parallel_bias_relu"};
  return m;
}

// main(a: Tensor[(m, k), f32], b: Tensor[(k, n), f32], bias: Tensor[(n,), f32])
//   = relu(a @ b + bias), as the compiler lowers it: the symbolic dims bound on
// the shape heap, a shape function computing the intermediate's bytes, the
// intermediate planned in a storage, then two parallel kernels.
std::vector<uint8_t> DynamicLayerExecutable() {
  ExecutableBuilder b;
  b.spec.native_modules.push_back(ConcurrencyKernels());
  const int alloc_heap = b.Library("vm.builtin.alloc_shape_heap");
  const int check_tensor = b.Library("vm.builtin.check_tensor_info");
  const int match_shape = b.Library("vm.builtin.match_shape");
  const int make_shape = b.Library("vm.builtin.make_shape");
  const int alloc_storage = b.Library("vm.builtin.alloc_storage");
  const int view = b.Library("vm.builtin.alloc_tensor_from_storage");
  const int alloc_tensor = b.Library("vm.builtin.alloc_tensor");
  const int kill = b.Library("vm.builtin.null");
  const int shape_func = b.Kernel("shape_func_matmul_bytes", 0, "shape_func_matmul_bytes");
  const int matmul = b.Kernel("parallel_matmul", 0, "parallel_matmul");
  const int bias_relu = b.Kernel("parallel_bias_relu", 0, "parallel_bias_relu");
  const int f32 = b.DType(DataType::F32());
  const int ctx_a = b.String("main: parameter 'a'");
  const int ctx_b = b.String("main: parameter 'b'");
  const int ctx_bias = b.String("main: parameter 'bias'");
  const int m = b.String("m"), k = b.String("k"), n = b.String("n");
  // r0 a, r1 b, r2 bias, r3 heap [m, k, n, m*n*4], r4 (m, n), r5 (m*n*4,), r6 storage, r7 a @ b, r8 result
  CodeBuilder code;
  code.Call(3, alloc_heap, {Imm(4)})
      .Call(kVoid, check_tensor, {R(0), Imm(2), C(f32), C(ctx_a)})
      .Call(kVoid, check_tensor, {R(1), Imm(2), C(f32), C(ctx_b)})
      .Call(kVoid, check_tensor, {R(2), Imm(1), C(f32), C(ctx_bias)})
      .Call(kVoid, match_shape, {R(0), R(3), Imm(2), Imm(1), Imm(0), C(m), Imm(1), Imm(1), C(k), C(ctx_a)})
      .Call(kVoid, match_shape, {R(1), R(3), Imm(2), Imm(2), Imm(1), C(k), Imm(1), Imm(2), C(n), C(ctx_b)})
      .Call(kVoid, match_shape, {R(2), R(3), Imm(1), Imm(2), Imm(2), C(n), C(ctx_bias)})
      .Call(kVoid, shape_func, {R(3)})
      .Call(5, make_shape, {R(3), Imm(1), Imm(1), Imm(3)})
      .Call(6, alloc_storage, {R(5), Imm(64)})
      .Call(4, make_shape, {R(3), Imm(2), Imm(1), Imm(0), Imm(1), Imm(2)})
      .Call(7, view, {R(6), Imm(0), R(4), C(f32)})
      .Call(kVoid, matmul, {R(0), R(1), R(7)})
      .Call(8, alloc_tensor, {R(4), C(f32)})
      .Call(kVoid, bias_relu, {R(7), R(2), R(8)})
      .Call(7, kill, {})
      .Call(6, kill, {})
      .Ret(8);
  b.Bytecode("main", {"a", "b", "bias"}, 9, code);
  return b.Write();
}

// What a thread passes on one call and what it expects back.
struct LayerCall {
  enum Kind { kValid, kNanInA, kBiasTooLong } kind = kValid;
  int64_t m = 0, k = 0, n = 0;
  int64_t nan_row = -1;
  std::vector<float> a, b, bias;
};

LayerCall MakeLayerCall(int thread, int call) {
  LayerCall c;
  // 1 to 37 rows: mostly more than the pool has threads, so most loops are split.
  c.m = 1 + (5 * thread + 3 * call) % 37;
  c.k = 1 + (thread + call) % 7;
  c.n = 1 + (2 * thread + 5 * call) % 9;
  c.a = Iota(c.m * c.k, -1.0f + 0.1f * static_cast<float>(thread), 0.25f);
  c.b = Iota(c.k * c.n, 0.5f - 0.05f * static_cast<float>(call), -0.125f);
  c.bias = Iota(c.n, -0.5f, 0.3f);
  if (call % 9 == 4) {
    c.kind = LayerCall::kNanInA;
    c.nan_row = call % c.m;
    c.a[static_cast<size_t>(c.nan_row * c.k)] = std::nanf("");
  } else if (call % 11 == 7) {
    c.kind = LayerCall::kBiasTooLong;
    c.bias.push_back(1.0f);
  }
  return c;
}

// relu(a @ b + bias), from the double-precision reference product.
std::vector<float> ExpectedLayer(const LayerCall& c) {
  std::vector<float> y = ReferenceMatmul(c.a, c.b, c.m, c.k, c.n);
  for (size_t i = 0; i < y.size(); ++i) y[i] = std::max(y[i] + c.bias[i % static_cast<size_t>(c.n)], 0.0f);
  return y;
}

// "" when `result` is what call `c` must return.
std::string CheckLayerResult(const LayerCall& c, const StatusOr<Value>& result) {
  switch (c.kind) {
    case LayerCall::kNanInA: {
      if (result.ok()) return "a NaN in row " + std::to_string(c.nan_row) + " was not reported";
      // The message a pool chunk recorded comes back to this VM, with this call's row.
      const std::string want =
          "compiled kernel 'parallel_bias_relu' failed: parallel_bias_relu: NaN in row " + std::to_string(c.nan_row);
      return EndsWith(result.status().message(), want) ? "" : "unexpected error: " + result.status().message();
    }
    case LayerCall::kBiasTooLong: {
      if (result.ok()) return "a bias of " + std::to_string(c.n + 1) + " elements was accepted";
      const std::string want = "main: parameter 'bias': dimension 0 expected n = " + std::to_string(c.n) + ", got " +
                               std::to_string(c.n + 1);
      return result.status().message().find(want) != std::string::npos
                 ? ""
                 : "unexpected error: " + result.status().message();
    }
    case LayerCall::kValid:
      if (!result.ok()) return result.status().message();
      return CompareF32(*result, {c.m, c.n}, ExpectedLayer(c), 1e-6);
  }
  return "unknown call kind";
}

TEST_F(ConcurrencyTest, VmsOnEightThreadsCallOneDynamicShapeExecutableAtTheirOwnShapes) {
  auto exe = LoadOrDie(DynamicLayerExecutable());
  ASSERT_NE(exe, nullptr);
  constexpr int kThreads = 8;
  constexpr int kCalls = 120;
  // Every thread makes a new VM every kCallsPerVm calls and checks one result
  // of the old VM after that VM is gone (its blocks go back to the old pool).
  constexpr int kCallsPerVm = 40;
  ExpectAllPassed(RunConcurrently(kThreads, [&](int thread) -> std::string {
    std::unique_ptr<VirtualMachine> machine;
    Value kept;
    LayerCall kept_call;
    for (int call = 0; call < kCalls; ++call) {
      if (call % kCallsPerVm == 0) {
        machine = std::make_unique<VirtualMachine>(exe);
        if (kept.is_tensor()) {
          if (std::string f = CheckLayerResult(kept_call, kept); !f.empty()) return "kept result: " + f;
          kept = Value();
        }
      }
      const LayerCall c = MakeLayerCall(thread, call);
      const Value args[] = {F32Tensor({c.m, c.k}, c.a), F32Tensor({c.k, c.n}, c.b),
                            F32Tensor({static_cast<int64_t>(c.bias.size())}, c.bias)};
      StatusOr<Value> result = machine->Invoke("main", args);
      if (std::string f = CheckLayerResult(c, result); !f.empty()) {
        return "call " + std::to_string(call) + " " + vm::ShapeToString(std::vector<int64_t>{c.m, c.k, c.n}) + ": " + f;
      }
      if (c.kind == LayerCall::kValid && !kept.is_tensor()) {
        kept = *result;
        kept_call = c;
      }
    }
    return "";
  }));
}

// main(a: Tensor[(m, k), f32], b: Tensor[(k, n), f32]) = strata.dnnl.matmul(a, b).
std::vector<uint8_t> DnnlMatmulExecutable() {
  ExecutableBuilder b;
  const int alloc_heap = b.Library("vm.builtin.alloc_shape_heap");
  const int match_shape = b.Library("vm.builtin.match_shape");
  const int make_shape = b.Library("vm.builtin.make_shape");
  const int alloc_tensor = b.Library("vm.builtin.alloc_tensor");
  const int matmul = b.Library("strata.dnnl.matmul");
  const int f32 = b.DType(DataType::F32());
  const int ctx_a = b.String("main: parameter 'a'");
  const int ctx_b = b.String("main: parameter 'b'");
  const int m = b.String("m"), k = b.String("k"), n = b.String("n");
  CodeBuilder code;
  code.Call(2, alloc_heap, {Imm(3)})
      .Call(kVoid, match_shape, {R(0), R(2), Imm(2), Imm(1), Imm(0), C(m), Imm(1), Imm(1), C(k), C(ctx_a)})
      .Call(kVoid, match_shape, {R(1), R(2), Imm(2), Imm(2), Imm(1), C(k), Imm(1), Imm(2), C(n), C(ctx_b)})
      .Call(3, make_shape, {R(2), Imm(2), Imm(1), Imm(0), Imm(1), Imm(2)})
      .Call(4, alloc_tensor, {R(3), C(f32)})
      .Call(kVoid, matmul, {R(0), R(1), R(4)})
      .Ret(4);
  b.Bytecode("main", {"a", "b"}, 5, code);
  return b.Write();
}

TEST_F(ConcurrencyTest, VmsOnEightThreadsShareOneDnnlPrimitiveCacheAtDifferentShapes) {
  auto exe = LoadOrDie(DnnlMatmulExecutable());
  ASSERT_NE(exe, nullptr);
  constexpr int kThreads = 8;
  constexpr int kCalls = 40;
  ExpectAllPassed(RunConcurrently(kThreads, [&](int thread) -> std::string {
    VirtualMachine machine(exe);
    for (int call = 0; call < kCalls; ++call) {
      // Few distinct shapes, so that threads often need the same primitive at once.
      const int64_t m = 1 + (call + thread) % 6, k = 3 + 5 * (call % 2), n = 4 + (call / 2) % 2;
      const std::vector<float> a = Iota(m * k, 0.1f * static_cast<float>(thread), 0.5f);
      const std::vector<float> b = Iota(k * n, -1.0f, 0.25f);
      const Value args[] = {F32Tensor({m, k}, a), F32Tensor({k, n}, b)};
      StatusOr<Value> result = machine.Invoke("main", args);
      if (!result.ok()) return "call " + std::to_string(call) + ": " + result.status().message();
      if (std::string f = CompareF32(*result, {m, n}, ReferenceMatmul(a, b, m, k, n), 1e-4); !f.empty()) {
        return "call " + std::to_string(call) + ": " + f;
      }
    }
    return "";
  }));
}

// ---- 2. the NPU plug-in with concurrent submitters ----------------------------------

constexpr int64_t kDenseIn = 7, kDenseOut = 5;

std::vector<float> DenseWeights() { return Iota(kDenseOut * kDenseIn, -0.75f, 0.125f); }
std::vector<float> DenseBias() { return {0.5f, -0.25f, 0, 1, -1}; }

using testing::DeviceKernel;

// main(x: Tensor[(m, 7), f32]) = 2 * relu(x W^T + bias) on the NPU, W [5, 7] and
// bias [5] constants (uploaded by whichever VM needs them first).
// unchecked(x: Tensor[(m, k), f32]): the same without checking k, so that a
// wrong k fails on the device, after the launch returned.
std::vector<uint8_t> NpuDenseExecutable(const std::string& device_options = "memory=16M") {
  ExecutableBuilder b;
  b.spec.devices.push_back({"sim_npu", device_options});
  const int alloc_heap = b.Library("vm.builtin.alloc_shape_heap");
  const int match_shape = b.Library("vm.builtin.match_shape");
  const int make_shape = b.Library("vm.builtin.make_shape");
  const int to_device = b.Library("vm.builtin.to_device");
  const int to_host = b.Library("vm.builtin.to_host");
  const int alloc = b.Library("vm.builtin.alloc_device_tensor");
  const int dense = DeviceKernel(b, "dense_bias_relu");
  const int add = DeviceKernel(b, "add");
  const int w = b.Tensor<float>(DataType::F32(), {kDenseOut, kDenseIn}, DenseWeights());
  const int bias = b.Tensor<float>(DataType::F32(), {kDenseOut}, DenseBias());
  const int f32 = b.DType(DataType::F32());
  const int ctx = b.String("main: parameter 'x'");
  const int m = b.String("m"), k = b.String("k"), seven = b.String("7");
  auto body = [&](CodeBuilder& code) {
    code.Call(2, make_shape, {R(1), Imm(2), Imm(1), Imm(0), Imm(0), Imm(kDenseOut)})
        .Call(3, to_device, {R(0), Imm(0)})
        .Call(4, to_device, {C(w), Imm(0)})
        .Call(5, to_device, {C(bias), Imm(0)})
        .Call(6, alloc, {R(2), C(f32), Imm(0)})
        .Call(kVoid, dense, {R(3), R(4), R(5), R(6)})
        .Call(7, alloc, {R(2), C(f32), Imm(0)})
        .Call(kVoid, add, {R(6), R(6), R(7)})
        .Call(8, to_host, {R(7)})
        .Ret(8);
  };
  CodeBuilder checked;
  checked.Call(1, alloc_heap, {Imm(2)})
      .Call(kVoid, match_shape, {R(0), R(1), Imm(2), Imm(1), Imm(0), C(m), Imm(0), Imm(kDenseIn), C(seven), C(ctx)});
  body(checked);
  b.Bytecode("main", {"x"}, 9, checked);
  CodeBuilder unchecked;
  unchecked.Call(1, alloc_heap, {Imm(2)})
      .Call(kVoid, match_shape, {R(0), R(1), Imm(2), Imm(1), Imm(0), C(m), Imm(1), Imm(1), C(k), C(ctx)});
  body(unchecked);
  b.Bytecode("unchecked", {"x"}, 9, unchecked);
  return b.Write();
}

std::vector<float> ExpectedNpuDense(const std::vector<float>& x, int64_t m) {
  const std::vector<float> w = DenseWeights(), bias = DenseBias();
  std::vector<float> y(static_cast<size_t>(m * kDenseOut));
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < kDenseOut; ++j) {
      double sum = 0;
      for (int64_t p = 0; p < kDenseIn; ++p) sum += double(x[i * kDenseIn + p]) * double(w[j * kDenseIn + p]);
      const float v = std::max(static_cast<float>(sum) + bias[j], 0.0f);
      y[i * kDenseOut + j] = v + v;
    }
  }
  return y;
}

// A device tensor as a kernel argument (what the VM's device call marshals).
StrataDeviceArg DeviceTensorArg(const vm::Tensor& t) {
  StrataDeviceArg arg{};
  arg.kind = STRATA_DEVICE_ARG_BUFFER;
  arg.value.buffer.buffer = static_cast<StrataDeviceBuffer>(reinterpret_cast<uintptr_t>(t.data()));
  arg.value.buffer.byte_offset = t.dl()->byte_offset;
  arg.value.buffer.shape = t.shape().data();
  arg.value.buffer.ndim = t.ndim();
  arg.value.buffer.dtype = t.dl()->dtype;
  return arg;
}

StrataDeviceCounters DeviceCounters(const vm::PluggedDevice& device) {
  StrataDeviceCounters c{};
  c.struct_size = sizeof(c);
  EXPECT_EQ(device.api().get_counters(device.device(), 0, &c), STRATA_DEVICE_OK);
  return c;
}

// Values of both signs (relu matters), different per thread and call.
std::vector<float> SignedValues(int64_t count, int thread, int call) {
  return Iota(count, -1.5f + 0.25f * static_cast<float>(thread), 0.375f - 0.01f * static_cast<float>(call));
}

// y = relu(x) + x through the PluggedDevice API on the device's own queue:
// upload, two launches, download (which waits for the queue).
std::string RunDirectDeviceCalls(vm::PluggedDevice& device, int thread, int calls) {
  auto relu = device.LookupKernel("relu");
  auto add = device.LookupKernel("add");
  if (!relu.ok() || !add.ok()) return "kernels not found";
  for (int call = 0; call < calls; ++call) {
    const int64_t length = 1 + (13 * thread + 7 * call) % 300;
    const std::vector<float> x = SignedValues(length, thread, call);
    const Value host = F32Tensor({length}, x);
    auto on_device = device.CopyToDevice(host.tensor_ref());
    if (!on_device.ok()) return on_device.status().message();
    auto storage = device.Allocate(length * 4);
    if (!storage.ok()) return storage.status().message();
    auto y = vm::Tensor::View(std::move(storage).value(), 0, std::vector<int64_t>{length}, DataType::F32());
    if (!y.ok()) return y.status().message();
    const StrataDeviceArg relu_args[] = {DeviceTensorArg(**on_device), DeviceTensorArg(**y)};
    const StrataDeviceArg add_args[] = {DeviceTensorArg(**y), DeviceTensorArg(**on_device), DeviceTensorArg(**y)};
    if (Status s = device.Launch(*relu, "relu", relu_args); !s.ok()) return s.message();
    if (Status s = device.Launch(*add, "add", add_args); !s.ok()) return s.message();
    auto back = device.CopyToHost(**y, nullptr);
    if (!back.ok()) return back.status().message();
    std::vector<float> want(x.size());
    for (size_t i = 0; i < x.size(); ++i) want[i] = std::max(x[i], 0.0f) + x[i];
    if (std::string f = CompareF32(Value::FromTensor(*back), {length}, want, 0); !f.empty()) {
      return "call " + std::to_string(call) + ": " + f;
    }
  }
  return "";
}

// y = relu(x) with x uploaded on a queue of this thread's own and the relu
// launched on the device's queue once an event says the upload is done: two
// queues, ordered by an event, with other threads submitting to both devices' queues.
std::string RunCallsThroughASecondQueue(vm::PluggedDevice& device, int thread, int calls) {
  const StrataDeviceApi& api = device.api();
  StrataDevice* raw = device.device();
  StrataDeviceQueue own = 0;
  StrataDeviceEvent uploaded = 0;
  if (api.queue_create(raw, &own) != STRATA_DEVICE_OK) return std::string("queue_create: ") + api.last_error(raw);
  if (api.event_create(raw, &uploaded) != STRATA_DEVICE_OK) return std::string("event_create: ") + api.last_error(raw);
  auto relu = device.LookupKernel("relu");
  std::string failure;
  for (int call = 0; call < calls && failure.empty() && relu.ok(); ++call) {
    const int64_t length = 1 + (31 * thread + 11 * call) % 257;
    const std::vector<float> x = SignedValues(length, thread, call);
    auto storage = device.Allocate(length * 4);
    if (!storage.ok()) return storage.status().message();
    auto t = vm::Tensor::View(std::move(storage).value(), 0, std::vector<int64_t>{length}, DataType::F32());
    if (!t.ok()) return t.status().message();
    const auto buffer = static_cast<StrataDeviceBuffer>(reinterpret_cast<uintptr_t>((*t)->data()));
    if (api.queue_copy_host_to_device(raw, own, x.data(), buffer, 0, static_cast<uint64_t>(length) * 4) !=
            STRATA_DEVICE_OK ||
        api.queue_record_event(raw, own, uploaded) != STRATA_DEVICE_OK ||
        api.queue_wait_event(raw, device.queue(), uploaded) != STRATA_DEVICE_OK) {
      failure = std::string("submitting the upload: ") + api.last_error(raw);
      break;
    }
    const StrataDeviceArg args[] = {DeviceTensorArg(**t), DeviceTensorArg(**t)};
    if (Status s = device.Launch(*relu, "relu", args); !s.ok()) {
      failure = s.message();
      break;
    }
    auto back = device.CopyToHost(**t, nullptr);
    // `x` is read by the upload; the relu waited for it, and the download for the relu.
    if (!back.ok()) {
      failure = back.status().message();
      break;
    }
    std::vector<float> want(x.size());
    for (size_t i = 0; i < x.size(); ++i) want[i] = std::max(x[i], 0.0f);
    failure = CompareF32(Value::FromTensor(*back), {length}, want, 0);
  }
  if (!relu.ok()) failure = relu.status().message();
  if (api.event_destroy(raw, uploaded) != STRATA_DEVICE_OK)
    failure += std::string(" event_destroy: ") + api.last_error(raw);
  if (api.queue_destroy(raw, own) != STRATA_DEVICE_OK) failure += std::string(" queue_destroy: ") + api.last_error(raw);
  return failure;
}

// `calls` calls of main at this thread's shapes, each checked.
std::string RunNpuDenseCalls(const std::shared_ptr<const vm::Executable>& exe, int thread, int calls) {
  VirtualMachine machine(exe);
  for (int call = 0; call < calls; ++call) {
    const int64_t m = 1 + (3 * thread + call) % 17;
    const std::vector<float> x = SignedValues(m * kDenseIn, thread, call);
    const Value args[] = {F32Tensor({m, kDenseIn}, x)};
    StatusOr<Value> result = machine.Invoke("main", args);
    if (!result.ok()) return "call " + std::to_string(call) + ": " + result.status().message();
    if (std::string f = CompareF32(*result, {m, kDenseOut}, ExpectedNpuDense(x, m), 1e-5); !f.empty()) {
      return "call " + std::to_string(call) + " (m = " + std::to_string(m) + "): " + f;
    }
  }
  return "";
}

// Every buffer the calls allocated went back once the device ran the queued
// frees (the VMs' queues finished theirs when the VMs were destroyed): what is
// left is one device copy of each constant, in 64-byte blocks. Nothing failed.
void ExpectOnlyTheConstantsLeft(vm::PluggedDevice& device) {
  ASSERT_TRUE(device.Synchronize().ok());
  EXPECT_EQ(DeviceCounters(device).memory_in_use_bytes, 192u + 64u);
  EXPECT_EQ(DeviceCounters(device).failed_commands, 0u);
}

TEST_F(ConcurrencyTest, VmsAndDirectCallersSubmitToOneNpuAtOnce) {
  auto exe = LoadOrDie(NpuDenseExecutable());
  ASSERT_NE(exe, nullptr);
  ASSERT_EQ(exe->plugged_devices().size(), 1u);
  vm::PluggedDevice& device = *exe->plugged_devices()[0];
  // With the device's own queue and the second queue, 8 queues: sim_npu's default maximum.
  constexpr int kVmThreads = 6, kDirectThreads = 2;
  constexpr int kCalls = 60;
  ExpectAllPassed(RunConcurrently(kVmThreads + kDirectThreads, [&](int thread) -> std::string {
    if (thread == kVmThreads) return RunDirectDeviceCalls(device, thread, kCalls);
    if (thread == kVmThreads + 1) return RunCallsThroughASecondQueue(device, thread, kCalls);
    return RunNpuDenseCalls(exe, thread, kCalls);
  }));
  ExpectOnlyTheConstantsLeft(device);
}

// A device that allows 3 queues: its own, and one for each of the first two
// VMs; the other VMs share its own queue, and every result is still right.
TEST_F(ConcurrencyTest, VmsBeyondTheDevicesQueueLimitShareItsOwnQueue) {
  auto exe = LoadOrDie(NpuDenseExecutable("memory=16M,max_queues=3"));
  ASSERT_NE(exe, nullptr);
  constexpr int kThreads = 6, kCalls = 40;
  ExpectAllPassed(RunConcurrently(kThreads, [&](int thread) { return RunNpuDenseCalls(exe, thread, kCalls); }));
  ExpectOnlyTheConstantsLeft(*exe->plugged_devices()[0]);
}

// Asynchronous failures belong to the VM whose command failed: a VM whose
// device kernel fails (after its launch returned) gets that failure, and the
// VMs submitting valid work to the same device at the same time never do.
TEST_F(ConcurrencyTest, AFailedDeviceCommandFailsOnlyTheCallThatSubmittedIt) {
  auto exe = LoadOrDie(NpuDenseExecutable());
  ASSERT_NE(exe, nullptr);
  constexpr int kThreads = 4;
  constexpr int kCalls = 40;
  ExpectAllPassed(RunConcurrently(kThreads, [&](int thread) -> std::string {
    VirtualMachine machine(exe);
    const bool failing = thread == 0;
    for (int call = 0; call < kCalls; ++call) {
      const int64_t m = 1 + (thread + call) % 9;
      // The failing thread passes 6 features where W has 7: dense_bias_relu refuses them on the device.
      const int64_t k = failing ? kDenseIn - 1 : kDenseIn;
      const std::vector<float> x = SignedValues(m * k, thread, call);
      const Value args[] = {F32Tensor({m, k}, x)};
      StatusOr<Value> result = machine.Invoke("unchecked", args);
      if (failing) {
        if (result.ok()) return "call " + std::to_string(call) + ": a device kernel given 6 features succeeded";
        if (result.status().message().find("kernel 'dense_bias_relu'") == std::string::npos ||
            result.status().message().find("has K = 6 features but W [5, 7] has 7 columns") == std::string::npos) {
          return "call " + std::to_string(call) + ": unexpected error: " + result.status().message();
        }
        continue;
      }
      if (!result.ok()) return "call " + std::to_string(call) + ": " + result.status().message();
      if (std::string f = CompareF32(*result, {m, kDenseOut}, ExpectedNpuDense(x, m), 1e-5); !f.empty()) {
        return "call " + std::to_string(call) + ": " + f;
      }
    }
    return "";
  }));
  EXPECT_EQ(DeviceCounters(*exe->plugged_devices()[0]).failed_commands, uint64_t{kCalls});
}

// Loading on several threads at once: each thread loads both executables (its
// own copy of the kernel module, its own instance of the NPU, the plug-in
// opened once), runs them and drops them while the others still run theirs.
TEST_F(ConcurrencyTest, ExecutablesLoadAndRunOnSeveralThreadsAtOnce) {
  const std::vector<uint8_t> layer_bytes = DynamicLayerExecutable();
  const std::vector<uint8_t> npu_bytes = NpuDenseExecutable();
  constexpr int kThreads = 4, kRounds = 3;
  ExpectAllPassed(RunConcurrently(kThreads, [&](int thread) -> std::string {
    for (int round = 0; round < kRounds; ++round) {
      auto layer = vm::Executable::LoadFromBytes(layer_bytes);
      auto npu = vm::Executable::LoadFromBytes(npu_bytes);
      if (!layer.ok()) return layer.status().message();
      if (!npu.ok()) return npu.status().message();
      const LayerCall c = MakeLayerCall(thread, 3 * round);
      const Value args[] = {F32Tensor({c.m, c.k}, c.a), F32Tensor({c.k, c.n}, c.b), F32Tensor({c.n}, c.bias)};
      VirtualMachine machine(*layer);
      if (std::string f = CheckLayerResult(c, machine.Invoke("main", args)); !f.empty()) return f;
      if (std::string f = RunNpuDenseCalls(*npu, thread, 2); !f.empty()) return f;
    }
    return "";
  }));
}

// ---- 3. MemoryPool: blocks that change threads ---------------------------------

// A hand-off of tensors from producer threads to consumer threads.
class TensorChannel {
 public:
  void Push(Value v) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      items_.push_back(std::move(v));
    }
    cv_.notify_one();
  }
  // The next tensor, or Null once Close was called and nothing is left.
  Value Pop() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return !items_.empty() || closed_; });
    if (items_.empty()) return Value();
    Value v = std::move(items_.front());
    items_.pop_front();
    return v;
  }
  void Close() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      closed_ = true;
    }
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Value> items_;
  bool closed_ = false;
};

TEST_F(ConcurrencyTest, PoolBlocksFreedOnOtherThreadsWhileThePoolIsMeasuredTrimmedAndEmptied) {
  const std::vector<int64_t> kCacheLimits = {int64_t{1} << 20, 0, 64 << 10, 4 << 10};
  auto pool = vm::MemoryPool::Create(kCacheLimits[0]);
  constexpr int kProducers = 3, kConsumers = 3, kTensorsPerProducer = 1500;
  TensorChannel channel;
  std::atomic<int> producers_left{kProducers};
  std::atomic<int64_t> consumed{0};
  // The cache limit the controller set last; only it writes the limit.
  std::atomic<int64_t> cache_limit{kCacheLimits[0]};
  std::atomic<bool> producing{true};

  ExpectAllPassed(RunConcurrently(kProducers + kConsumers + 1, [&](int thread) -> std::string {
    if (thread < kProducers) {
      // Producer: tensors of many size classes, each filled with its own tag. A
      // block the pool handed to two owners at once would lose one tag.
      std::string failure;
      for (int j = 0; j < kTensorsPerProducer && failure.empty(); ++j) {
        const int32_t tag = thread * 1000000 + j;
        const std::vector<int64_t> shape = {1 + (j * 37 + thread * 11) % 700};
        auto t = pool->AllocateTensor(shape, DataType::I32());
        if (!t.ok()) {
          failure = t.status().message();
          break;
        }
        for (int64_t e = 0; e < shape[0]; ++e) (*t)->data_as<int32_t>()[e] = tag;
        channel.Push(Value::FromTensor(std::move(t).value()));
        // And a storage allocated and freed here, at the largest alignment.
        auto s = pool->AllocateStorage(100 + j % 5000, 4096);
        if (!s.ok())
          failure = s.status().message();
        else if (reinterpret_cast<uintptr_t>((*s)->data()) % 4096 != 0)
          failure = "storage not 4096-byte aligned";
      }
      if (producers_left.fetch_sub(1) == 1) {
        producing.store(false);
        channel.Close();
      }
      return failure;
    }
    if (thread < kProducers + kConsumers) {
      // Consumer: checks the tag and frees the tensor, on this thread.
      for (Value v = channel.Pop(); v.is_tensor(); v = channel.Pop()) {
        const vm::Tensor& t = *v.tensor();
        const int32_t tag = t.data_as<int32_t>()[0];
        for (int64_t e = 0; e < t.num_elements(); ++e) {
          if (t.data_as<int32_t>()[e] != tag) return "tensor " + std::to_string(tag) + " was overwritten";
        }
        if (reinterpret_cast<uintptr_t>(t.data()) % vm::kDefaultAlignment != 0) return "misaligned tensor";
        consumed.fetch_add(1);
      }
      return "";
    }
    // Controller: measures, restarts the interval, trims and empties the pool
    // while blocks come and go; every snapshot must be self-consistent.
    for (int round = 0; producing.load(); ++round) {
      const vm::MemoryStats s = pool->Snapshot();
      if (s.allocations < 0 || s.system_allocations < 0 || s.system_allocations > s.allocations || s.system_bytes < 0 ||
          s.peak_live_bytes < 0 || s.lower_bound_bytes < 0) {
        return "inconsistent snapshot in round " + std::to_string(round) + ": allocations " +
               std::to_string(s.allocations) + ", system " + std::to_string(s.system_allocations) + ", peak " +
               std::to_string(s.peak_live_bytes) + ", lower bound " + std::to_string(s.lower_bound_bytes);
      }
      if (pool->cached_bytes() > cache_limit.load()) return "the cache holds more than its limit";
      if (pool->live_bytes() < 0) return "negative live bytes";
      if (round % 3 == 0) pool->BeginInterval();
      if (round % 7 == 0) pool->ReleaseCached();
      if (round % 5 == 0) {
        const int64_t limit = kCacheLimits[static_cast<size_t>(round / 5) % kCacheLimits.size()];
        pool->set_cache_limit_bytes(limit);
        cache_limit.store(limit);
      }
      std::this_thread::yield();
    }
    return "";
  }));
  EXPECT_EQ(consumed.load(), int64_t{kProducers} * kTensorsPerProducer);
  // Everything was freed: no live bytes, a cache within its limit, and a fresh
  // interval that sees exactly what it allocates.
  EXPECT_EQ(pool->live_bytes(), 0);
  EXPECT_LE(pool->cached_bytes(), cache_limit.load());
  pool->ReleaseCached();
  EXPECT_EQ(pool->cached_bytes(), 0);
  pool->BeginInterval();
  {
    auto t = pool->AllocateTensor(std::vector<int64_t>{250}, DataType::I32());
    ASSERT_TRUE(t.ok());
    const vm::MemoryStats s = pool->Snapshot();
    EXPECT_EQ(s.allocations, 1);
    EXPECT_EQ(s.system_allocations, 1);
    EXPECT_EQ(s.system_bytes, 1024);
    EXPECT_EQ(s.peak_live_bytes, 1024);
    EXPECT_EQ(s.lower_bound_bytes, 1000);
  }
  EXPECT_EQ(pool->live_bytes(), 0);
}

// VMs return results from their pools; other threads free them after the VM
// that made them is gone.
TEST_F(ConcurrencyTest, VmResultsAreFreedOnAnotherThreadAfterTheirVmIsGone) {
  auto exe = LoadOrDie(DynamicLayerExecutable());
  ASSERT_NE(exe, nullptr);
  TensorChannel results;
  constexpr int kProducers = 3, kCalls = 40;
  std::atomic<int> producers_left{kProducers};
  std::atomic<int> checked{0};
  ExpectAllPassed(RunConcurrently(kProducers + 2, [&](int thread) -> std::string {
    if (thread < kProducers) {
      std::string failure;
      {
        VirtualMachine machine(exe);
        for (int call = 0; call < kCalls && failure.empty(); ++call) {
          LayerCall c = MakeLayerCall(thread, call);
          if (c.kind != LayerCall::kValid) continue;
          const Value args[] = {F32Tensor({c.m, c.k}, c.a), F32Tensor({c.k, c.n}, c.b), F32Tensor({c.n}, c.bias)};
          StatusOr<Value> result = machine.Invoke("main", args);
          failure = CheckLayerResult(c, result);
          // The consumer checks the values again, after this VM is destroyed.
          if (failure.empty()) results.Push(Value::FromTuple({*result, F32Tensor({c.m, c.n}, ExpectedLayer(c))}));
        }
      }
      if (producers_left.fetch_sub(1) == 1) results.Close();
      return failure;
    }
    for (Value v = results.Pop(); !v.is_null(); v = results.Pop()) {
      const Value& got = (*v.tuple())[0];
      const std::vector<float> want = ToFloats((*v.tuple())[1]);
      const auto shape = got.tensor()->shape();
      if (std::string f = CompareF32(got, std::vector<int64_t>(shape.begin(), shape.end()), want, 1e-6); !f.empty()) {
        return f;
      }
      if (got.tensor()->storage()->pool() == nullptr) return "a result not from the VM's pool";
      checked.fetch_add(1);
    }
    return "";
  }));
  EXPECT_GT(checked.load(), kProducers * kCalls / 2);
}

// ---- 4. ThreadPool --------------------------------------------------------------

// A parallel loop's bookkeeping: how often each index ran, and on which thread.
struct CoverageLoop {
  std::vector<int> hits;
  std::vector<std::thread::id> ran_on;
  // Nested loops: the inner range of each outer index, and where it ran.
  int64_t inner = 0;
  std::vector<int> inner_hits;
  std::vector<std::thread::id> inner_ran_on;
  int32_t inner_code = 0;

  explicit CoverageLoop(int64_t n, int64_t inner_n = 0)
      : hits(static_cast<size_t>(n)),
        ran_on(static_cast<size_t>(n)),
        inner(inner_n),
        inner_hits(static_cast<size_t>(n * inner_n)),
        inner_ran_on(static_cast<size_t>(n * inner_n)) {}
};

struct InnerClosure {
  CoverageLoop* loop;
  int64_t outer;
};

// Plain (non-atomic) writes: two chunks covering one index would be a data
// race that ThreadSanitizer reports, and a count of 2.
int32_t CountInner(int64_t begin, int64_t end, void* closure) {
  auto* c = static_cast<InnerClosure*>(closure);
  for (int64_t i = begin; i < end; ++i) {
    const size_t slot = static_cast<size_t>(c->outer * c->loop->inner + i);
    ++c->loop->inner_hits[slot];
    c->loop->inner_ran_on[slot] = std::this_thread::get_id();
  }
  return 0;
}

int32_t CountOuter(int64_t begin, int64_t end, void* closure) {
  auto* loop = static_cast<CoverageLoop*>(closure);
  for (int64_t i = begin; i < end; ++i) {
    ++loop->hits[static_cast<size_t>(i)];
    loop->ran_on[static_cast<size_t>(i)] = std::this_thread::get_id();
    if (loop->inner > 0) {
      InnerClosure inner{loop, i};
      std::string error;
      const int32_t rc = vm::ThreadPool::Global().ParallelFor(loop->inner, CountInner, &inner, &error);
      if (rc != 0) loop->inner_code = rc;
    }
  }
  return 0;
}

// "" when every index (and inner index) ran exactly once and, when the outer
// loop ran as a pool job (on more than one thread), each inner loop ran
// serially on the thread of the chunk that started it. (An outer loop the busy
// pool ran serially on its caller is no job: its inner loops may use the pool.)
std::string CheckCoverage(const CoverageLoop& loop) {
  bool outer_was_a_pool_job = false;
  for (const std::thread::id& id : loop.ran_on) outer_was_a_pool_job |= id != loop.ran_on.front();
  for (size_t i = 0; i < loop.hits.size(); ++i) {
    if (loop.hits[i] != 1) return "index " + std::to_string(i) + " ran " + std::to_string(loop.hits[i]) + " times";
    for (int64_t j = 0; j < loop.inner; ++j) {
      const size_t slot = i * static_cast<size_t>(loop.inner) + static_cast<size_t>(j);
      if (loop.inner_hits[slot] != 1) {
        return "inner index " + std::to_string(j) + " of " + std::to_string(i) + " ran " +
               std::to_string(loop.inner_hits[slot]) + " times";
      }
      if (outer_was_a_pool_job && loop.inner_ran_on[slot] != loop.ran_on[i]) {
        return "a nested loop left the thread of its chunk";
      }
    }
  }
  return loop.inner_code == 0 ? "" : "a nested loop failed";
}

TEST_F(ConcurrencyTest, ParallelLoopsFromSeveralThreadsCoverTheirRangesExactlyOnce) {
  constexpr int kThreads = 6, kLoops = 300;
  ExpectAllPassed(RunConcurrently(kThreads, [&](int thread) -> std::string {
    for (int l = 0; l < kLoops; ++l) {
      // Every third loop nests a parallel loop in each of its indices.
      CoverageLoop loop(1 + (l * 7 + thread * 5) % 97, l % 3 == 0 ? 1 + l % 9 : 0);
      std::string error;
      const int32_t rc =
          vm::ThreadPool::Global().ParallelFor(static_cast<int64_t>(loop.hits.size()), CountOuter, &loop, &error);
      if (rc != 0 || !error.empty()) return "loop " + std::to_string(l) + " failed: " + error;
      if (std::string f = CheckCoverage(loop); !f.empty()) return "loop " + std::to_string(l) + ": " + f;
    }
    return "";
  }));
}

// Errors reach the caller whose chunk raised them, through the kernel ABI as a
// compiled kernel sees it: the code, and the message from set_error.
struct FailingLoop {
  int64_t fail_at;
  int32_t code;
  std::string message;
};

int32_t FailAtOneIndex(int64_t begin, int64_t end, void* closure) {
  auto* loop = static_cast<FailingLoop*>(closure);
  if (loop->fail_at < begin || loop->fail_at >= end) return 0;
  vm::GetKernelRuntimeApi()->set_error(loop->message.c_str());
  return loop->code;
}

TEST_F(ConcurrencyTest, AChunksErrorReachesTheThreadWhoseLoopItWas) {
  constexpr int kThreads = 6, kLoops = 200;
  const StrataRuntimeApi* api = vm::GetKernelRuntimeApi();
  ExpectAllPassed(RunConcurrently(kThreads, [&](int thread) -> std::string {
    for (int l = 0; l < kLoops; ++l) {
      const int64_t n = 2 + (l * 3 + thread) % 40;
      FailingLoop loop{(l * 5) % n, 10 + thread, "thread " + std::to_string(thread) + " loop " + std::to_string(l)};
      const int32_t rc = api->parallel_for(n, FailAtOneIndex, &loop);
      const std::string message = vm::TakeKernelError();
      if (rc != loop.code || message != loop.message) {
        return "loop " + std::to_string(l) + ": got code " + std::to_string(rc) + " and '" + message + "'";
      }
    }
    return "";
  }));
}

// The workers sleep after a couple of idle milliseconds; loops after that wake
// them, from several threads at once.
TEST_F(ConcurrencyTest, LoopsAfterTheWorkersWentToSleepStillRunEveryIndexOnce) {
  constexpr int kThreads = 3, kBursts = 6, kLoopsPerBurst = 10;
  ExpectAllPassed(RunConcurrently(kThreads, [&](int thread) -> std::string {
    for (int burst = 0; burst < kBursts; ++burst) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      for (int l = 0; l < kLoopsPerBurst; ++l) {
        CoverageLoop loop(kPoolThreads * (1 + (burst + l + thread) % 5));
        std::string error;
        if (vm::ThreadPool::Global().ParallelFor(static_cast<int64_t>(loop.hits.size()), CountOuter, &loop, &error) !=
            0) {
          return "a loop failed: " + error;
        }
        if (std::string f = CheckCoverage(loop); !f.empty()) return f;
      }
    }
    return "";
  }));
}

// The pool is joined at exit: a process whose threads used it exits normally
// (and, under ThreadSanitizer, without a report, which would change the code).
TEST_F(ConcurrencyTest, ThePoolShutsDownCleanlyAtExitAfterConcurrentUse) {
  // A fresh process (re-executed, not forked from this multi-threaded one).
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        std::vector<std::string> failures = RunConcurrently(4, [](int) -> std::string {
          for (int l = 0; l < 20; ++l) {
            CoverageLoop loop(1 + l * 3, l % 2);
            std::string error;
            vm::ThreadPool::Global().ParallelFor(static_cast<int64_t>(loop.hits.size()), CountOuter, &loop, &error);
            if (std::string f = CheckCoverage(loop); !f.empty()) return f;
          }
          return "";
        });
        for (const std::string& f : failures) {
          if (!f.empty()) std::exit(1);
        }
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace strata::testing
