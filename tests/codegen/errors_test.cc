// Kernel failures: argument checks at the entry and asserts in the body return
// non-zero with a message naming the program, the argument and the dimension.
#include <cstdlib>

#include <gtest/gtest.h>

#include "tests/codegen/codegen_test_util.h"

namespace strata::codegen::testing {
namespace {

using tir::PrimExprKind;

class CodegenMatmulErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    kernels_ =
        std::make_unique<LoadedKernels>(std::vector<std::pair<std::string, PrimFunc>>{{"tir_matmul", MakeMatmul()}});
    ASSERT_KERNELS_OK(*kernels_);
    matmul_ = kernels_->Get("tir_matmul");
    ASSERT_NE(matmul_, nullptr);
    vm::TakeKernelError();
  }

  // Calls matmul and returns the message (empty if it succeeded).
  std::string CallExpectingError(const std::vector<TypedArg>& args) {
    int32_t rc = Call(matmul_, args);
    std::string message = vm::TakeKernelError();
    EXPECT_NE(rc, 0) << "the call should have failed";
    return message;
  }

  std::unique_ptr<LoadedKernels> kernels_;
  StrataKernelFn matmul_ = nullptr;
};

TEST_F(CodegenMatmulErrors, MismatchedSymbolicDimension) {
  HostTensor<float> a({2, 3}), b({4, 5}), c({2, 5});
  EXPECT_EQ(CallExpectingError({TensorArg(a.dl()), TensorArg(b.dl()), TensorArg(c.dl())}),
            "tir_matmul: argument 'B' (#1): dimension 0 expected n = 3, got 4");
  HostTensor<float> c2({3, 5}), b2({3, 5});
  EXPECT_EQ(CallExpectingError({TensorArg(a.dl()), TensorArg(b2.dl()), TensorArg(c2.dl())}),
            "tir_matmul: argument 'C' (#2): dimension 0 expected m = 2, got 3");
}

TEST_F(CodegenMatmulErrors, WrongNdim) {
  HostTensor<float> a({2, 3, 1}), b({3, 5}), c({2, 5});
  EXPECT_EQ(CallExpectingError({TensorArg(a.dl()), TensorArg(b.dl()), TensorArg(c.dl())}),
            "tir_matmul: argument 'A' (#0): expected ndim 2, got 3");
}

TEST_F(CodegenMatmulErrors, WrongDtype) {
  HostTensor<float> a({2, 3}), c({2, 5});
  HostTensor<int64_t> b({3, 5});
  EXPECT_EQ(CallExpectingError({TensorArg(a.dl()), TensorArg(b.dl()), TensorArg(c.dl())}),
            "tir_matmul: argument 'B' (#1): expected dtype f32, got i64");
  HostTensor<float> b2({3, 5});
  b2.dl()->dtype.lanes = 4;
  EXPECT_EQ(CallExpectingError({TensorArg(a.dl()), TensorArg(b2.dl()), TensorArg(c.dl())}),
            "tir_matmul: argument 'B' (#1): expected dtype f32, got f32x4");
  b2.dl()->dtype = DLDataType{9, 16, 1};
  EXPECT_EQ(CallExpectingError({TensorArg(a.dl()), TensorArg(b2.dl()), TensorArg(c.dl())}),
            "tir_matmul: argument 'B' (#1): expected dtype f32, got type code 9 (bits 16, lanes 1)");
}

TEST_F(CodegenMatmulErrors, WrongArgumentCountNullAndDevice) {
  HostTensor<float> a({2, 3}), b({3, 5}), c({2, 5});
  EXPECT_EQ(CallExpectingError({TensorArg(a.dl()), TensorArg(b.dl())}), "tir_matmul: expected 3 arguments, got 2");
  EXPECT_EQ(CallExpectingError({TensorArg(a.dl()), TensorArg(nullptr), TensorArg(c.dl())}),
            "tir_matmul: argument 'B' (#1): expected a tensor, got NULL");
  c.dl()->device = DLDevice{kDLCUDA, 0};
  EXPECT_EQ(CallExpectingError({TensorArg(a.dl()), TensorArg(b.dl()), TensorArg(c.dl())}),
            "tir_matmul: argument 'C' (#2): expected a CPU tensor, got device type 2");
}

