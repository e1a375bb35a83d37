// The pattern language and FuseOpsByPattern's two safety rules, with patterns a
// user pass would write.
#include <gtest/gtest.h>

#include "compiler/byoc/fuse_ops_by_pattern.h"
#include "compiler/ir/printer.h"
#include "compiler/pattern/pattern_matcher.h"
#include "tests/transform/test_util.h"

namespace strata::byoc {
namespace {

using namespace pattern;  // NOLINT

constexpr const char* kModule = R"(
func @main(x: Tensor[(n, 8), f32], w: Tensor[(8, 8), f32], b: Tensor[(8,), f32], k: Tensor[(n, 8), i32]) -> Tuple[Tensor[(n, 8), f32], Tensor[(n, 8), f32], Tensor[(n, 8), i32]] {
  dataflow {
    d = dense(x, w)
    e = exp(d)
    s = add(d, e)
    t = add(x, const(Tensor[(8,), f32], [1, 2, 3, 4, 5, 6, 7, 8]))
    u = relu(t)
    q = add(k, k)
    output s, u, q
  }
  return (s, u, q)
}
)";

struct Block {
  ir::IRModule module;
  const graph::SeqExprNode* body;
  std::unique_ptr<BlockMatcher> matcher;
  size_t Index(const std::string& name) const {
    for (size_t i = 0; i < matcher->bindings().size(); ++i) {
      if (matcher->bindings()[i].var->name == name) return i;
    }
    ADD_FAILURE() << "no binding " << name;
    return 0;
  }
};

Block MainBlock() {
  Block block{transform::testing::RunPasses(transform::testing::Parse(kModule), {"Normalize"}).value(), nullptr,
              nullptr};
  block.body = block.module.GetGraphFunction("main")->body.as<graph::SeqExprNode>();
  block.matcher = std::make_unique<BlockMatcher>(block.body->blocks[0].bindings, std::set<const graph::VarNode*>{});
  return block;
}

TEST(PatternTest, OpsConstantsDtypesAndCombinators) {
  Block b = MainBlock();
  const BlockMatcher& m = *b.matcher;
  EXPECT_TRUE(m.MatchBinding(IsOp("add", {Wildcard(), IsConst()}), b.Index("t")));
  EXPECT_FALSE(m.MatchBinding(IsOp("add", {Wildcard(), IsConst()}), b.Index("s")));
  EXPECT_TRUE(m.MatchBinding(IsOp("relu", {IsOp("add", {IsVar("x"), Wildcard()})}), b.Index("u")));
  EXPECT_FALSE(m.MatchBinding(IsOp("relu", {IsOp("add", {IsVar("w"), Wildcard()})}), b.Index("u")));
  // dtype and rank constraints, and | & !
  DFPattern any_add = IsOp("add", {Wildcard(), Wildcard()});
  EXPECT_TRUE(m.MatchBinding(any_add.HasDType(DataType::I32()), b.Index("q")));
  EXPECT_FALSE(m.MatchBinding(any_add.HasDType(DataType::F32()), b.Index("q")));
  EXPECT_TRUE(m.MatchBinding(any_add.HasRank(2), b.Index("q")));
  EXPECT_TRUE(m.MatchBinding(IsOp("exp", {Wildcard()}) | any_add, b.Index("q")));
  EXPECT_FALSE(m.MatchBinding(any_add & !any_add.HasDType(DataType::I32()), b.Index("q")));
  // One pattern node used twice must match the same value: add(k, k), not add(d, e).
  DFPattern same = Wildcard();
  EXPECT_TRUE(m.MatchBinding(IsOp("add", {same, same}), b.Index("q")));
  EXPECT_FALSE(m.MatchBinding(IsOp("add", {same, same}), b.Index("s")));
  // A predicate sees the matched value.
  EXPECT_FALSE(m.MatchBinding(any_add.Where([](const graph::Expr& e) {
    return e->struct_info.as<graph::TensorStructInfoNode>()->dtype == DataType::F32();
  }),
                              b.Index("q")));
  // The match reports what it covers: relu and the add it looked through.
  auto match = m.MatchBinding(IsOp("relu", {IsOp("add", {Wildcard(), IsConst()})}), b.Index("u"));
  ASSERT_TRUE(match);
  EXPECT_EQ(match->bindings, (std::vector<size_t>{b.Index("t"), b.Index("u")}));
  EXPECT_EQ(IsOp("relu", {IsOp("add", {Wildcard(), IsConst()})}).ToString(), "relu(add(*, const))");
}

TEST(PatternTest, UsedOnlyByAndCheckCallback) {
  Block b = MainBlock();
  DFPattern dense = IsOp("dense", {Wildcard(), Wildcard()});
  DFPattern exp = IsOp("exp", {dense});
  // d is used by e and by s: "used only by exp" fails, without the constraint it matches.
  EXPECT_TRUE(MatchFusionPattern({"t.exp", exp, {}, nullptr}, *b.matcher, b.Index("e")));
  EXPECT_FALSE(MatchFusionPattern({"t.exp", exp, {{dense, exp}}, nullptr}, *b.matcher, b.Index("e")));
  EXPECT_FALSE(MatchFusionPattern({"t.exp", exp, {}, [](const PatternMatch&, const BlockMatcher&) { return false; }},
                                  *b.matcher, b.Index("e")));
}

TEST(FuseOpsByPatternTest, NeverSwallowsAnEscapingIntermediateNorCreatesACycle) {
  // add(dense(*, *), *) at s: the wildcard takes e = exp(d), computed from the
  // match's own intermediate d. Grouping {d, s} would need e before and after
  // the composite: a cycle; and d is used by e outside the match. Nothing fuses.
  ir::IRModule module = transform::testing::RunPasses(transform::testing::Parse(kModule), {"Normalize"}).value();
  DFPattern dense_add = IsOp("add", {IsOp("dense", {Wildcard(), Wildcard()}), Wildcard()});
  auto fused = FuseOpsByPattern(module, {{"user.dense_add", dense_add, {}, nullptr}});
  ASSERT_TRUE(fused.ok()) << fused.status().message();
  EXPECT_EQ(ir::PrintModule(fused.value()), ir::PrintModule(module));
  // The same pattern where the intermediate stays inside fuses.
  auto relu_add =
      FuseOpsByPattern(module, {{"user.relu_add", IsOp("relu", {IsOp("add", {Wildcard(), IsConst()})}), {}, nullptr}});
  ASSERT_TRUE(relu_add.ok());
  EXPECT_NE(ir::PrintModule(relu_add.value()).find("u: Tensor[(n, 8), f32] = @user_relu_add_0(x, const("),
            std::string::npos)
      << ir::PrintModule(relu_add.value());
}

TEST(FuseOpsByPatternTest, OutlinedFunctionsKeepExactSymbolicShapes) {
  // v's length is n * 4: the function's parameter gets a variable of its own
  // (s0); the reshape names n, which no parameter of the function defines, so
  // n comes in as a shape argument; the return struct info is inferred in the
  // function's own variables and the caller's result is exact.
  ir::IRModule module = transform::testing::RunPasses(transform::testing::Parse(R"(
func @main(x: Tensor[(n, 4), f32], v: Tensor[(n * 4,), f32]) -> Tensor[(n, 4), f32] {
  dataflow {
    r = reshape(v, shape(n, 4))
    y = relu(r)
    z = add(x, y)
    output z
  }
  return z
}
)"),
                                                      {"Normalize"})
                            .value();
  auto fused = FuseOpsByPattern(
      module, {{"user.reshape_relu", IsOp("relu", {IsOp("reshape", {Wildcard(), Wildcard()})}), {}, nullptr}});
  ASSERT_TRUE(fused.ok()) << fused.status().message();
  const std::string text = ir::PrintModule(fused.value());
  EXPECT_NE(
      text.find("func @user_reshape_relu_0(v: Tensor[(s0,), f32], shape_vars: Shape[(n,)]) -> Tensor[(n, 4), f32]"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("y: Tensor[(n, 4), f32] = @user_reshape_relu_0(v, shape(n))"), std::string::npos) << text;
  EXPECT_TRUE(transform::testing::RunPasses(fused.value(), {"WellFormed"}).ok()) << text;
}

}  // namespace
}  // namespace strata::byoc
