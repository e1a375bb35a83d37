// The work estimate that decides whether a parallel loop wakes the thread pool,
// and the serial path the generated code takes for small loops.
#include "compiler/codegen/llvm/parallel_work.h"

#include <gtest/gtest.h>

#include "compiler/ir/printer.h"
#include "tests/codegen/codegen_test_util.h"

namespace strata::codegen::testing {
namespace {

std::string WorkText(const Stmt& loop) {
  std::optional<PrimExpr> work = ParallelLoopWork(*loop.as<tir::ForNode>());
  return work ? ir::PrintPrimExpr(*work) : "unknown";
}

TEST(ParallelWork, CountsInnermostIterations) {
  Var n("n"), m("m"), i("i"), j("j"), k("k");
  Buffer tile = tir::MakeBuffer("T", DataType::F32(), {m});
  Stmt store = Store(tile, {j}, tir::FloatImm(DataType::F32(), 0));
  EXPECT_EQ(WorkText(For(i, 0, n, ForKind::kParallel,
                         tir::AllocateNode::make(tile, For(j, 0, m, ForKind::kVectorized, store)))),
            "m * n");
  // A sequence adds up; a nested extent that depends on an enclosing loop
  // variable is counted at that variable's first value.
  Stmt seq =
      tir::SeqStmtNode::make({For(j, 0, 16, ForKind::kSerial, store), For(k, 0, i + 4, ForKind::kSerial, store)});
  EXPECT_EQ(WorkText(For(i, 2, n, ForKind::kParallel, tir::AllocateNode::make(tile, seq))), "n * 22");
}

TEST(ParallelWork, ATranscendentalCallCountsAsManyStatements) {
  Var n("n"), i("i"), j("j");
  Buffer tile = tir::MakeBuffer("T", DataType::F32(), {16});
  Var e("e", DataType::F32());
  PrimExpr x = tir::FloatImm(DataType::F32(), 0.5);
  // exp in a let (softmax's exp(x - max)) and erf in a store (a GELU epilogue).
  Stmt body = tir::LetStmtNode::make(e, tir::CallNode::make(tir::Intrinsic::kExp, {x}),
                                     Store(tile, {j}, e + tir::CallNode::make(tir::Intrinsic::kErf, {x})));
  EXPECT_EQ(WorkText(For(i, 0, n, ForKind::kParallel,
                         tir::AllocateNode::make(tile, For(j, 0, 16, ForKind::kVectorized, body)))),
            "n * " + std::to_string(16 * (1 + 2 * kTranscendentalCost)));
}

TEST(ParallelWork, StoresToSharedMemoryCountAsPlainWork) {
  // Output stores are not charged extra: a depthwise convolution writing 200
  // KiB ran serially under such a charge and MobileNetV3 was 14% slower.
  Var n("n"), m("m"), i("i"), j("j");
  Buffer y = tir::MakeBuffer("Y", DataType::F32(), {n, m});
  Stmt store = Store(y, {i, j}, tir::FloatImm(DataType::F32(), 0));
  EXPECT_EQ(WorkText(For(i, 0, n, ForKind::kParallel, For(j, 0, m, ForKind::kVectorized, store))), "m * n");
}

TEST(ParallelWork, SmallLoopsCallTheChunkDirectly) {
  IrDump dump("strata_parallel_work");
  Var n("n"), i("i");
  Buffer x = tir::MakeBuffer("X", DataType::F32(), {n});
  Buffer y = tir::MakeBuffer("Y", DataType::F32(), {n});
  Stmt body = For(i, 0, n, ForKind::kParallel, Store(y, {i}, Load(x, {i})));
  LoadedKernels kernels({{"copy", tir::MakePrimFunc({BufferParam(x), BufferParam(y)}, body)}}, dump.options);
  ASSERT_KERNELS_OK(kernels);
  const std::string ir = dump.Take();
  const std::string threshold = ", " + std::to_string(kMinParallelWork) + "\n";
  EXPECT_NE(ir.find(threshold), std::string::npos) << ir;
  // Both paths compute the same thing: 5 elements run serially, 4 Mi (16 MiB
  // stored, beyond the charged cache's worth) on the pool.
  for (int64_t size : {int64_t{5}, int64_t{1} << 22}) {
    HostTensor<float> xs({size}, RandomFloats(size, 7));
    HostTensor<float> ys({size});
    ASSERT_EQ(Call(kernels.Get("copy"), {TensorArg(xs.dl()), TensorArg(ys.dl())}), 0) << vm::TakeKernelError();
    EXPECT_EQ(ys.values(), xs.values());
  }
}

}  // namespace
}  // namespace strata::codegen::testing