TEST_F(CodegenMatmulErrors, TypeCodesAreCheckedBeforeAnySlotIsRead) {
  // An int in a tensor slot (a damaged call site) must never be dereferenced.
  HostTensor<float> a({2, 3}), c({2, 5});
  EXPECT_EQ(CallExpectingError({TensorArg(a.dl()), IntArg(1), TensorArg(c.dl())}),
            "tir_matmul: argument 'B' (#1): expected a tensor, got an int");
  EXPECT_EQ(CallExpectingError({FloatArg(2.5), TensorArg(a.dl()), TensorArg(c.dl())}),
            "tir_matmul: argument 'A' (#0): expected a tensor, got a float");
  TypedArg unknown = TensorArg(c.dl());
  unknown.type_code = 77;
  EXPECT_EQ(CallExpectingError({TensorArg(a.dl()), TensorArg(a.dl()), unknown}),
            "tir_matmul: argument 'C' (#2): expected a tensor, got an argument of unknown type code");
}

TEST_F(CodegenMatmulErrors, StridesMustBeCompact) {
  HostTensor<float> a({2, 3}, RandomFloats(6, 1)), b({3, 5}, RandomFloats(15, 2)), c({2, 5});
  int64_t compact[] = {5, 1};
  c.dl()->strides = compact;  // explicit but compact: fine
  EXPECT_EQ(Call(matmul_, {TensorArg(a.dl()), TensorArg(b.dl()), TensorArg(c.dl())}), 0) << vm::TakeKernelError();
  int64_t transposed[] = {1, 2};
  c.dl()->strides = transposed;
  EXPECT_EQ(CallExpectingError({TensorArg(a.dl()), TensorArg(b.dl()), TensorArg(c.dl())}),
            "tir_matmul: argument 'C' (#2): expected compact row-major strides, dimension 1 has stride 2, "
            "expected 1");
}

TEST_F(CodegenMatmulErrors, ByteOffsetIsApplied) {
  // A's data starts 4 floats into its storage.
  std::vector<float> storage = {9, 9, 9, 9, 1, 2, 3, 4};
  HostTensor<float> a({2, 2}), b({2, 1}, {1, 1}), c({2, 1});
  a.dl()->data = storage.data();
  a.dl()->byte_offset = 4 * sizeof(float);
  ASSERT_EQ(Call(matmul_, {TensorArg(a.dl()), TensorArg(b.dl()), TensorArg(c.dl())}), 0) << vm::TakeKernelError();
  EXPECT_EQ(c.values(), (std::vector<float>{3, 7}));
}

TEST(CodegenErrors, ConstantDimensionMismatch) {
  Var i("i");
  Buffer x = tir::MakeBuffer("X", DataType::F32(), {PrimExpr(4)});
  Stmt body = For(i, 0, 4, ForKind::kSerial, Store(x, {i}, F32(1)));
  LoadedKernels kernels({{"fixed", tir::MakePrimFunc({BufferParam(x)}, body)}});
  ASSERT_KERNELS_OK(kernels);
  HostTensor<float> xs({5});
  EXPECT_NE(Call(kernels.Get("fixed"), {TensorArg(xs.dl())}), 0);
  EXPECT_EQ(vm::TakeKernelError(), "fixed: argument 'X' (#0): dimension 0 expected 4, got 5");
}

// assert n < limit inside a parallel loop: the failing chunk may run on a pool
// worker, and its message must still reach the caller.
PrimFunc MakeAssertInParallel() {
  Var n("n"), i("i"), limit("limit");
  Buffer y = tir::MakeBuffer("Y", DataType::I64(), {n});
  Stmt check = tir::AssertStmtNode::make(Bin(PrimExprKind::kLT, i, limit), "index 100% over the limit");
  Stmt body = For(i, 0, n, ForKind::kParallel, Seq({check, Store(y, {i}, i)}));
  return tir::MakePrimFunc({BufferParam(y), ScalarParam(limit)}, body);
}

TEST(CodegenErrors, AssertFailureReportsMessage) {
  LoadedKernels kernels({{"tir_assert", MakeAssertInParallel()}});
  ASSERT_KERNELS_OK(kernels);
  StrataKernelFn fn = kernels.Get("tir_assert");
  HostTensor<int64_t> ys({1000});
  ASSERT_EQ(Call(fn, {TensorArg(ys.dl()), IntArg(1000)}), 0) << vm::TakeKernelError();
  EXPECT_EQ(vm::TakeKernelError(), "");
  EXPECT_EQ(ys[999], 999);
  // Only the last iteration (in the last chunk, on a worker when there are
  // several threads) fails.
  EXPECT_NE(Call(fn, {TensorArg(ys.dl()), IntArg(999)}), 0);
  EXPECT_EQ(vm::TakeKernelError(), "tir_assert: index 100% over the limit");
  // Every iteration fails: still one message.
  EXPECT_NE(Call(fn, {TensorArg(ys.dl()), IntArg(0)}), 0);
  EXPECT_EQ(vm::TakeKernelError(), "tir_assert: index 100% over the limit");
}

