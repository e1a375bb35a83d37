// VirtualMachine: programs built directly as bytecode, run end to end.
#include "vm/virtual_machine.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>

#include <gtest/gtest.h>

#include "tests/vm/executable_builder.h"
#include "tests/vm/test_util.h"

namespace strata::testing {
namespace {

using vm::Value;
using vm::VirtualMachine;

// main(a: f32[m, k], b: f32[k, n]) -> f32[m, n] through the builtins and strata.blas.matmul,
// the way the compiler lowers a call_dps_packed with symbolic shapes.
std::vector<uint8_t> MatmulExecutable() {
  ExecutableBuilder b;
  int shape_of = b.Library("vm.builtin.shape_of");
  int alloc_heap = b.Library("vm.builtin.alloc_shape_heap");
  int check = b.Library("vm.builtin.check_tensor_info");
  int match = b.Library("vm.builtin.match_shape");
  int make = b.Library("vm.builtin.make_shape");
  int alloc = b.Library("vm.builtin.alloc_tensor");
  int matmul = b.Library("strata.blas.matmul");
  int f32 = b.DType(DataType::F32());
  int ctx_a = b.String("main: parameter 'a'");
  int ctx_b = b.String("main: parameter 'b'");
  int ctx_ma = b.String("main: parameter 'a' (match_shape)");
  int ctx_mb = b.String("main: parameter 'b' (match_shape)");
  int m = b.String("m"), k = b.String("k"), n = b.String("n");
  CodeBuilder code;
  code.Call(2, alloc_heap, {Imm(3)})
      .Call(kVoid, check, {R(0), Imm(2), C(f32), C(ctx_a)})
      .Call(kVoid, check, {R(1), Imm(2), C(f32), C(ctx_b)})
      .Call(3, shape_of, {R(0)})
      .Call(kVoid, match, {R(3), R(2), Imm(2), Imm(1), Imm(0), C(m), Imm(1), Imm(1), C(k), C(ctx_ma)})
      .Call(kVoid, match, {R(1), R(2), Imm(2), Imm(2), Imm(1), C(k), Imm(1), Imm(2), C(n), C(ctx_mb)})
      .Call(4, make, {R(2), Imm(2), Imm(1), Imm(0), Imm(1), Imm(2)})
      .Call(5, alloc, {R(4), C(f32)})
      .Call(kVoid, matmul, {R(0), R(1), R(5)})
      .Ret(5);
  b.Bytecode("main", {"a", "b"}, 6, code);
  return b.Write();
}

void ExpectNear(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-4f) << "element " << i;
}

class MatmulProgramTest : public ::testing::Test {
 protected:
  void SetUp() override {
    exe_ = LoadOrDie(MatmulExecutable());
    ASSERT_NE(exe_, nullptr);
    vm_ = std::make_unique<VirtualMachine>(exe_);
  }
  StatusOr<Value> Run(Value a, Value b) {
    std::vector<Value> args = {std::move(a), std::move(b)};
    return vm_->Invoke("main", args);
  }
  std::shared_ptr<const vm::Executable> exe_;
  std::unique_ptr<VirtualMachine> vm_;
};

TEST_F(MatmulProgramTest, ComputesTheProductAtSeveralShapes) {
  for (auto [m, k, n] : {std::tuple{2, 3, 4}, std::tuple{1, 1, 1}, std::tuple{7, 13, 5}, std::tuple{64, 32, 48}}) {
    std::vector<float> a = Iota(m * k), b = Iota(k * n, -1.0f, 0.5f);
    auto result = Run(F32({m, k}, a), F32({k, n}, b));
    ASSERT_TRUE(result.ok()) << result.status().message();
    ASSERT_TRUE(result->is_tensor());
    EXPECT_EQ(result->tensor()->TypeString(), "Tensor[(" + std::to_string(m) + ", " + std::to_string(n) + "), f32]");
    EXPECT_EQ(reinterpret_cast<uintptr_t>(result->tensor()->data()) % 64, 0u);
    ExpectNear(ToFloats(*result), ReferenceMatmul(a, b, m, k, n));
  }
}

TEST_F(MatmulProgramTest, ShapeMismatchNamesParameterDimensionExpressionAndValues) {
  auto result = Run(F32({2, 3}, Iota(6)), F32({4, 5}, Iota(20)));
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().message(),
            "functions[7] 'main': instruction at word 40 (call): main: parameter 'b' (match_shape): dimension 0 "
            "expected k = 3, got 4");
  EXPECT_EQ(result.status().code(), StatusCode::kInvalidArgument);

