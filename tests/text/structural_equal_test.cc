// StructuralEqual: alpha-equivalence (names do not matter, positions do), every
// kind of difference detected, and the why_not path that locates it.
#include "compiler/ir/structural_equal.h"

#include <cmath>
#include <string>

#include <gtest/gtest.h>

#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"
#include "tests/text/text_test_util.h"

namespace strata::ir {
namespace {

using testing::MustParse;

// Compares two module texts; returns why_not ("" when equal).
std::string Diff(const std::string& a, const std::string& b) {
  std::string why;
  bool equal = StructuralEqual(MustParse(a), MustParse(b), &why);
  EXPECT_EQ(equal, why.empty()) << why;
  return why;
}

constexpr const char* kMain = R"(
prim_func @relu(A: Buffer[(m, n), f32], B: Buffer[(m, n), f32]) {
  for i in parallel(0, m) {
    for j in vectorized(0, n) {
      let a: f32 = A[i, j]
      B[i, j] = max(a, 0.0)
    }
  }
}

func @main(x: Tensor[ndim=2, f32]) -> Tensor[(m, n), f32] {
  x1 = match_cast(x, Tensor[(m, n), f32])
  dataflow {
    lv0: Tensor[(m, n), f32] = call_tir(@relu, (x1,), Tensor[(m, n), f32])
    output lv0
  }
  return lv0
}
)";

// The same program with every local name changed.
constexpr const char* kMainRenamed = R"(
prim_func @relu(In: Buffer[(rows, cols), f32], Out: Buffer[(rows, cols), f32]) {
  for r in parallel(0, rows) {
    for c in vectorized(0, cols) {
      let v: f32 = In[r, c]
      Out[r, c] = max(v, 0.0)
    }
  }
}

func @main(input: Tensor[ndim=2, f32]) -> Tensor[(p, q), f32] {
  t = match_cast(input, Tensor[(p, q), f32])
  dataflow {
    result: Tensor[(p, q), f32] = call_tir(@relu, (t,), Tensor[(p, q), f32])
    output result
  }
  return result
}
)";

TEST(StructuralEqualTest, RenamingEveryLocalKeepsModulesEqual) { EXPECT_EQ(Diff(kMain, kMainRenamed), ""); }

TEST(StructuralEqualTest, ModuleEqualsItself) {
  IRModule m = MustParse(kMain);
  EXPECT_TRUE(StructuralEqual(m, m));
}

TEST(StructuralEqualTest, SwappedShapeVariablesAreDetectedWithPath) {
  std::string a = "func @main(x: Tensor[(m, n), f32]) -> Object {\n  y = my_op(x, shape(m, n))\n  return y\n}\n";
  std::string b = "func @main(x: Tensor[(m, n), f32]) -> Object {\n  y = my_op(x, shape(n, m))\n  return y\n}\n";
  EXPECT_EQ(Diff(a, b), "function @main: binding 0: call arg 1: shape dim 0: m vs n");
}

TEST(StructuralEqualTest, NamesDoNotHideADifferentVariable) {
  // Both sides say n, but the second n of b is a different variable than its first.
  std::string a = "prim_func @f(A: Buffer[(n,), f32], B: Buffer[(n,), f32]) {\n}\n";
  std::string b = "prim_func @f(A: Buffer[(n,), f32], B: Buffer[(k,), f32]) {\n}\n";
  EXPECT_EQ(Diff(a, b), "function @f: param 1: buffer B: shape dim 0: n vs k");
}

TEST(StructuralEqualTest, CorrespondenceIsOneToOne) {
  // x maps to x; then b uses x where a uses y: y cannot also map to x.
  std::string a = "func @f(x: Tensor, y: Tensor) -> Object {\n  z = add(x, y)\n  return z\n}\n";
  std::string b = "func @f(x: Tensor, y: Tensor) -> Object {\n  z = add(x, x)\n  return z\n}\n";
  EXPECT_EQ(Diff(a, b), "function @f: binding 0: call arg 1: y vs x");
}

