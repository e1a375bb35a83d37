// SpeculateInvariantLoads: a load that does not vary across a vectorized loop
// but sits under a condition in it moves in front of the loop (one scalar read
// instead of a masked gather), clamped so that it never leaves its buffer.
#include "compiler/codegen/llvm/speculate_loads.h"

#include <gtest/gtest.h>

#include "compiler/ir/printer.h"
#include "tests/codegen/codegen_test_util.h"

namespace strata::codegen::testing {
namespace {

std::string Text(const Stmt& stmt) { return ir::PrintPrimFunc("f", tir::MakePrimFunc({}, stmt)); }
PrimExpr Lt(PrimExpr a, PrimExpr b) { return Bin(tir::PrimExprKind::kLT, std::move(a), std::move(b)); }
PrimExpr And(PrimExpr a, PrimExpr b) { return Bin(tir::PrimExprKind::kAnd, std::move(a), std::move(b)); }

// The shape of a fused conv2d epilogue: for each channel o, a row segment of
// lanes [lo, hi) stores acc + bias[o + shift]. `shift` moves the bias index
// past the end of the bias for the rows whose segment is empty, as a channel
// block past the last channel would.
struct Epilogue {
  Var rows{"rows"}, lo{"lo"}, hi{"hi"}, shift{"shift"}, o{"o"}, l{"l"};
  Buffer bias = tir::MakeBuffer("bias", DataType::F32(), {4});
  Buffer y = tir::MakeBuffer("Y", DataType::F32(), {4, 32});
  Stmt loop = For(l, 0, 32, ForKind::kVectorized,
                  tir::IfThenElseNode::make(And(tir::BinaryOpNode::make(tir::PrimExprKind::kGE, l, lo), Lt(l, hi)),
                                            Store(y, {o, l}, F32(1.0) + Load(bias, {o + shift}))));
  PrimFunc func =
      tir::MakePrimFunc({BufferParam(bias), BufferParam(y), ScalarParam(lo), ScalarParam(hi), ScalarParam(shift)},
                        For(o, 0, 4, ForKind::kSerial, loop));
};

TEST(SpeculateLoads, HoistsAClampedLoadInFrontOfTheLoop) {
  Epilogue e;
  Stmt rewritten = SpeculateInvariantLoads(e.loop);
  ASSERT_FALSE(rewritten.same_as(e.loop));
  const std::string text = Text(rewritten);
  EXPECT_NE(text.find("let bias_invariant: f32 = bias[max(min(o + shift, 3), 0)]"), std::string::npos) << text;
  EXPECT_NE(text.find("Y[o, l] = 1.0 + bias_invariant"), std::string::npos) << text;
  // Nothing left to hoist: the rewrite is a fixed point.
  const auto* let = rewritten.as<tir::LetStmtNode>();
  ASSERT_NE(let, nullptr);
  EXPECT_TRUE(SpeculateInvariantLoads(let->body).same_as(let->body));
}

TEST(SpeculateLoads, LeavesLoadsThatVaryOrMayBeWritten) {
  Var n("n"), l("l"), c("c");
  Buffer x = tir::MakeBuffer("X", DataType::F32(), {32});
  Buffer sym = tir::MakeBuffer("S", DataType::F32(), {n});  // may be empty: no index to clamp to
  Buffer y = tir::MakeBuffer("Y", DataType::F32(), {32});
  PrimExpr lane_condition = Lt(l, c);
  for (const Stmt& body : {
           Store(y, {l}, Load(x, {l})),                                  // varies with the lane
           Store(y, {l}, Load(sym, {c})),                                // its buffer may have no element
           Seq({Store(x, {l}, F32(0.0)), Store(y, {l}, Load(x, {c}))}),  // written in the loop
       }) {
    Stmt loop = For(l, 0, 32, ForKind::kVectorized, tir::IfThenElseNode::make(lane_condition, body));
    EXPECT_TRUE(SpeculateInvariantLoads(loop).same_as(loop)) << Text(loop);
  }
  // Not under a condition: LLVM hoists it itself.
  Stmt plain = For(l, 0, 32, ForKind::kVectorized, Store(y, {l}, Load(x, {c})));
  EXPECT_TRUE(SpeculateInvariantLoads(plain).same_as(plain));
}

TEST(SpeculateLoads, CompiledEpilogueReadsNoGatherAndMatchesTheReference) {
  IrDump dump("strata_speculate_loads");
  Epilogue e;
  LoadedKernels kernels({{"epilogue", e.func}}, dump.options);
  ASSERT_KERNELS_OK(kernels);
  const std::string ir = dump.Take();
  EXPECT_EQ(ir.find("masked.gather"), std::string::npos) << ir;

  // Segments that are empty for some channels, with a bias index past the end
  // there (shift 3: channels 1..3 read bias[4..6] if they read at all).
  struct Case {
    int64_t lo, hi, shift;
  };
  for (const Case& c : {Case{0, 32, 0}, Case{5, 17, 0}, Case{7, 7, 3}, Case{31, 32, 0}}) {
    HostTensor<float> bias({4}, {0.5f, 1.5f, 2.5f, 3.5f});
    HostTensor<float> y({4, 32});
    ASSERT_EQ(Call(kernels.Get("epilogue"),
                   {TensorArg(bias.dl()), TensorArg(y.dl()), IntArg(c.lo), IntArg(c.hi), IntArg(c.shift)}),
              0)
        << vm::TakeKernelError();
    for (int64_t o = 0; o < 4; ++o) {
      for (int64_t l = 0; l < 32; ++l) {
        const float expected = l >= c.lo && l < c.hi ? 1.0f + bias.values()[o + c.shift] : 0.0f;
        EXPECT_EQ(y.values()[o * 32 + l], expected) << "lo " << c.lo << " hi " << c.hi << " o " << o << " l " << l;
      }
    }
  }
}

}  // namespace
}  // namespace strata::codegen::testing