  // The same VM runs a correct call afterwards.
  std::vector<float> a = Iota(6), b = Iota(12);
  auto ok = Run(F32({2, 3}, a), F32({3, 4}, b));
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  ExpectNear(ToFloats(*ok), ReferenceMatmul(a, b, 2, 3, 4));
}

TEST_F(MatmulProgramTest, WrongDtypeIsReported) {
  auto a = vm::Tensor::FromValues<int32_t>({2, 3}, {1, 2, 3, 4, 5, 6});
  ASSERT_TRUE(a.ok());
  auto result = Run(Value::FromTensor(a.value()), F32({3, 4}, Iota(12)));
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().message(),
            "functions[7] 'main': instruction at word 5 (call): main: parameter 'a': expected dtype f32, got i32 "
            "(Tensor[(2, 3), i32])");
}

TEST_F(MatmulProgramTest, WrongRankIsReported) {
  auto result = Run(F32({2, 3}, Iota(6)), F32({12}, Iota(12)));
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().message(),
            "functions[7] 'main': instruction at word 13 (call): main: parameter 'b': expected a tensor of rank 2, got "
            "rank 1 (Tensor[(12,), f32])");
}

TEST_F(MatmulProgramTest, NonTensorArgumentIsReported) {
  auto result = Run(Value::FromInt(5), F32({3, 4}, Iota(12)));
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().message(),
            "functions[7] 'main': instruction at word 5 (call): main: parameter 'a': expected a Tensor, got Int 5");
}

TEST_F(MatmulProgramTest, MissingInputNamesTheParameters) {
  std::vector<Value> args = {F32({2, 3}, Iota(6))};
  auto result = vm_->Invoke("main", args);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().message(), "function 'main' expects 2 arguments (a, b), got 1");
}

TEST_F(MatmulProgramTest, UnknownFunctionListsTheEntryPoints) {
  auto result = vm_->Invoke("mian", {});
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().message(), "no entry point named 'mian' in the executable (entry points: main)");
}

TEST_F(MatmulProgramTest, RegistersAreReleasedAfterSuccessAndAfterErrors) {
  Value a = F32({2, 3}, Iota(6));
  Value good_b = F32({3, 4}, Iota(12));
  Value bad_b = F32({5, 4}, Iota(20));
  {
    auto result = Run(a, bad_b);
    ASSERT_FALSE(result.ok());
  }
  EXPECT_EQ(a.tensor()->use_count(), 1);
  EXPECT_EQ(bad_b.tensor()->use_count(), 1);
  {
    auto result = Run(a, good_b);
    ASSERT_TRUE(result.ok()) << result.status().message();
    EXPECT_EQ(result->tensor()->use_count(), 1);  // only the result holds the output
  }
  EXPECT_EQ(a.tensor()->use_count(), 1);
  EXPECT_EQ(good_b.tensor()->use_count(), 1);
}