TEST(CodegenErrors, AssertFreesWorkspaceAndReturns) {
  // A large local buffer is live when the assert fails: the early return frees it
  // (checked by ASan/LSan builds) and the code after the assert does not run.
  Var n("n"), i("i");
  Buffer y = tir::MakeBuffer("Y", DataType::F32(), {n});
  Buffer t = tir::MakeBuffer("T", DataType::F32(), {n});
  Stmt body =
      tir::AllocateNode::make(t, Seq({For(i, 0, n, ForKind::kSerial, Store(t, {i}, F32(1))),
                                      tir::AssertStmtNode::make(Bin(PrimExprKind::kLT, n, PrimExpr(3)), "n too large"),
                                      For(i, 0, n, ForKind::kSerial, Store(y, {i}, Load(t, {i})))}));
  LoadedKernels kernels({{"scratch", tir::MakePrimFunc({BufferParam(y)}, body)}});
  ASSERT_KERNELS_OK(kernels);
  HostTensor<float> small({2}), large({5}, {0, 0, 0, 0, 0});
  EXPECT_EQ(Call(kernels.Get("scratch"), {TensorArg(small.dl())}), 0);
  EXPECT_EQ(small.values(), (std::vector<float>{1, 1}));
  EXPECT_NE(Call(kernels.Get("scratch"), {TensorArg(large.dl())}), 0);
  EXPECT_EQ(vm::TakeKernelError(), "scratch: n too large");
  EXPECT_EQ(large.values(), (std::vector<float>{0, 0, 0, 0, 0}));
}

TEST(CodegenErrors, UnboundVariableIsACompileError) {
  Var n("n"), i("i"), stray("stray");
  Buffer y = tir::MakeBuffer("Y", DataType::I64(), {n});
  Stmt body = For(i, 0, n, ForKind::kSerial, Store(y, {i}, stray));
  StatusOr<CompiledKernels> compiled = CompileTensorPrograms({{"tir_bad", tir::MakePrimFunc({BufferParam(y)}, body)}});
  ASSERT_FALSE(compiled.ok());
  EXPECT_NE(compiled.status().message().find("tir_bad"), std::string::npos) << compiled.status().message();
  EXPECT_NE(compiled.status().message().find("'stray'"), std::string::npos) << compiled.status().message();
}

TEST(CodegenErrors, ShapeVariableOnlyInsideExpressionIsACompileError) {
  Var n("n"), i("i");
  Buffer y = tir::MakeBuffer("Y", DataType::F32(), {n * 2});
  Stmt body = For(i, 0, n, ForKind::kSerial, Store(y, {i}, F32(0)));
  StatusOr<CompiledKernels> compiled = CompileTensorPrograms({{"tir_bad", tir::MakePrimFunc({BufferParam(y)}, body)}});
  ASSERT_FALSE(compiled.ok());
  EXPECT_EQ(compiled.status().message(),
            "cannot compile tensor program 'tir_bad': argument 'Y' (#0): dimension 0 (n * 2) uses 'n', which no "
            "parameter binds: give it a dimension of its own or pass it as a scalar parameter");
}

TEST(CodegenErrors, LinkerFailureIsReportedWithTheCommand) {
  // STRATA_LINKER replaces `cc`; `false` runs and fails, a missing program is not found.
  setenv("STRATA_LINKER", "false", 1);
  StatusOr<CompiledKernels> failed = CompileTensorPrograms({{"tir_relu", MakeRelu()}});
  setenv("STRATA_LINKER", "/nonexistent/strata-cc", 1);
  StatusOr<CompiledKernels> missing = CompileTensorPrograms({{"tir_relu", MakeRelu()}});
  unsetenv("STRATA_LINKER");
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().message().rfind("linking the kernel shared object failed: `false -shared", 0), 0u)
      << failed.status().message();
  EXPECT_NE(failed.status().message().find("exited with status 1"), std::string::npos) << failed.status().message();
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("no system linker found (tried '/nonexistent/strata-cc')"),
            std::string::npos)
      << missing.status().message();
}

}  // namespace
}  // namespace strata::codegen::testing
