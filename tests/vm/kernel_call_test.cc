// Calls into compiled kernels: a hand-written kernel module embedded in an executable.
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/vm/executable_builder.h"
#include "tests/vm/test_util.h"
#include "vm/kernel_threads.h"
#include "vm/virtual_machine.h"

namespace strata::testing {
namespace {

using vm::Value;
using vm::VirtualMachine;

// tests/vm/test_kernel_module.c, built for this runtime's VM value layout
// (its VM entries are used) or for another (they must not be).
serialization::NativeModuleSpec TestModule(const char* path = STRATA_TEST_KERNEL_MODULE) {
  serialization::NativeModuleSpec m;
  m.target_triple = "x86_64-pc-linux-gnu";
  m.cpu = "generic";
  m.code = ReadFile(path);
  m.symbols = {"add_scalar", "record_i64", "always_fails", "silent_failure", "scale", "add_tensors", "vm_entry_calls"};
  return m;
}

class KernelCallTest : public ::testing::Test {
 protected:
  void SetUp() override {
    b_.spec.native_modules.push_back(TestModule());
    ASSERT_FALSE(b_.spec.native_modules[0].code.empty());
  }
  ExecutableBuilder b_;
};

TEST_F(KernelCallTest, TensorsAndFloatsArePassedToKernels) {
  int shape_of = b_.Library("vm.builtin.shape_of");
  int alloc = b_.Library("vm.builtin.alloc_tensor");
  int add = b_.Kernel("add_scalar", 0, "add_scalar");
  int f32 = b_.DType(DataType::F32());
  int half = b_.Constant(1.5);
  CodeBuilder code;
  code.Call(1, shape_of, {R(0)}).Call(2, alloc, {R(1), C(f32)}).Call(kVoid, add, {R(0), C(half), R(2)}).Ret(2);
  b_.Bytecode("main", {"x"}, 3, code);
  auto exe = LoadOrDie(b_.Write());
  ASSERT_NE(exe, nullptr);
  VirtualMachine vm(exe);
  Value x = F32({2, 2}, {1, 2, 3, 4});
  auto result = vm.Invoke("main", std::span<const Value>(&x, 1));
  ASSERT_TRUE(result.ok()) << result.status().message();
  EXPECT_EQ(ToFloats(*result), (std::vector<float>{2.5f, 3.5f, 4.5f, 5.5f}));
}

TEST_F(KernelCallTest, ShapesExpandToOneI64PerDimension) {
  int shape_of = b_.Library("vm.builtin.shape_of");
  int alloc = b_.Library("vm.builtin.alloc_tensor");
  int record = b_.Kernel("record_i64", 0, "record_i64");
  int out_shape = b_.Shape({4});
  int i64 = b_.DType(DataType::I64());
  int seven = b_.Int(7);
  CodeBuilder code;
  code.Call(1, shape_of, {R(0)})
      .Call(2, alloc, {C(out_shape), C(i64)})
      .Call(kVoid, record, {R(1), Imm(-42), C(seven), R(2)})
      .Ret(2);
  b_.Bytecode("main", {"x"}, 3, code);
  auto exe = LoadOrDie(b_.Write());
  ASSERT_NE(exe, nullptr);
  VirtualMachine vm(exe);
  Value x = F32({3, 5}, Iota(15));
  auto result = vm.Invoke("main", std::span<const Value>(&x, 1));
  ASSERT_TRUE(result.ok()) << result.status().message();
  auto values = result->tensor()->ToVector<int64_t>();
  ASSERT_TRUE(values.ok());
  EXPECT_EQ(*values, (std::vector<int64_t>{3, 5, -42, 7}));
}

// More C arguments than the VM's inline arrays hold (64): a Shape that expands
// past them midway sends the call through the heap path, with the same values.
TEST_F(KernelCallTest, ShapesThatExpandPastTheInlineArgumentsArePassedWhole) {
  int record = b_.Kernel("record_i64", 0, "record_i64");
  std::vector<int64_t> first(40), second(45);
  for (size_t i = 0; i < first.size(); ++i) first[i] = static_cast<int64_t>(i) * 3;
  for (size_t i = 0; i < second.size(); ++i) second[i] = 1000 + static_cast<int64_t>(i);
  int s1 = b_.Shape(first);
  int s2 = b_.Shape(second);
  int out_shape = b_.Shape({1 + 40 + 45});
  int i64 = b_.DType(DataType::I64());
  int alloc = b_.Library("vm.builtin.alloc_tensor");
  CodeBuilder code;
  code.Call(0, alloc, {C(out_shape), C(i64)}).Call(kVoid, record, {Imm(-5), C(s1), C(s2), R(0)}).Ret(0);
  b_.Bytecode("main", {}, 1, code);
  auto exe = LoadOrDie(b_.Write());
  ASSERT_NE(exe, nullptr);
  VirtualMachine vm(exe);
  auto result = vm.Invoke("main", {});
  ASSERT_TRUE(result.ok()) << result.status().message();
  std::vector<int64_t> want = {-5};
  want.insert(want.end(), first.begin(), first.end());
  want.insert(want.end(), second.begin(), second.end());
  auto values = result->tensor()->ToVector<int64_t>();
  ASSERT_TRUE(values.ok());
  EXPECT_EQ(*values, want);
}

TEST_F(KernelCallTest, FunctionOperandsAreRejected) {
  int record = b_.Kernel("record_i64", 0, "record_i64");
  CodeBuilder code;
  code.Call(kVoid, record, {Imm(1), Fn(record), R(0)}).Ret(0);
  b_.Bytecode("main", {"x"}, 1, code);
  auto exe = LoadOrDie(b_.Write());
  ASSERT_NE(exe, nullptr);
  VirtualMachine vm(exe);
  Value x = F32({1}, {1});
  auto result = vm.Invoke("main", std::span<const Value>(&x, 1));
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().message(),
            "functions[1] 'main': instruction at word 0 (call): compiled kernel 'record_i64' argument 1: cannot pass a "
            "function");
}

TEST_F(KernelCallTest, KernelErrorsNameTheKernelAndTheVmRecovers) {
  int fails = b_.Kernel("always_fails", 0, "always_fails");
  int silent = b_.Kernel("silent_failure", 0, "silent_failure");
  int copy = b_.Library("vm.builtin.copy");
  CodeBuilder code;
  code.Call(kVoid, fails, {R(0)}).Ret(0);
  b_.Bytecode("main", {"x"}, 1, code);
  CodeBuilder code2;
  code2.Call(kVoid, silent, {}).Ret(0);
  b_.Bytecode("silent", {"x"}, 1, code2);
  CodeBuilder code3;
  code3.Call(1, copy, {R(0)}).Ret(1);
  b_.Bytecode("identity", {"x"}, 2, code3);
  auto exe = LoadOrDie(b_.Write());
  ASSERT_NE(exe, nullptr);
  VirtualMachine vm(exe);
  Value x = F32({1}, {1});
  auto result = vm.Invoke("main", std::span<const Value>(&x, 1));
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().message(),
            "functions[3] 'main': instruction at word 0 (call): compiled kernel 'always_fails' failed: always_fails: "
            "parameter 'x' dimension 0 expected 4, got 5");
  auto quiet = vm.Invoke("silent", std::span<const Value>(&x, 1));
  ASSERT_FALSE(quiet.ok());
  EXPECT_EQ(quiet.status().message(),
            "functions[4] 'silent': instruction at word 0 (call): compiled kernel 'silent_failure' failed: returned "
            "error code 7 without a message");
  auto ok = vm.Invoke("identity", std::span<const Value>(&x, 1));
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(ok->tensor(), x.tensor());
}

