// The VM entry of compiled kernels (compiler/codegen/llvm/vm_entry.cc): called
// with VM registers and operand words, it must compute what the main entry
// computes, fail with the main entry's messages, and hand every operand it does
// not take in the common form back to the VM (STRATA_VM_ENTRY_FALLBACK) before
// it has checked or written anything.
#include <cstdint>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "tests/codegen/codegen_test_util.h"
#include "vm/executable.h"
#include "vm/storage.h"
#include "vm/value.h"

namespace strata::codegen::testing {
namespace {

using tir::PrimExprKind;
using vm::Value;

Value F32Tensor(std::vector<int64_t> shape, std::vector<float> values) {
  auto t = vm::Tensor::FromValues<float>(shape, values);
  EXPECT_TRUE(t.ok()) << t.status().message();
  return Value::FromTensor(std::move(t).value());
}

std::vector<float> Floats(const Value& v) { return v.tensor()->ToVector<float>().value(); }

// The operand word of a Value that is not a register: its address, tagged.
int64_t Held(const Value& v) { return static_cast<int64_t>(reinterpret_cast<uint64_t>(&v) | vm::kDispatchValueTag); }

int32_t CallVm(StrataVmKernelFn fn, const std::vector<Value>& registers, const std::vector<int64_t>& operands) {
  return fn(registers.data(), operands.data(), static_cast<int32_t>(operands.size()));
}

// Y[i] = X[i] * alpha + cast<f32>(offset): two buffers, a float and an int scalar.
PrimFunc MakeAxpb() {
  Var n("n"), i("i"), alpha("alpha", DataType::F32()), offset("offset", DataType::I64());
  Buffer x = tir::MakeBuffer("X", DataType::F32(), {n});
  Buffer y = tir::MakeBuffer("Y", DataType::F32(), {n});
  Stmt body = For(i, 0, n, ForKind::kSerial,
                  Store(y, {i}, Load(x, {i}) * alpha + tir::CastNode::make(DataType::F32(), offset)));
  return tir::MakePrimFunc({BufferParam(x), ScalarParam(alpha), ScalarParam(offset), BufferParam(y)}, body);
}

class VmEntry : public ::testing::Test {
 protected:
  void SetUp() override {
    kernels_ = std::make_unique<LoadedKernels>(
        std::vector<std::pair<std::string, PrimFunc>>{{"relu", MakeRelu()}, {"axpb", MakeAxpb()}});
    ASSERT_KERNELS_OK(*kernels_);
    relu_ = kernels_->GetVmEntry("relu");
    axpb_ = kernels_->GetVmEntry("axpb");
    ASSERT_NE(relu_, nullptr);
    ASSERT_NE(axpb_, nullptr);
    vm::TakeKernelError();
  }
  std::unique_ptr<LoadedKernels> kernels_;
  StrataVmKernelFn relu_ = nullptr;
  StrataVmKernelFn axpb_ = nullptr;
};

TEST_F(VmEntry, ReadsRegistersAndHeldValues) {
  std::vector<Value> regs = {Value(), F32Tensor({2, 3}, {-1, 2, -3, 4, -5, 6}), F32Tensor({2, 3}, {9, 9, 9, 9, 9, 9})};
  ASSERT_EQ(CallVm(relu_, regs, {1, 2}), 0) << vm::TakeKernelError();
  EXPECT_EQ(Floats(regs[2]), (std::vector<float>{0, 2, 0, 4, 0, 6}));

  // The input as a constant the executable holds (a tagged address).
  Value constant = F32Tensor({1, 2}, {-7, 8});
  std::vector<Value> out = {F32Tensor({1, 2}, {1, 1})};
  ASSERT_EQ(CallVm(relu_, out, {Held(constant), 0}), 0) << vm::TakeKernelError();
  EXPECT_EQ(Floats(out[0]), (std::vector<float>{0, 8}));
}

TEST_F(VmEntry, ScalarsArriveAsTheMainEntryTakesThem) {
  std::vector<Value> regs = {F32Tensor({3}, {1, 2, 3}), Value::FromFloat(0.5), Value::FromInt(-10),
                             F32Tensor({3}, {0, 0, 0}), Value::FromInt(2)};
  ASSERT_EQ(CallVm(axpb_, regs, {0, 1, 2, 3}), 0) << vm::TakeKernelError();
  EXPECT_EQ(Floats(regs[3]), (std::vector<float>{-9.5f, -9.0f, -8.5f}));
  // An Int for the float parameter is converted, as the main entry converts it.
  ASSERT_EQ(CallVm(axpb_, regs, {0, 4, 2, 3}), 0) << vm::TakeKernelError();
  EXPECT_EQ(Floats(regs[3]), (std::vector<float>{-8, -6, -4}));
  // Immediates are held Values too.
  Value three = Value::FromInt(3);
  ASSERT_EQ(CallVm(axpb_, regs, {0, 1, Held(three), 3}), 0) << vm::TakeKernelError();
  EXPECT_EQ(Floats(regs[3]), (std::vector<float>{3.5f, 4.0f, 4.5f}));
}

TEST_F(VmEntry, ErrorsAreTheMainEntrysErrors) {
  std::vector<Value> regs = {F32Tensor({2, 3}, {1, 2, 3, 4, 5, 6}), F32Tensor({3, 2}, {0, 0, 0, 0, 0, 0})};
  ASSERT_EQ(CallVm(relu_, regs, {0, 1}), 1);
  const std::string vm_message = vm::TakeKernelError();
  StrataKernelArg args[2];
  args[0].tensor = regs[0].tensor()->dl();
  args[1].tensor = regs[1].tensor()->dl();
  const int32_t codes[2] = {STRATA_ARG_TENSOR, STRATA_ARG_TENSOR};
  ASSERT_EQ(kernels_->Get("relu")(args, codes, 2), 1);
  EXPECT_EQ(vm_message, vm::TakeKernelError());
  EXPECT_EQ(vm_message, "relu: argument 'B' (#1): dimension 0 expected m = 2, got 3");
}

TEST_F(VmEntry, UnusualOperandsFallBackBeforeAnythingIsWritten) {
  const std::vector<float> untouched = {5, 5, 5};
  auto device_storage =
      vm::Storage::WrapExternal(reinterpret_cast<void*>(uintptr_t{0x1000}), 12, DLDevice{kDLExtDev, 0}, nullptr);
  auto off_host = vm::Tensor::View(device_storage, 0, std::vector<int64_t>{3}, DataType::F32());
  ASSERT_TRUE(off_host.ok()) << off_host.status().message();
  std::vector<Value> regs = {F32Tensor({3}, {1, 2, 3}), Value::FromFloat(0.5),
                             Value::FromInt(1),         F32Tensor({3}, untouched),
                             Value::FromShape({3}),     Value::FromTensor(std::move(off_host).value()),
                             Value::FromString("x"),    Value()};
  const std::vector<std::vector<int64_t>> unusual = {
      {0, 1, 2},        // one operand short
      {0, 1, 2, 3, 3},  // one too many
      {4, 1, 2, 3},     // a Shape where a tensor belongs (the main entry takes it expanded)
      {5, 1, 2, 3},     // a tensor off the host
      {0, 6, 2, 3},     // a String for the float
      {0, 1, 1, 3},     // a Float for the int
      {0, 1, 2, 7},     // Null for the output
      {0, 3, 2, 3},     // a tensor for a scalar
  };
  for (const std::vector<int64_t>& operands : unusual) {
    EXPECT_EQ(CallVm(axpb_, regs, operands), STRATA_VM_ENTRY_FALLBACK) << ::testing::PrintToString(operands);
    EXPECT_EQ(vm::TakeKernelError(), "") << ::testing::PrintToString(operands);
    EXPECT_EQ(Floats(regs[3]), untouched) << ::testing::PrintToString(operands);
  }
}

TEST(VmEntryNames, AProgramNamedLikeAVmEntryGetsASymbolOfItsOwn) {
  // "copy__vm" would export strata_kernel_copy__vm, the VM entry of "copy".
  for (bool vm_name_first : {false, true}) {
    std::vector<std::pair<std::string, PrimFunc>> funcs = {{"copy", MakeRelu()}, {"copy__vm", MakeMatmul()}};
    if (vm_name_first) std::swap(funcs[0], funcs[1]);
    LoadedKernels kernels(funcs);
    ASSERT_KERNELS_OK(kernels);
    const std::string& copy = kernels.compiled().symbols.at("copy");
    const std::string& copy_vm = kernels.compiled().symbols.at("copy__vm");
    EXPECT_NE(copy + STRATA_VM_ENTRY_SUFFIX, copy_vm);
    EXPECT_NE(copy, copy_vm + STRATA_VM_ENTRY_SUFFIX);
    // Each VM entry runs its own program: relu takes 2 operands, matmul 3.
    std::vector<Value> regs = {F32Tensor({1, 2}, {-1, 1}), F32Tensor({1, 2}, {0, 0})};
    EXPECT_EQ(CallVm(kernels.GetVmEntry("copy"), regs, {0, 1}), 0) << vm::TakeKernelError();
    EXPECT_EQ(Floats(regs[1]), (std::vector<float>{0, 1}));
    EXPECT_EQ(CallVm(kernels.GetVmEntry("copy__vm"), regs, {0, 1}), STRATA_VM_ENTRY_FALLBACK);
  }
}

}  // namespace
}  // namespace strata::codegen::testing