TEST(VirtualMachineTest, OneExecutableRunsOnFourThreadsConcurrently) {
  auto exe = LoadOrDie(MatmulExecutable());
  ASSERT_NE(exe, nullptr);
  std::atomic<int> failures{0};
  std::atomic<int> expected_errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      VirtualMachine vm(exe);
      for (int i = 0; i < 60; ++i) {
        int64_t m = 1 + (t + i) % 7, k = 1 + i % 5, n = 1 + (t * 3 + i) % 6;
        std::vector<float> a = Iota(m * k, 0.1f * t), b = Iota(k * n, -0.5f, 0.125f);
        int64_t bad_k = (i % 10 == 9) ? k + 1 : k;
        std::vector<Value> args = {F32({m, k}, a), F32({bad_k, n}, Iota(bad_k * n))};
        if (bad_k == k) args[1] = F32({k, n}, b);
        auto result = vm.Invoke("main", args);
        if (bad_k != k) {
          if (!result.ok() &&
              result.status().message().find("expected k = " + std::to_string(k)) != std::string::npos) {
            ++expected_errors;
          } else {
            ++failures;
          }
          continue;
        }
        if (!result.ok()) {
          ++failures;
          continue;
        }
        auto got = result->tensor()->ToVector<float>();
        std::vector<float> want = ReferenceMatmul(a, b, m, k, n);
        if (!got.ok() || got->size() != want.size()) {
          ++failures;
          continue;
        }
        for (size_t e = 0; e < want.size(); ++e) {
          if (std::abs((*got)[e] - want[e]) > 1e-4f) {
            ++failures;
            break;
          }
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(expected_errors.load(), 4 * 6);
}

// main(n): counts down with If/Goto, counting iterations; returns the count.
TEST(VirtualMachineTest, IfGotoCountdownLoop) {
  RegisterTestFunctions();
  ExecutableBuilder b;
  int copy = b.Library("vm.builtin.copy");
  int dec = b.Library("test.decrement");
  int inc = b.Library("test.increment");
  CodeBuilder code;
  code.Call(1, copy, {R(0)})
      .Call(2, copy, {Imm(0)})
      .Label("loop")
      .If(1, "done")
      .Call(1, dec, {R(1)})
      .Call(2, inc, {R(2)})
      .Goto("loop")
      .Label("done")
      .Ret(2);
  b.Bytecode("main", {"n"}, 3, code);
  auto exe = LoadOrDie(b.Write());
  ASSERT_NE(exe, nullptr);
  VirtualMachine vm(exe);
  for (int64_t n : {0, 1, 5, 1000}) {
    Value arg = Value::FromInt(n);
    auto result = vm.Invoke("main", std::span<const Value>(&arg, 1));
    ASSERT_TRUE(result.ok()) << result.status().message();
    ASSERT_TRUE(result->is_int());
    EXPECT_EQ(result->int_value(), n);
  }
}

// fact(n) = n == 0 ? 1 : n * fact(n - 1), a bytecode function calling itself.
std::vector<uint8_t> FactorialExecutable() {
  ExecutableBuilder b;
  int copy = b.Library("vm.builtin.copy");
  int dec = b.Library("test.decrement");
  int mul = b.Library("test.mul");
  int fact = b.Declare("fact", {"n"}, 4);
  CodeBuilder code;
  code.If(0, "base")
      .Call(1, dec, {R(0)})
      .Call(2, fact, {R(1)})
      .Call(3, mul, {R(0), R(2)})
      .Ret(3)
      .Label("base")
      .Call(1, copy, {Imm(1)})
      .Ret(1);
  b.Define(fact, code);
  // twice_fact(n) = fact(n) + fact(n) via two calls; exercises argument passing of immediates too.
  CodeBuilder twice;
  twice.Call(1, fact, {R(0)}).Call(2, fact, {Imm(3)}).Call(3, mul, {R(1), R(2)}).Ret(3);
  b.Bytecode("fact_times_six", {"n"}, 4, twice);
  return b.Write();
}

TEST(VirtualMachineTest, BytecodeFunctionsCallEachOtherAndRecurse) {
  RegisterTestFunctions();
  auto exe = LoadOrDie(FactorialExecutable());
  ASSERT_NE(exe, nullptr);
  VirtualMachine vm(exe);
  Value ten = Value::FromInt(10);
  auto fact = vm.Invoke("fact", std::span<const Value>(&ten, 1));
  ASSERT_TRUE(fact.ok()) << fact.status().message();
  EXPECT_EQ(fact->int_value(), 3628800);
  Value five = Value::FromInt(5);
  auto six = vm.Invoke("fact_times_six", std::span<const Value>(&five, 1));
  ASSERT_TRUE(six.ok()) << six.status().message();
  EXPECT_EQ(six->int_value(), 120 * 6);
}

TEST(VirtualMachineTest, RunawayRecursionIsAnErrorAndTheVmRecovers) {
  RegisterTestFunctions();
  auto exe = LoadOrDie(FactorialExecutable());
  ASSERT_NE(exe, nullptr);
  VirtualMachine vm(exe);
  Value deep = Value::FromInt(100000);
  auto result = vm.Invoke("fact", std::span<const Value>(&deep, 1));
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("call stack overflow calling 'fact' (depth 1024)"), std::string::npos)
      << result.status().message();
  EXPECT_NE(result.status().message().find("functions[3] 'fact': instruction at word"), std::string::npos)
      << result.status().message();
  Value five = Value::FromInt(5);
  auto ok = vm.Invoke("fact", std::span<const Value>(&five, 1));
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(ok->int_value(), 120);
}

// main(): a loop with no exit.
std::vector<uint8_t> EndlessLoopExecutable() {
  ExecutableBuilder b;
  int inc = b.Library("test.increment");
  CodeBuilder code;
  code.Label("top").Call(0, inc, {Imm(1)}).Goto("top").Ret(0);
  b.Bytecode("spin", {}, 1, code);
  return b.Write();
}

TEST(VirtualMachineTest, StepBudgetStopsAnEndlessLoopAndResetsPerCall) {
  RegisterTestFunctions();
  auto exe = LoadOrDie(EndlessLoopExecutable());
  ASSERT_NE(exe, nullptr);
  VirtualMachine vm(exe);
  vm.SetStepBudget(500);
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto result = vm.Invoke("spin", {});
    ASSERT_FALSE(result.ok());
    EXPECT_EQ(
        result.status().message(),
        "functions[1] 'spin': instruction at word 5 (goto): step budget exhausted (500 backward jumps and calls)");
    EXPECT_EQ(result.status().code(), StatusCode::kResourceExhausted);
  }
  // The budget is per Invoke: fact(10) makes 10 recursive calls, twice in a row.
  auto counted = LoadOrDie(FactorialExecutable());
  VirtualMachine calls(counted);
  calls.SetStepBudget(12);
  Value ten = Value::FromInt(10);
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto fact = calls.Invoke("fact", std::span<const Value>(&ten, 1));
    ASSERT_TRUE(fact.ok()) << fact.status().message();
  }
  Value twenty = Value::FromInt(20);
  auto too_deep = calls.Invoke("fact", std::span<const Value>(&twenty, 1));
  ASSERT_FALSE(too_deep.ok());
  EXPECT_NE(too_deep.status().message().find("step budget exhausted (12"), std::string::npos)
      << too_deep.status().message();
}

