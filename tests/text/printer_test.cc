// Printer: IR built in C++ (not from text) prints canonically and reparses to an
// equal module, including the cases text cannot produce directly: distinct
// variables sharing a name, names that are keywords or not identifiers.
#include "compiler/ir/printer.h"

#include <cmath>
#include <limits>
#include <string>

#include <gtest/gtest.h>

#include "compiler/ir/parser.h"
#include "compiler/ir/structural_equal.h"
#include "tests/text/text_test_util.h"

namespace strata::ir {
namespace {

using testing::MustParse;
using tir::PrimExpr;
using tir::PrimExprKind;

const DataType kF32 = DataType::F32();
const DataType kI64 = DataType::I64();

void ExpectReparsesEqual(const IRModule& module) {
  std::string printed = PrintModule(module);
  StatusOr<IRModule> reparsed = ParseModule(printed, "printed.sir");
  ASSERT_TRUE(reparsed.ok()) << reparsed.status().message() << "\n" << printed;
  std::string why;
  EXPECT_TRUE(StructuralEqual(module, *reparsed, &why)) << why << "\n" << printed;
  EXPECT_EQ(PrintModule(*reparsed), printed);
}

TEST(PrinterTest, DistinctVariablesSharingANameAreNumbered) {
  tir::Var n1("n"), n2("n"), i("i");
  tir::Buffer a = tir::MakeBuffer("A", kF32, {n1});
  tir::Buffer b = tir::MakeBuffer("A", kF32, {n2});
  tir::Stmt store = tir::BufferStoreNode::make(a, {i}, tir::BufferLoadNode::make(b, {i}));
  tir::Stmt body = tir::ForNode::make(i, 0, n1, tir::ForKind::kSerial, store);
  IRModule module;
  module.Add("f", tir::MakePrimFunc({{a, {}}, {b, {}}}, body));
  EXPECT_EQ(PrintModule(module),
            "prim_func @f(A: Buffer[(n,), f32], A_1: Buffer[(n_1,), f32]) {\n"
            "  for i in range(0, n) {\n"
            "    A[i] = A_1[i]\n"
            "  }\n"
            "}\n");
  ExpectReparsesEqual(module);
}

TEST(PrinterTest, SiblingScopesReuseNamesAndNestedScopesDoNot) {
  tir::Var n("n"), i1("i"), i2("i"), i3("i");
  tir::Buffer a = tir::MakeBuffer("A", kI64, {n});
  tir::Stmt inner = tir::BufferStoreNode::make(a, {i3}, i1 + i3);
  tir::Stmt nested =
      tir::ForNode::make(i1, 0, n, tir::ForKind::kSerial, tir::ForNode::make(i3, 0, n, tir::ForKind::kSerial, inner));
  tir::Stmt sibling = tir::ForNode::make(i2, 0, n, tir::ForKind::kParallel, tir::BufferStoreNode::make(a, {i2}, 0));
  IRModule module;
  module.Add("f", tir::MakePrimFunc({{a, {}}}, tir::SeqStmtNode::make({nested, sibling})));
  EXPECT_EQ(PrintModule(module),
            "prim_func @f(A: Buffer[(n,), i64]) {\n"
            "  for i in range(0, n) {\n"
            "    for i_1 in range(0, n) {\n"
            "      A[i_1] = i + i_1\n"
            "    }\n"
            "  }\n"
            "  for i in parallel(0, n) {\n"
            "    A[i] = 0\n"
            "  }\n"
            "}\n");
  ExpectReparsesEqual(module);
}

TEST(PrinterTest, KeywordsAndNonIdentifiersBecomePrintableNames) {
  graph::StructInfo tensor = graph::TensorStructInfoNode::make_ndim(-1, DataType::Void());
  graph::Var x1("x", tensor), x2("x", tensor);
  graph::Var v_if("if", nullptr), v_empty("", nullptr), v_dot("a.b", nullptr), v_digit("1st", nullptr);
  graph::Expr add = graph::OpNode::Get("add");
  std::vector<graph::Binding> bindings = {
      {graph::BindingKind::kVarBinding, v_if, graph::CallNode::make(add, {x1, x2}), nullptr, nullptr},
      {graph::BindingKind::kVarBinding, v_empty, graph::CallNode::make(add, {v_if, x2}), nullptr, nullptr},
      {graph::BindingKind::kVarBinding, v_dot, graph::TupleNode::make({v_empty}), nullptr, nullptr},
      {graph::BindingKind::kVarBinding, v_digit, graph::TupleGetItemNode::make(v_dot, 0), nullptr, nullptr},
  };
  graph::Expr body = graph::SeqExprNode::make({graph::BindingBlock{false, bindings}}, v_digit);
  graph::Expr func = graph::FunctionNode::make({x1, x2}, body, graph::ObjectStructInfoNode::make());
  IRModule module;
  module.Add("f", std::static_pointer_cast<const graph::FunctionNode>(func.node_ptr()));
  EXPECT_EQ(PrintModule(module),
            "func @f(x: Tensor, x_1: Tensor) -> Object {\n"
            "  if_ = add(x, x_1)\n"
            "  v = add(if_, x_1)\n"
            "  a_b = (v,)\n"
            "  v1st = a_b[0]\n"
            "  return v1st\n"
            "}\n");
  ExpectReparsesEqual(module);
}

TEST(PrinterTest, ParenthesesFollowPrecedenceAndAssociativity) {
  tir::Var a("a"), b("b"), c("c");
  tir::Var p("p", DataType::Bool()), q("q", DataType::Bool()), r("r", DataType::Bool());
  auto bin = [](PrimExprKind k, PrimExpr x, PrimExpr y) { return tir::BinaryOpNode::make(k, x, y); };
  EXPECT_EQ(PrintPrimExpr((a + b) * c), "(a + b) * c");
  EXPECT_EQ(PrintPrimExpr(a + b * c), "a + b * c");
  EXPECT_EQ(PrintPrimExpr(a - (b - c)), "a - (b - c)");
  EXPECT_EQ(PrintPrimExpr((a - b) - c), "a - b - c");
  EXPECT_EQ(PrintPrimExpr(tir::FloorDiv(a, b * c)), "a // (b * c)");
  EXPECT_EQ(PrintPrimExpr(tir::FloorMod(a * b, c)), "a * b % c");
  EXPECT_EQ(PrintPrimExpr(a * tir::IntImm(kI64, -2)), "a * -2");
  EXPECT_EQ(PrintPrimExpr(-a), "-a");
  EXPECT_EQ(PrintPrimExpr(-(a + b)), "-(a + b)");
  EXPECT_EQ(PrintPrimExpr(bin(PrimExprKind::kSub, 0, 5)), "-(5)");
  EXPECT_EQ(PrintPrimExpr(-a * b), "-a * b");
  EXPECT_EQ(PrintPrimExpr(tir::NotNode::make(bin(PrimExprKind::kLT, a, b))), "!(a < b)");
  EXPECT_EQ(PrintPrimExpr(bin(PrimExprKind::kOr, bin(PrimExprKind::kAnd, p, q), r)), "p && q || r");
  EXPECT_EQ(PrintPrimExpr(bin(PrimExprKind::kAnd, bin(PrimExprKind::kOr, p, q), r)), "(p || q) && r");
  EXPECT_EQ(PrintPrimExpr(bin(PrimExprKind::kEQ, bin(PrimExprKind::kLT, a, b), p)), "a < b == p");
  EXPECT_EQ(PrintPrimExpr(bin(PrimExprKind::kLT, a + 1, b * 2)), "a + 1 < b * 2");
  EXPECT_EQ(PrintPrimExpr(tir::SelectNode::make(p, tir::Min(a, b), tir::Max(a, c))), "select(p, min(a, b), max(a, c))");
  EXPECT_EQ(PrintPrimExpr(tir::CastNode::make(kF32, a + b)), "cast<f32>(a + b)");
}

TEST(PrinterTest, LiteralsCarryASuffixUnlessDefault) {
  EXPECT_EQ(PrintPrimExpr(tir::IntImm(kI64, 7)), "7");
  EXPECT_EQ(PrintPrimExpr(tir::IntImm(DataType::I32(), -7)), "-7i32");
  EXPECT_EQ(PrintPrimExpr(tir::IntImm(DataType::UInt(64), -1)), "18446744073709551615u64");
  EXPECT_EQ(PrintPrimExpr(tir::IntImm(DataType::Bool(), 1)), "true");
  EXPECT_EQ(PrintPrimExpr(tir::FloatImm(kF32, 2.0)), "2.0");
  EXPECT_EQ(PrintPrimExpr(tir::FloatImm(kF32, 1e20)), "1e+20");
  EXPECT_EQ(PrintPrimExpr(tir::FloatImm(DataType::F64(), 0.1)), "0.1f64");
  EXPECT_EQ(PrintPrimExpr(tir::FloatImm(DataType::Float(16), -0.0)), "-0.0f16");
  EXPECT_EQ(PrintPrimExpr(tir::FloatImm(kF32, -std::numeric_limits<double>::infinity())), "-inf");
}

TEST(PrinterTest, FloatsReparseBitExactly) {
  const double values[] = {0.1 + 0.2, 1.0 / 3.0,     5e-324, 1.7976931348623157e308,
                           -0.0,      123456789.125, 1e-7,   std::numeric_limits<double>::infinity(),
                           3.0,       16777217.0};
  std::vector<tir::Stmt> stmts;
  for (double v : values) {
    stmts.push_back(tir::EvaluateNode::make(tir::FloatImm(DataType::F64(), v)));
    stmts.push_back(tir::EvaluateNode::make(tir::FloatImm(kF32, v)));
  }
  IRModule module;
  module.Add("floats", tir::MakePrimFunc({}, tir::SeqStmtNode::make(stmts)));
  std::string printed = PrintModule(module);
  EXPECT_NE(printed.find("evaluate 0.30000000000000004f64\n"), std::string::npos) << printed;
  EXPECT_NE(printed.find("evaluate 5e-324f64\n"), std::string::npos) << printed;
  ExpectReparsesEqual(module);
}

TEST(PrinterTest, StructInfoSpellings) {
  tir::Var m("m");
  EXPECT_EQ(PrintStructInfo(graph::ObjectStructInfoNode::make()), "Object");
  EXPECT_EQ(PrintStructInfo(graph::PrimStructInfoNode::make(kI64)), "Prim[i64]");
  EXPECT_EQ(PrintStructInfo(graph::ShapeStructInfoNode::make_ndim(-1)), "Shape");
  EXPECT_EQ(PrintStructInfo(graph::ShapeStructInfoNode::make_ndim(2)), "Shape[ndim=2]");
  EXPECT_EQ(PrintStructInfo(graph::ShapeStructInfoNode::make({m})), "Shape[(m,)]");
  EXPECT_EQ(PrintStructInfo(graph::TensorStructInfoNode::make_ndim(-1, DataType::Void())), "Tensor");
  EXPECT_EQ(PrintStructInfo(graph::TensorStructInfoNode::make_ndim(-1, kF32)), "Tensor[f32]");
  EXPECT_EQ(PrintStructInfo(graph::TensorStructInfoNode::make_ndim(3, DataType::Void())), "Tensor[ndim=3]");
  EXPECT_EQ(PrintStructInfo(graph::TensorStructInfoNode::make_ndim(3, DataType::Float(16))), "Tensor[ndim=3, f16]");
  EXPECT_EQ(PrintStructInfo(graph::TensorStructInfoNode::make({}, kF32)), "Tensor[(), f32]");
  EXPECT_EQ(PrintStructInfo(graph::TensorStructInfoNode::make({m, m * 2}, DataType::Void())), "Tensor[(m, m * 2)]");
  EXPECT_EQ(PrintStructInfo(graph::TupleStructInfoNode::make({})), "Tuple[]");
  EXPECT_EQ(PrintStructInfo(graph::TupleStructInfoNode::make(
                {graph::ObjectStructInfoNode::make(), graph::PrimStructInfoNode::make(DataType::Bool())})),
            "Tuple[Object, Prim[bool]]");
}

TEST(PrinterTest, SpellingsWithoutDtypeReparse) {
  std::string text =
      "func @f(a: Tensor[ndim=3], b: Tensor[(m, 2)], c: Shape[ndim=0], d: Tensor[(), f32]) -> Tuple[] {\n"
      "  return ()\n"
      "}\n";
  EXPECT_EQ(PrintModule(MustParse(text)), text);
}

TEST(PrinterTest, QuotedGlobalNamesAndAttrKeys) {
  std::string text =
      "attrs {\"system lib\" = true, version = 3}\n"
      "\n"
      "prim_func @\"my kernel\"() attrs {\"a b\" = [], dtype = f16} {\n"
      "}\n"
      "\n"
      "func @main(x: Tensor) -> Tensor {\n"
      "  y = call_tir(@\"my kernel\", (), Tensor)\n"
      "  return y\n"
      "}\n";
  IRModule module = MustParse(text);
  EXPECT_EQ(PrintModule(module), text);
  ASSERT_NE(module.GetPrimFunc("my kernel"), nullptr);
  EXPECT_EQ(std::get<bool>(module.attrs().at("system lib")), true);
  ExpectReparsesEqual(module);
}

TEST(PrinterTest, UnsupportedConstructsDoNotReparseAsSomethingElse) {
  graph::StructInfo tensor = graph::TensorStructInfoNode::make_ndim(-1, DataType::Void());
  graph::Var f("f", nullptr), x("x", tensor), y("y", nullptr);
  graph::Binding call{graph::BindingKind::kVarBinding, y, graph::CallNode::make(f, {x}), nullptr, nullptr};
  graph::Expr body = graph::SeqExprNode::make({graph::BindingBlock{false, {call}}}, y);
  graph::Expr func = graph::FunctionNode::make({f, x}, body, nullptr);
  IRModule module;
  module.Add("g", std::static_pointer_cast<const graph::FunctionNode>(func.node_ptr()));
  std::string printed = PrintModule(module);
  EXPECT_NE(printed.find("y = <call of f>(x)"), std::string::npos) << printed;
  EXPECT_FALSE(ParseModule(printed, "printed.sir").ok());
}

TEST(PrinterTest, PrintPrimFuncMatchesModulePrinting) {
  IRModule module = MustParse(testing::ReadSourceFile("examples/matmul_relu.sir"));
  std::string relu = PrintPrimFunc("tir_relu", module.GetPrimFunc("tir_relu"));
  EXPECT_EQ(relu.rfind("prim_func @tir_relu(A: Buffer[(m, n), f32], B: Buffer[(m, n), f32]) {\n", 0), 0u) << relu;
  EXPECT_NE(PrintModule(module).find(relu), std::string::npos);
}

TEST(PrinterTest, GraphExprOnItsOwn) {
  IRModule module = MustParse(testing::ReadSourceFile("examples/matmul_relu.sir"));
  const auto* seq = module.GetGraphFunction("main")->body.as<graph::SeqExprNode>();
  ASSERT_NE(seq, nullptr);
  ASSERT_EQ(seq->blocks.size(), 2u);
  EXPECT_EQ(PrintGraphExpr(seq->blocks[1].bindings[0].value), "call_tir(@tir_matmul, (x, w), Tensor[(m, k), f32])");
  EXPECT_EQ(PrintGraphExpr(seq->blocks[0].bindings[0].value), "call_packed(\"vm.builtin.shape_of\", x)");
}

}  // namespace
}  // namespace strata::ir