TEST_F(KernelCallTest, NonNumericKernelArgumentsAreRejected) {
  int add = b_.Kernel("add_scalar", 0, "add_scalar");
  int text = b_.String("oops");
  CodeBuilder code;
  code.Call(kVoid, add, {R(0), C(text), R(0)}).Ret(0);
  b_.Bytecode("main", {"x"}, 1, code);
  auto exe = LoadOrDie(b_.Write());
  ASSERT_NE(exe, nullptr);
  VirtualMachine vm(exe);
  Value x = F32({1}, {1});
  auto result = vm.Invoke("main", std::span<const Value>(&x, 1));
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().message(),
            "functions[1] 'main': instruction at word 0 (call): compiled kernel 'add_scalar' argument 1: cannot pass "
            "String \"oops\" (expected a Tensor, Shape, Int or Float)");
}

// One call site across calls: the VM writes each call's argument slots and type
// codes from what its registers hold now (shapes, Int or Float scalars), and a
// Shape where the kernel wants a scalar reaches the kernel as one i64 per
// dimension (the generic path), which rejects the count, after which the site
// works again.
TEST_F(KernelCallTest, ACallSiteGetsEachCallsShapesAndScalarKinds) {
  int shape_of = b_.Library("vm.builtin.shape_of");
  int alloc = b_.Library("vm.builtin.alloc_tensor");
  int scale = b_.Kernel("scale", 0, "scale");
  int f32 = b_.DType(DataType::F32());
  CodeBuilder code;
  code.Call(2, shape_of, {R(0)}).Call(3, alloc, {R(2), C(f32)}).Call(kVoid, scale, {R(0), R(1), R(3)}).Ret(3);
  b_.Bytecode("main", {"x", "s"}, 4, code);
  auto exe = LoadOrDie(b_.Write());
  ASSERT_NE(exe, nullptr);
  VirtualMachine vm(exe);
  struct Call {
    Value x, s;
    std::vector<float> want;
  };
  const std::vector<Call> calls = {
      {F32({2}, {1, 2}), Value::FromInt(3), {3, 6}},
      {F32({3, 2}, {1, 2, 3, 4, 5, 6}), Value::FromFloat(0.5), {0.5f, 1, 1.5f, 2, 2.5f, 3}},
      {F32({1}, {4}), Value::FromInt(-1), {-4}},
      {F32({2, 1, 2}, {1, -1, 2, -2}), Value::FromFloat(2), {2, -2, 4, -4}},
  };
  for (int round = 0; round < 2; ++round) {
    for (const Call& call : calls) {
      const Value args[] = {call.x, call.s};
      auto result = vm.Invoke("main", args);
      ASSERT_TRUE(result.ok()) << result.status().message();
      EXPECT_EQ(result->tensor()->shape().size(), call.x.tensor()->shape().size());
      EXPECT_EQ(ToFloats(*result), call.want);
    }
    const Value bad[] = {F32({2}, {1, 2}), Value::FromShape({2, 3})};
    auto result = vm.Invoke("main", bad);
    ASSERT_FALSE(result.ok());
    EXPECT_EQ(result.status().message(),
              "functions[3] 'main': instruction at word 11 (call): compiled kernel 'scale' failed: scale: expected "
              "(tensor, int or float, tensor)");
  }
}