TEST(VirtualMachineTest, CancellationFromAnotherThreadStopsAnEndlessLoop) {
  RegisterTestFunctions();
  auto exe = LoadOrDie(EndlessLoopExecutable());
  ASSERT_NE(exe, nullptr);
  VirtualMachine vm(exe);
  std::atomic<bool> cancel{false};
  vm.SetCancellationFlag(&cancel);
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    cancel.store(true);
  });
  auto result = vm.Invoke("spin", {});
  canceller.join();
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().message(), "functions[1] 'spin': instruction at word 5 (goto): cancelled");
  EXPECT_EQ(result.status().code(), StatusCode::kCancelled);
  cancel.store(false);
  vm.SetStepBudget(3);
  auto budget = vm.Invoke("spin", {});
  ASSERT_FALSE(budget.ok());
  EXPECT_NE(budget.status().message().find("step budget exhausted"), std::string::npos);
}

TEST(VirtualMachineTest, LibraryErrorsInNestedCallsPropagateUnchanged) {
  RegisterTestFunctions();
  ExecutableBuilder b;
  int fail = b.Library("test.fail");
  int inner = b.Declare("inner", {"x"}, 2, /*entry_point=*/false);
  CodeBuilder inner_code;
  inner_code.Call(1, fail, {R(0)}).Ret(1);
  b.Define(inner, inner_code);
  CodeBuilder outer;
  outer.Call(1, inner, {R(0)}).Ret(1);
  b.Bytecode("outer", {"x"}, 2, outer);
  auto exe = LoadOrDie(b.Write());
  ASSERT_NE(exe, nullptr);
  VirtualMachine vm(exe);
  Value x = F32({2}, {1, 2});
  auto result = vm.Invoke("outer", std::span<const Value>(&x, 1));
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().message(),
            "functions[1] 'inner': instruction at word 0 (call): test.fail: Tensor[(2,), f32]");
  EXPECT_EQ(x.tensor()->use_count(), 1);
  // "inner" is not an entry point.
  auto hidden = vm.Invoke("inner", std::span<const Value>(&x, 1));
  ASSERT_FALSE(hidden.ok());
  EXPECT_EQ(hidden.status().message(), "no entry point named 'inner' in the executable (entry points: outer)");
}

