// Parallel loops over flattened dimensions (build::ParallelOver): the
// multi-index lets at the head of the body are counted per chunk instead of
// divided per iteration (compiler/codegen/llvm/parallel_for.cc). Every
// element must still get its own index, in chunks that start mid-row, and an
// empty loop with a zero extent must not divide by it.
#include <gtest/gtest.h>

#include "compiler/codegen/llvm/parallel_work.h"
#include "tests/codegen/codegen_test_util.h"

namespace strata::codegen::testing {
namespace {

using tir::PrimExprKind;

// Y[n, 6, h] = n * 10000 + g * 100 + row, over one parallel loop of n * 6 * h
// iterations with the multi-index as ParallelOver writes it.
PrimFunc IndexKernel() {
  Var n("n"), h("h"), t("t"), t0("t0"), t1("t1"), t2("t2");
  Buffer y = tir::MakeBuffer("Y", DataType::F32(), {n, 6, h});
  PrimExpr value = tir::CastNode::make(DataType::F32(), t0 * 10000 + t1 * 100 + t2);
  Stmt body = tir::LetStmtNode::make(
      t0, Bin(PrimExprKind::kFloorDiv, t, h * 6),
      tir::LetStmtNode::make(
          t1, Bin(PrimExprKind::kFloorMod, Bin(PrimExprKind::kFloorDiv, t, h), 6),
          tir::LetStmtNode::make(t2, Bin(PrimExprKind::kFloorMod, t, h), Store(y, {t0, t1, t2}, value))));
  return tir::MakePrimFunc({BufferParam(y)}, For(t, 0, n * 6 * h, ForKind::kParallel, body));
}

TEST(ParallelFor, FlattenedIndicesAreCountedAcrossChunks) {
  LoadedKernels kernels({{"index", IndexKernel()}});
  ASSERT_KERNELS_OK(kernels);
  // Small loops run on this thread in one chunk; 3 x 6 x 7283 iterations are
  // above the pool's threshold, so the second chunk starts inside a row.
  static_assert(3 * 6 * 7283 >= kMinParallelWork);
  for (auto [n, h] : {std::pair<int64_t, int64_t>{1, 1}, {2, 5}, {3, 7283}, {2, 0}, {0, 3}}) {
    SCOPED_TRACE("n=" + std::to_string(n) + " h=" + std::to_string(h));
    HostTensor<float> y({n, 6, h});
    ASSERT_EQ(Call(kernels.Get("index"), {TensorArg(y.dl())}), 0) << vm::TakeKernelError();
    const std::vector<float> got = y.values();
    size_t wrong = 0;
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t g = 0; g < 6; ++g) {
        for (int64_t row = 0; row < h; ++row) {
          const float want = static_cast<float>(i * 10000 + g * 100 + row);
          if (got[static_cast<size_t>((i * 6 + g) * h + row)] != want && wrong++ < 5) {
            ADD_FAILURE() << "Y[" << i << ", " << g << ", " << row << "] = " << got[(i * 6 + g) * h + row]
                          << ", expected " << want;
          }
        }
      }
    }
    EXPECT_EQ(wrong, 0u);
  }
}

}  // namespace
}  // namespace strata::codegen::testing