// All-tensor calls (a register and a tensor constant) and a call with more
// operands than the one-pass path takes: the same values reach the kernel.
TEST_F(KernelCallTest, AllTensorAndManyOperandCallsPassTheSameValues) {
  int add = b_.Kernel("add_tensors", 0, "add_tensors");
  int record = b_.Kernel("record_i64", 0, "record_i64");
  int alloc = b_.Library("vm.builtin.alloc_tensor");
  int bias = b_.Tensor<float>(DataType::F32(), {3}, {10, 20, 30});
  int f32 = b_.DType(DataType::F32());
  int i64 = b_.DType(DataType::I64());
  int three = b_.Shape({3});
  int twenty = b_.Shape({20});
  CodeBuilder code;
  code.Call(1, alloc, {C(three), C(f32)}).Call(kVoid, add, {R(0), C(bias), R(1)}).Ret(1);
  b_.Bytecode("main", {"x"}, 2, code);
  std::vector<int64_t> operands;
  for (int i = 0; i < 20; ++i) operands.push_back(Imm(i * i - 7));
  operands.push_back(R(0));
  CodeBuilder code2;
  code2.Call(0, alloc, {C(twenty), C(i64)}).Call(kVoid, record, operands).Ret(0);
  b_.Bytecode("many", {}, 1, code2);
  auto exe = LoadOrDie(b_.Write());
  ASSERT_NE(exe, nullptr);
  VirtualMachine vm(exe);
  Value x = F32({3}, {1, 2, 3});
  auto result = vm.Invoke("main", std::span<const Value>(&x, 1));
  ASSERT_TRUE(result.ok()) << result.status().message();
  EXPECT_EQ(ToFloats(*result), (std::vector<float>{11, 22, 33}));
  auto many = vm.Invoke("many", {});
  ASSERT_TRUE(many.ok()) << many.status().message();
  std::vector<int64_t> want;
  for (int i = 0; i < 20; ++i) want.push_back(i * i - 7);
  auto values = many->tensor()->ToVector<int64_t>();
  ASSERT_TRUE(values.ok());
  EXPECT_EQ(*values, want);
}