TEST(VirtualMachineTest, IfAcceptsIntsAndZeroDimTensorsAndRejectsOtherValues) {
  ExecutableBuilder b;
  int copy = b.Library("vm.builtin.copy");
  CodeBuilder code;
  code.If(0, "no").Call(1, copy, {Imm(1)}).Ret(1).Label("no").Call(1, copy, {Imm(0)}).Ret(1);
  b.Bytecode("truth", {"c"}, 2, code);
  auto exe = LoadOrDie(b.Write());
  ASSERT_NE(exe, nullptr);
  VirtualMachine vm(exe);
  auto run = [&](Value c) { return vm.Invoke("truth", std::span<const Value>(&c, 1)); };
  auto t = vm::Tensor::FromValues<bool>({}, {true});
  auto f = vm::Tensor::FromValues<int32_t>({}, {0});
  auto big = vm::Tensor::FromValues<int64_t>({}, {int64_t{1} << 40});
  ASSERT_TRUE(t.ok() && f.ok() && big.ok());
  EXPECT_EQ(run(Value::FromInt(7))->int_value(), 1);
  EXPECT_EQ(run(Value::FromInt(0))->int_value(), 0);
  EXPECT_EQ(run(Value::FromTensor(t.value()))->int_value(), 1);
  EXPECT_EQ(run(Value::FromTensor(f.value()))->int_value(), 0);
  EXPECT_EQ(run(Value::FromTensor(big.value()))->int_value(), 1);
  auto bad = run(Value::FromFloat(1.0));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "functions[1] 'truth': instruction at word 0 (if): condition register r0 holds Float 1; expected an Int "
            "or a 0-d bool or integer tensor");
  auto vector = run(F32({2}, {1, 1}));
  ASSERT_FALSE(vector.ok());
  EXPECT_NE(vector.status().message().find("holds Tensor[(2,), f32]"), std::string::npos);
}

