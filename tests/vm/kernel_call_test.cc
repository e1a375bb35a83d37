// Calls into compiled kernels: a hand-written kernel module embedded in an executable.
#include <gtest/gtest.h>

#include "tests/vm/executable_builder.h"
#include "tests/vm/test_util.h"
#include "vm/virtual_machine.h"

namespace strata::testing {
namespace {

using vm::Value;
using vm::VirtualMachine;

serialization::NativeModuleSpec TestModule() {
  serialization::NativeModuleSpec m;
  m.target_triple = "x86_64-pc-linux-gnu";
  m.cpu = "generic";
  m.code = ReadFile(STRATA_TEST_KERNEL_MODULE);
  m.symbols = {"add_scalar", "record_i64", "always_fails", "silent_failure"};
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

}  // namespace
}  // namespace strata::testing