TEST(StructuralEqualTest, DetectsEachKindOfDifference) {
  struct Case {
    const char* a;
    const char* b;
    const char* why;
  };
  const Case cases[] = {
      {"func @f(x: Tensor[(n,), f32]) -> Object {\n  return x\n}\n",
       "func @f(x: Tensor[(n,), f16]) -> Object {\n  return x\n}\n",
       "function @f: param 0: var x: Tensor[(n,), f32] vs Tensor[(n,), f16]"},
      {"func @f(x: Tensor) -> Object {\n  y = op(x, axis=1)\n  return y\n}\n",
       "func @f(x: Tensor) -> Object {\n  y = op(x, axis=2)\n  return y\n}\n",
       "function @f: binding 0: attr 'axis': 1 vs 2"},
      {"func @f(x: Tensor) -> Object {\n  y = op(x)\n  return y\n}\n",
       "func @f(x: Tensor) -> Object {\n  y = other_op(x)\n  return y\n}\n",
       "function @f: binding 0: callee: <op op> vs <op other_op>"},
      {"func @f() -> Object {\n  c = const(Tensor[(2,), i32], [1, 2])\n  return c\n}\n",
       "func @f() -> Object {\n  c = const(Tensor[(2,), i32], [1, 3])\n  return c\n}\n",
       "function @f: binding 0: constant data differs"},
      {"func @f(x: Tensor) -> Object {\n  dataflow {\n    y = op(x)\n    output y\n  }\n  return y\n}\n",
       "func @f(x: Tensor) -> Object {\n  y = op(x)\n  return y\n}\n", "function @f: block 0: dataflow vs plain"},
      {"func @f(x: Tensor) -> Object {\n  dataflow {\n    y = op(x)\n    z = op(y)\n    output z\n  }\n  return z\n}\n",
       "func @f(x: Tensor) -> Object {\n  dataflow {\n    y = op(x)\n    z = op(y)\n    output y, z\n  }\n  return "
       "z\n}\n",
       "function @f: binding 0: var y: dataflow vs not dataflow"},
      {"func @f(x: Shape) -> Object {\n  y = match_cast(x, Shape[(a,)])\n  return y\n}\n",
       "func @f(x: Shape) -> Object {\n  y = match_cast(x, Shape[(a, b)])\n  return y\n}\n",
       "function @f: binding 0: pattern: Shape[(a,)] vs Shape[(a, b)]"},
      {"prim_func @f(A: Buffer[(4,), f32]) {\n  for i in range(0, 4) {\n    A[i] = 1.0\n  }\n}\n",
       "prim_func @f(A: Buffer[(4,), f32]) {\n  for i in parallel(0, 4) {\n    A[i] = 1.0\n  }\n}\n",
       "function @f: for i: range vs parallel"},
      {"prim_func @f(A: Buffer[(4,), f32]) {\n  A[0] = 1.0\n  A[1] = 2.0\n}\n",
       "prim_func @f(A: Buffer[(4,), f32]) {\n  A[0] = 1.0\n  A[1] = 2.5\n}\n",
       "function @f: stmt 1: store A: value: 2.0 vs 2.5"},
      {"prim_func @f(A: Buffer[(4,), f32]) {\n  A[0] = 1.0\n}\n",
       "prim_func @f(A: Buffer[(4,), f64]) {\n  A[0] = 1.0f64\n}\n",
       "function @f: param 0: buffer A: dtype f32 vs f64"},
      {"prim_func @f(k: i64) {\n  evaluate k + 1\n}\n", "prim_func @f(k: i32) {\n  evaluate k + 1i32\n}\n",
       "function @f: param 0: k vs k (dtype i64 vs i32)"},
      {"prim_func @f(A: Buffer[(4,), f32]) {\n  prefetch A[1]\n}\n",
       "prim_func @f(A: Buffer[(4,), f32]) {\n  prefetch A[2]\n}\n", "function @f: prefetch: index 0: 1 vs 2"},
      {"prim_func @f(A: Buffer[(4,), f32]) {\n  assert 1 < 2, \"a\"\n}\n",
       "prim_func @f(A: Buffer[(4,), f32]) {\n  assert 1 < 2, \"b\"\n}\n",
       "function @f: assert: message \"a\" vs \"b\""},
      {"prim_func @f() attrs {k = 1} {\n}\n", "prim_func @f() attrs {k = 1.0} {\n}\n",
       "function @f: attr 'k': 1 vs 1.0"},
      {"func @f(x: Tensor) -> Object attrs {input_names = [\"input.1\"]} {\n  return x\n}\n",
       "func @f(x: Tensor) -> Object attrs {input_names = [\"input.2\"]} {\n  return x\n}\n",
       "function @f: attr 'input_names': [\"input.1\"] vs [\"input.2\"]"},
      {"func @f(x: Tensor) -> Object attrs {output_names = [\"a\", \"b\"]} {\n  return x\n}\n",
       "func @f(x: Tensor) -> Object attrs {output_names = [\"b\", \"a\"]} {\n  return x\n}\n",
       "function @f: attr 'output_names': [\"a\", \"b\"] vs [\"b\", \"a\"]"},
      {"func @f(x: Tensor) -> Object attrs {output_names = [\"a\"]} {\n  return x\n}\n",
       "func @f(x: Tensor) -> Object attrs {output_names = [\"a\", \"a\"]} {\n  return x\n}\n",
       "function @f: attr 'output_names': [\"a\"] vs [\"a\", \"a\"]"},
      {"func @f(x: Tensor) -> Object {\n  y = op(x, k=[\"1\"])\n  return y\n}\n",
       "func @f(x: Tensor) -> Object {\n  y = op(x, k=[1])\n  return y\n}\n",
       "function @f: binding 0: attr 'k': [\"1\"] vs [1]"},
      {"prim_func @f() {\n}\n\nprim_func @g() {\n}\n", "prim_func @g() {\n}\n\nprim_func @f() {\n}\n",
       "function 0: @f vs @g"},
      {"prim_func @f() {\n}\n", "prim_func @f() {\n}\n\nprim_func @g() {\n}\n", "1 functions vs 2"},
      {"prim_func @f() {\n}\n", "func @f() -> Object {\n  return 1\n}\n", "function @f: prim_func vs graph function"},
      {"func @f(c: Prim[bool], x: Tensor) -> Object {\n  y = if c {\n    x\n  } else {\n    x\n  }\n  return y\n}\n",
       "func @f(c: Prim[bool], x: Tensor) -> Object {\n  y = if c {\n    x\n  } else {\n    z = op(x)\n    z\n  }\n  "
       "return y\n}\n",
       "function @f: binding 0: else: x vs {1 binding; z}"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(Diff(c.a, c.b), c.why) << c.a << "\n--- vs ---\n" << c.b;
    EXPECT_EQ(Diff(c.b, c.a).empty(), false) << "difference must be symmetric:\n" << c.b;
  }
}

// The text IR spells every empty list `[]` (and parses it as a list of ints), so
// an empty list of strings must equal it, or printing and parsing would not round trip.
TEST(StructuralEqualTest, AnEmptyListOfStringsEqualsTheEmptyList) {
  IRModule parsed = MustParse("func @f() -> Object attrs {input_names = []} {\n  return 1\n}\n");
  const auto& f = std::get<graph::Function>(parsed.functions()[0].second);
  ASSERT_TRUE(std::holds_alternative<std::vector<int64_t>>(f->attrs.at("input_names")));
  IRModule built;
  built.Add(
      "f", std::static_pointer_cast<const graph::FunctionNode>(
               graph::FunctionNode::make({}, f->body, f->ret_struct_info, {{"input_names", std::vector<std::string>{}}})
                   .node_ptr()));
  std::string why;
  EXPECT_TRUE(StructuralEqual(parsed, built, &why)) << why;
  EXPECT_TRUE(StructuralEqual(built, parsed, &why)) << why;
  const std::string printed = PrintModule(built);
  EXPECT_NE(printed.find("attrs {input_names = []}"), std::string::npos) << printed;
  EXPECT_TRUE(StructuralEqual(MustParse(printed), built, &why)) << why;
  // Only the empty lists: a non-empty list of ints is no list of strings.
  EXPECT_EQ(StringList(AttrValue(std::vector<int64_t>{})), std::vector<std::string>{});
  EXPECT_EQ(StringList(AttrValue(std::vector<int64_t>{1})), std::nullopt);
  EXPECT_EQ(StringList(AttrValue(std::string("a"))), std::nullopt);
  EXPECT_EQ(StringList(AttrValue(std::vector<std::string>{"a"})), std::vector<std::string>{"a"});
}

TEST(StructuralEqualTest, FreeVariablesOfBareExpressionsMustBeIdentical) {
  tir::Var x("x"), y("y");
  EXPECT_TRUE(StructuralEqual(x + 1, x + 1));
  std::string why;
  EXPECT_FALSE(StructuralEqual(x + y, y + x, &why));
  EXPECT_EQ(why, "x vs y");
  EXPECT_FALSE(StructuralEqual(tir::PrimExpr(x), tir::PrimExpr(tir::Var("x")), &why));
  EXPECT_EQ(why, "x vs x (different variables)");
}

TEST(StructuralEqualTest, FloatsCompareByBitsButNaNsAreEqual) {
  DataType f32 = DataType::F32();
  EXPECT_FALSE(StructuralEqual(tir::FloatImm(f32, 0.0), tir::FloatImm(f32, -0.0)));
  EXPECT_TRUE(StructuralEqual(tir::FloatImm(f32, std::nan("")), tir::FloatImm(f32, std::nan("1"))));
  EXPECT_FALSE(StructuralEqual(tir::FloatImm(f32, 1.0), tir::FloatImm(DataType::F64(), 1.0)));
}

TEST(StructuralEqualTest, StructInfoOverloadComparesShapes) {
  tir::Var n("n");
  graph::StructInfo a = graph::TensorStructInfoNode::make({n, 4}, DataType::F32());
  graph::StructInfo b = graph::TensorStructInfoNode::make({n, 5}, DataType::F32());
  std::string why;
  EXPECT_TRUE(StructuralEqual(a, graph::TensorStructInfoNode::make({n, 4}, DataType::F32())));
  EXPECT_FALSE(StructuralEqual(a, b, &why));
  EXPECT_EQ(why, "shape dim 1: 4 vs 5");
  EXPECT_FALSE(StructuralEqual(a, graph::TensorStructInfoNode::make_ndim(2, DataType::F32()), &why));
  EXPECT_EQ(why, "Tensor[(n, 4), f32] vs Tensor[ndim=2, f32]");
}

TEST(StructuralEqualTest, GraphExprOverloadBindsFunctionParameters) {
  IRModule a = MustParse(kMain), b = MustParse(kMainRenamed);
  graph::Expr fa(a.GetGraphFunction("main")), fb(b.GetGraphFunction("main"));
  EXPECT_TRUE(StructuralEqual(fa, fb));
  tir::PrimFunc pa = a.GetPrimFunc("relu"), pb = b.GetPrimFunc("relu");
  EXPECT_TRUE(StructuralEqual(pa, pb));
  std::string why;
  EXPECT_FALSE(StructuralEqual(fa, graph::Expr(MustParse(kMain).GetGraphFunction("main")->body), &why));
  EXPECT_FALSE(why.empty());
}

TEST(StructuralEqualTest, PlainBlocksCompareByContent) {
  IRModule parsed = MustParse("func @f(x: Tensor) -> Object {\n  y = op(x)\n  z = op(y)\n  return z\n}\n");
  graph::Function f = parsed.GetGraphFunction("f");
  const auto* seq = f->body.as<graph::SeqExprNode>();
  ASSERT_NE(seq, nullptr);
  ASSERT_EQ(seq->blocks.size(), 1u);
  // The same bindings split over two plain blocks with an empty one between.
  graph::BindingBlock first, empty, second;
  first.bindings.push_back(seq->blocks[0].bindings[0]);
  second.bindings.push_back(seq->blocks[0].bindings[1]);
  graph::Expr split_body = graph::SeqExprNode::make({first, empty, second}, seq->body);
  graph::Expr split = graph::FunctionNode::make(f->params, split_body, f->ret_struct_info);
  std::string why;
  EXPECT_TRUE(StructuralEqual(graph::Expr(f), split, &why)) << why;
}

}  // namespace
}  // namespace strata::ir