TEST(VirtualMachineTest, TuplesAndFunctionValues) {
  ExecutableBuilder b;
  int tuple = b.Library("vm.builtin.tuple");
  int get = b.Library("vm.builtin.tuple_getitem");
  int check = b.Library("vm.builtin.check_tuple_info");
  int copy = b.Library("vm.builtin.copy");
  int label = b.String("hello");
  int ctx = b.String("main: tuple");
  CodeBuilder code;
  code.Call(1, tuple, {R(0), Imm(7), C(label)})
      .Call(kVoid, check, {R(1), Imm(3), C(ctx)})
      .Call(2, get, {R(1), Imm(1)})
      .Call(3, copy, {Fn(0)})
      .Call(4, tuple, {R(1), R(2), R(3)})
      .Ret(4);
  b.Bytecode("main", {"x"}, 5, code);
  CodeBuilder bad;
  bad.Call(1, tuple, {R(0)}).Call(2, get, {R(1), Imm(5)}).Ret(2);
  b.Bytecode("out_of_range", {"x"}, 3, bad);
  CodeBuilder wrong_size;
  wrong_size.Call(1, tuple, {R(0)}).Call(kVoid, check, {R(1), Imm(2), C(ctx)}).Ret(1);
  b.Bytecode("wrong_size", {"x"}, 2, wrong_size);
  auto exe = LoadOrDie(b.Write());
  ASSERT_NE(exe, nullptr);
  VirtualMachine vm(exe);
  Value x = F32({1}, {3});
  auto result = vm.Invoke("main", std::span<const Value>(&x, 1));
  ASSERT_TRUE(result.ok()) << result.status().message();
  ASSERT_TRUE(result->is_tuple());
  const vm::Tuple* outer = result->tuple();
  ASSERT_EQ(outer->size(), 3);
  ASSERT_TRUE((*outer)[0].is_tuple());
  const vm::Tuple* inner = (*outer)[0].tuple();
  ASSERT_EQ(inner->size(), 3);
  EXPECT_EQ((*inner)[0].tensor(), x.tensor());  // shared, not copied
  EXPECT_EQ((*inner)[1].int_value(), 7);
  EXPECT_EQ((*inner)[2].string(), "hello");
  EXPECT_EQ((*outer)[1].int_value(), 7);
  ASSERT_TRUE((*outer)[2].is_function());
  EXPECT_EQ((*outer)[2].function_index(), 0);

  auto oob = vm.Invoke("out_of_range", std::span<const Value>(&x, 1));
  ASSERT_FALSE(oob.ok());
  EXPECT_EQ(oob.status().message(),
            "functions[5] 'out_of_range': instruction at word 5 (call): vm.builtin.tuple_getitem: index 5 out of range "
            "(tuple of 1)");
  auto size = vm.Invoke("wrong_size", std::span<const Value>(&x, 1));
  ASSERT_FALSE(size.ok());
  EXPECT_EQ(
      size.status().message(),
      "functions[6] 'wrong_size': instruction at word 5 (call): main: tuple: expected a tuple of 2 fields, got 1");
}

// Constants: weights, a shape and a dtype from the constant pool, passed straight to library calls.
std::vector<uint8_t> ConstantsExecutable(std::vector<float>* out_weights) {
  ExecutableBuilder b;
  int alloc = b.Library("vm.builtin.alloc_tensor");
  int matmul = b.Library("strata.blas.matmul");
  int copy = b.Library("vm.builtin.copy");
  *out_weights = Iota(6, 1.0f, -0.5f);
  int w = b.Tensor<float>(DataType::F32(), {2, 3}, *out_weights);
  int out_shape = b.Shape({2, 3});
  int f32 = b.DType(DataType::F32());
  int pi = b.Constant(3.25);
  CodeBuilder apply;
  apply.Call(1, alloc, {C(out_shape), C(f32)}).Call(kVoid, matmul, {R(0), C(w), R(1)}).Ret(1);
  b.Bytecode("apply", {"x"}, 2, apply);
  CodeBuilder weights;
  weights.Call(0, copy, {C(w)}).Ret(0);
  b.Bytecode("weights", {}, 1, weights);
  CodeBuilder scalar;
  scalar.Call(0, copy, {C(pi)}).Ret(0);
  b.Bytecode("scalar", {}, 1, scalar);
  return b.Write();
}

void CheckConstants(const std::shared_ptr<const vm::Executable>& exe, const std::vector<float>& weights) {
  VirtualMachine vm(exe);
  std::vector<float> x = {1, 2, 3, 4};
  Value arg = F32({2, 2}, x);
  auto applied = vm.Invoke("apply", std::span<const Value>(&arg, 1));
  ASSERT_TRUE(applied.ok()) << applied.status().message();
  ExpectNear(ToFloats(*applied), ReferenceMatmul(x, weights, 2, 2, 3));

  auto w = vm.Invoke("weights", {});
  ASSERT_TRUE(w.ok()) << w.status().message();
  const vm::Tensor* t = w->tensor();
  EXPECT_TRUE(t->read_only());
  auto addr = reinterpret_cast<const uint8_t*>(t->data());
  EXPECT_GE(addr, exe->bytes().data());
  EXPECT_LE(addr + t->num_bytes(), exe->bytes().data() + exe->bytes().size());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(addr) % 64, 0u);
  // The executable hands out the same tensor every time: nothing is copied per call.
  EXPECT_EQ(t, exe->constants()[0].tensor());
  EXPECT_EQ(ToFloats(*w), weights);

  auto s = vm.Invoke("scalar", {});
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->float_value(), 3.25);
}

