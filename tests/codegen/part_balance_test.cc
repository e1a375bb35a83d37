// How programs are dealt to the LLVM modules compiled on separate threads.
#include "compiler/codegen/llvm/part_balance.h"

#include <gtest/gtest.h>

#include "tests/codegen/codegen_test_util.h"

namespace strata::codegen::testing {
namespace {

using Parts = std::vector<std::vector<size_t>>;

TEST(PartBalance, LargestFirstEachToTheLightestModule) {
  // Round-robin would put both large programs (0 and 2) in one module.
  EXPECT_EQ(BalanceParts({100, 1, 90, 1}, 2), (Parts{{0}, {1, 2, 3}}));
  // 50 + 40 against 30 + 30 + 30: each list in the programs' order.
  EXPECT_EQ(BalanceParts({30, 50, 30, 40, 30}, 2), (Parts{{1, 2}, {0, 3, 4}}));
  EXPECT_EQ(BalanceParts({5, 5, 5}, 1), (Parts{{0, 1, 2}}));
  EXPECT_EQ(BalanceParts({7}, 3), (Parts{{0}, {}, {}}));
}

TEST(PartBalance, AnUnrolledLoopCountsItsBodyOncePerCopy) {
  Var i("i"), j("j");
  Buffer out = tir::MakeBuffer("Out", DataType::F32(), {16});
  Stmt store = Store(out, {j}, tir::FloatImm(DataType::F32(), 0));
  const int64_t serial = EstimatedCodeSize(For(j, 0, 16, ForKind::kSerial, store));
  const int64_t unrolled = EstimatedCodeSize(For(j, 0, 16, ForKind::kUnrolled, store));
  const int64_t vectorized = EstimatedCodeSize(For(j, 0, 16, ForKind::kVectorized, store));
  EXPECT_EQ(vectorized, serial);
  // The body 16 times (the loop statement itself once).
  EXPECT_GT(unrolled, 12 * serial);
  EXPECT_LT(unrolled, 16 * serial);
  const int64_t nested = EstimatedCodeSize(For(i, 0, 4, ForKind::kUnrolled, For(j, 0, 16, ForKind::kUnrolled, store)));
  EXPECT_GT(nested, 3 * unrolled);
  EXPECT_LT(nested, 4 * unrolled + 16);
}

}  // namespace
}  // namespace strata::codegen::testing