// VMs on several threads share one executable and call the same kernel call
// site at the same time, each at its own shapes: every call sees its own
// arguments (the arguments a call builds belong to the calling VM's thread).
TEST_F(KernelCallTest, VmsSharingAnExecutableCallTheSameKernelConcurrentlyAtDifferentShapes) {
  int shape_of = b_.Library("vm.builtin.shape_of");
  int alloc = b_.Library("vm.builtin.alloc_tensor");
  int add = b_.Kernel("add_tensors", 0, "add_tensors");
  int scale = b_.Kernel("scale", 0, "scale");
  int f32 = b_.DType(DataType::F32());
  CodeBuilder code;
  code.Call(2, shape_of, {R(0)})
      .Call(3, alloc, {R(2), C(f32)})
      .Call(kVoid, add, {R(0), R(0), R(3)})
      .Call(kVoid, scale, {R(3), R(1), R(3)})
      .Ret(3);
  b_.Bytecode("main", {"x", "s"}, 4, code);
  auto exe = LoadOrDie(b_.Write());
  ASSERT_NE(exe, nullptr);
  constexpr int kThreads = 4;
  constexpr int kCalls = 300;
  std::vector<std::string> failures(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      VirtualMachine vm(exe);
      for (int i = 0; i < kCalls; ++i) {
        // Thread t, call i: x of shape (t + 1, i % 5 + 1), scaled by t + i (an Int on even calls, a Float on odd).
        const int64_t rows = t + 1, cols = i % 5 + 1;
        std::vector<float> xs(static_cast<size_t>(rows * cols));
        for (size_t k = 0; k < xs.size(); ++k) xs[k] = static_cast<float>(k) + 0.5f * static_cast<float>(t);
        const std::vector<int64_t> shape = {rows, cols};
        auto x = vm::Tensor::FromValues<float>(std::span<const int64_t>(shape), std::span<const float>(xs));
        if (!x.ok()) {
          failures[t] = x.status().message();
          return;
        }
        const Value s = i % 2 == 0 ? Value::FromInt(t + i) : Value::FromFloat(t + i);
        const Value args[] = {Value::FromTensor(std::move(x).value()), s};
        auto result = vm.Invoke("main", args);
        if (!result.ok()) {
          failures[t] = result.status().message();
          return;
        }
        auto got = result->tensor()->ToVector<float>();
        const auto out_shape = result->tensor()->shape();
        if (!got.ok() || out_shape.size() != 2 || out_shape[0] != rows || out_shape[1] != cols) {
          failures[t] = "call " + std::to_string(i) + ": wrong result " + result->Describe();
          return;
        }
        for (size_t k = 0; k < xs.size(); ++k) {
          if ((*got)[k] != 2 * xs[k] * static_cast<float>(t + i)) {
            failures[t] =
                "call " + std::to_string(i) + ": element " + std::to_string(k) + " is " + std::to_string((*got)[k]);
            return;
          }
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[t], "") << "thread " << t;
}

// Runs main(x) = add_scalar(x, s, out) and returns (its result, the calls the
// module's VM entries took), from the module at `module_path`; `s` is a Float
// constant or, with int_scalar, an Int, which add_scalar's VM entry leaves to
// the main entry (which refuses it).
struct VmEntryRun {
  bool vm_entry_resolved = false;
  StatusOr<Value> result = Status::Error("not run");
  int64_t vm_entry_calls = -1;
};
VmEntryRun RunAddScalar(const char* module_path, bool int_scalar = false) {
  ExecutableBuilder b;
  b.spec.native_modules.push_back(TestModule(module_path));
  int shape_of = b.Library("vm.builtin.shape_of");
  int alloc = b.Library("vm.builtin.alloc_tensor");
  int add = b.Kernel("add_scalar", 0, "add_scalar");
  int calls = b.Kernel("vm_entry_calls", 0, "vm_entry_calls");
  int f32 = b.DType(DataType::F32());
  int i64 = b.DType(DataType::I64());
  int one = b.Shape({1});
  int scalar = int_scalar ? b.Int(2) : b.Constant(1.5);
  CodeBuilder code;
  code.Call(1, shape_of, {R(0)}).Call(2, alloc, {R(1), C(f32)}).Call(kVoid, add, {R(0), C(scalar), R(2)}).Ret(2);
  b.Bytecode("main", {"x"}, 3, code);
  CodeBuilder count;
  count.Call(0, alloc, {C(one), C(i64)}).Call(kVoid, calls, {R(0)}).Ret(0);
  b.Bytecode("count", {}, 1, count);
  VmEntryRun run;
  auto exe = LoadOrDie(b.Write());
  if (exe == nullptr) return run;
  run.vm_entry_resolved = exe->functions()[static_cast<size_t>(add)].vm_kernel != nullptr;
  VirtualMachine vm(exe);
  Value x = F32({2, 2}, {1, 2, 3, 4});
  run.result = vm.Invoke("main", std::span<const Value>(&x, 1));
  auto counted = vm.Invoke("count", {});
  if (counted.ok()) run.vm_entry_calls = counted->tensor()->ToVector<int64_t>().value()[0];
  return run;
}

TEST(KernelVmEntry, TheVmCallsTheVmEntryOfAModuleBuiltForItsValueLayout) {
  VmEntryRun run = RunAddScalar(STRATA_TEST_KERNEL_MODULE);
  EXPECT_TRUE(run.vm_entry_resolved);
  ASSERT_TRUE(run.result.ok()) << run.result.status().message();
  EXPECT_EQ(ToFloats(*run.result), (std::vector<float>{2.5f, 3.5f, 4.5f, 5.5f}));
  EXPECT_EQ(run.vm_entry_calls, 1);
}

TEST(KernelVmEntry, VmEntriesBuiltForAnotherValueLayoutAreIgnored) {
  VmEntryRun run = RunAddScalar(STRATA_TEST_KERNEL_MODULE_OTHER_LAYOUT);
  EXPECT_FALSE(run.vm_entry_resolved);
  ASSERT_TRUE(run.result.ok()) << run.result.status().message();
  EXPECT_EQ(ToFloats(*run.result), (std::vector<float>{2.5f, 3.5f, 4.5f, 5.5f}));
  EXPECT_EQ(run.vm_entry_calls, 0);
}

TEST(KernelVmEntry, AnOperandTheVmEntryDoesNotTakeGoesThroughTheMainEntry) {
  // Both modules report the Int scalar the same way: the main entry's message.
  for (const char* path : {STRATA_TEST_KERNEL_MODULE, STRATA_TEST_KERNEL_MODULE_OTHER_LAYOUT}) {
    VmEntryRun run = RunAddScalar(path, /*int_scalar=*/true);
    ASSERT_FALSE(run.result.ok()) << path;
    EXPECT_EQ(run.result.status().message(),
              "functions[4] 'main': instruction at word 11 (call): compiled kernel 'add_scalar' failed: add_scalar: "
              "expected (tensor, float, tensor)")
        << path;
    EXPECT_EQ(run.vm_entry_calls, 0) << path;
  }
}

TEST_F(KernelCallTest, MissingKernelSymbolIsALoadTimeErrorNamingIt) {
  b_.Kernel("my_kernel", 0, "no_such_kernel");
  CodeBuilder code;
  code.Call(kVoid, 0, {}).Ret(0);
  b_.Bytecode("main", {"x"}, 1, code);
  std::string error = LoadError(b_.Write());
  EXPECT_NE(error.find("functions[0] 'my_kernel': "), std::string::npos) << error;
  EXPECT_NE(error.find("no_such_kernel"), std::string::npos) << error;
}

TEST_F(KernelCallTest, GarbageModuleCodeIsALoadTimeError) {
  b_.spec.native_modules[0].code = {1, 2, 3, 4, 5, 6, 7, 8};
  b_.Kernel("my_kernel", 0, "add_scalar");
  std::string error = LoadError(b_.Write());
  EXPECT_NE(error.find("native_modules[0]"), std::string::npos) << error;
}

// --threads sets the count before anything runs; once kernels have run on
// the pool, only the same count is accepted, and the error names the one in use.
TEST(KernelThreads, TheCountIsFixedOnceReadAndAnotherOneIsAnError) {
  const int threads = vm::KernelThreadCount();
  EXPECT_TRUE(vm::SetKernelThreadCount(threads).ok());
  Status other = vm::SetKernelThreadCount(threads + 1);
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.message(), "cannot use " + std::to_string(threads + 1) + " threads: kernels already run on " +
                                 std::to_string(threads) + " (set the count before the first kernel runs)");
  EXPECT_EQ(vm::KernelThreadCount(), threads);
  for (int bad : {0, -1, 4097}) {
    Status status = vm::SetKernelThreadCount(bad);
    ASSERT_FALSE(status.ok());
    EXPECT_EQ(status.message(), "the thread count must be between 1 and 4096, got " + std::to_string(bad));
  }
}

}  // namespace
}  // namespace strata::testing