TEST(VirtualMachineTest, TensorConstantsFromBytesPointIntoTheExecutable) {
  std::vector<float> weights;
  auto exe = LoadOrDie(ConstantsExecutable(&weights));
  ASSERT_NE(exe, nullptr);
  EXPECT_FALSE(exe->is_mapped());
  CheckConstants(exe, weights);
}

TEST(VirtualMachineTest, MappedFileConstantsAreZeroCopyAndOutliveTheExecutable) {
  std::vector<float> weights;
  std::string path = TempPath("constants.stx");
  WriteFile(path, ConstantsExecutable(&weights));
  Value kept;
  {
    auto exe = vm::Executable::MapFile(path);
    ASSERT_TRUE(exe.ok()) << exe.status().message();
    EXPECT_TRUE((*exe)->is_mapped());
    CheckConstants(*exe, weights);
    VirtualMachine vm(*exe);
    auto w = vm.Invoke("weights", {});
    ASSERT_TRUE(w.ok());
    kept = *w;
  }
  // The executable and the VM are gone; the constant keeps the mapping alive.
  EXPECT_EQ(ToFloats(kept), weights);
  auto from_file = vm::Executable::LoadFromFile(path);
  ASSERT_TRUE(from_file.ok()) << from_file.status().message();
  EXPECT_FALSE((*from_file)->is_mapped());
  CheckConstants(*from_file, weights);
  std::remove(path.c_str());
}

TEST(VirtualMachineTest, MissingFilesAreReportedWithThePath) {
  auto mapped = vm::Executable::MapFile("/nonexistent/model.stx");
  ASSERT_FALSE(mapped.ok());
  EXPECT_EQ(mapped.status().message(), "/nonexistent/model.stx: cannot open: No such file or directory");
  auto read = vm::Executable::LoadFromFile("/nonexistent/model.stx");
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().message(), "/nonexistent/model.stx: cannot open: No such file or directory");
}

TEST(VirtualMachineTest, UnresolvedExecutablesCanBeDescribedButNotRun) {
  ExecutableBuilder b;
  int missing = b.Library("not.registered.anywhere");
  CodeBuilder code;
  code.Call(0, missing, {}).Ret(0);
  b.Bytecode("main", {}, 1, code);
  std::vector<uint8_t> bytes = b.Write();
  EXPECT_EQ(LoadError(bytes),
            "functions[0]: library function 'not.registered.anywhere' is not registered in this runtime (link and "
            "register the library that provides it, or check the name)");
  EXPECT_EQ(vm::Executable::LoadFromBytes(bytes).status().code(), StatusCode::kNotFound);
  auto exe = vm::Executable::LoadFromBytes(bytes, vm::LoadOptions{.resolve = false, .device_options = {}});
  ASSERT_TRUE(exe.ok()) << exe.status().message();
  VirtualMachine vm(*exe);
  auto result = vm.Invoke("main", {});
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("cannot be run"), std::string::npos);
}

TEST(VirtualMachineTest, LibraryCallsWithManyArgumentsUseTheHeapPath) {
  ExecutableBuilder b;
  int tuple = b.Library("vm.builtin.tuple");
  std::vector<int64_t> operands;
  for (int i = 0; i < 100; ++i) operands.push_back(Imm(i * 3));
  CodeBuilder code;
  code.Call(0, tuple, operands).Ret(0);
  b.Bytecode("main", {}, 1, code);
  auto exe = LoadOrDie(b.Write());
  ASSERT_NE(exe, nullptr);
  VirtualMachine vm(exe);
  auto result = vm.Invoke("main", {});
  ASSERT_TRUE(result.ok()) << result.status().message();
  ASSERT_EQ(result->tuple()->size(), 100);
  for (int i = 0; i < 100; ++i) EXPECT_EQ((*result->tuple())[i].int_value(), i * 3);
}

}  // namespace
}  // namespace strata::testing
