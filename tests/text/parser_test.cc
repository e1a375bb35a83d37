// Parser: the IR built for each construct (the round-trip tests show that text
// and IR agree with each other; these show that they agree with the spec).
#include "compiler/ir/parser.h"

#include <cstring>
#include <limits>
#include <string>

#include <gtest/gtest.h>

#include "compiler/ir/printer.h"
#include "compiler/ir/structural_equal.h"
#include "tests/text/text_test_util.h"

namespace strata::ir {
namespace {

using testing::MustParse;
using tir::PrimExpr;

// The statements of a prim_func body, flattened one level.
std::vector<tir::Stmt> BodyStmts(const tir::PrimFunc& f) {
  if (const auto* seq = f->body.as<tir::SeqStmtNode>()) return seq->stmts;
  return {f->body};
}

const graph::SeqExprNode* Body(const IRModule& m, const std::string& name) {
  graph::Function f = m.GetGraphFunction(name);
  EXPECT_NE(f, nullptr);
  return f ? f->body.as<graph::SeqExprNode>() : nullptr;
}

TEST(ParserTest, ExampleBuildsTheDocumentedIR) {
  IRModule m = MustParse(testing::ReadSourceFile("examples/matmul_relu.sir"));
  ASSERT_EQ(m.functions().size(), 3u);
  EXPECT_EQ(m.functions()[0].first, "tir_matmul");
  EXPECT_EQ(m.functions()[2].first, "main");

  // One symbolic variable per name per prim_func: A's n is B's n.
  tir::PrimFunc matmul = m.GetPrimFunc("tir_matmul");
  ASSERT_EQ(matmul->params.size(), 3u);
  EXPECT_TRUE(matmul->params[0].buffer->shape[1].same_as(matmul->params[1].buffer->shape[0]));
  EXPECT_TRUE(matmul->params[0].buffer->shape[0].same_as(matmul->params[2].buffer->shape[0]));
  const auto* loop = matmul->body.as<tir::ForNode>();
  ASSERT_NE(loop, nullptr);
  EXPECT_EQ(loop->for_kind, tir::ForKind::kParallel);
  EXPECT_EQ(loop->loop_var->dtype, DataType::I64());

  const graph::SeqExprNode* main = Body(m, "main");
  ASSERT_NE(main, nullptr);
  ASSERT_EQ(main->blocks.size(), 2u);
  EXPECT_FALSE(main->blocks[0].is_dataflow);
  EXPECT_TRUE(main->blocks[1].is_dataflow);
  // sx: Shape = call_packed(...): the annotation is also the call's result struct info.
  const graph::Binding& sx = main->blocks[0].bindings[0];
  EXPECT_NE(sx.var->struct_info.as<graph::ShapeStructInfoNode>(), nullptr);
  const auto* packed = sx.value.as<graph::CallNode>();
  ASSERT_NE(packed, nullptr);
  EXPECT_TRUE(packed->op.same_as(graph::OpNode::Get("call_packed")));
  ASSERT_EQ(packed->args.size(), 2u);
  EXPECT_EQ(packed->args[0].as<graph::ExternFuncNode>()->name, "vm.builtin.shape_of");
  ASSERT_EQ(packed->sinfo_args.size(), 1u);
  EXPECT_NE(packed->sinfo_args[0].as<graph::ShapeStructInfoNode>(), nullptr);
  // match_shape on a Shape is match_cast with Shape[(m, n)], and m is the m of the return type.
  const graph::Binding& m1 = main->blocks[0].bindings[1];
  EXPECT_EQ(m1.kind, graph::BindingKind::kMatchCast);
  const auto* pattern = m1.pattern.as<graph::ShapeStructInfoNode>();
  ASSERT_NE(pattern, nullptr);
  const auto* ret = m.GetGraphFunction("main")->ret_struct_info.as<graph::TensorStructInfoNode>();
  ASSERT_NE(ret, nullptr);
  EXPECT_TRUE((*pattern->values)[0].same_as((*ret->shape)[0]));
  // Dataflow: lv0 stays inside the block, lv1 is its output.
  const auto& df = main->blocks[1].bindings;
  EXPECT_TRUE(df[0].var->is_dataflow);
  EXPECT_FALSE(df[1].var->is_dataflow);
  EXPECT_TRUE(main->body.same_as(df[1].var));
  const auto* call_tir = df[0].value.as<graph::CallNode>();
  ASSERT_NE(call_tir, nullptr);
  EXPECT_TRUE(call_tir->op.same_as(graph::OpNode::Get("call_tir")));
  EXPECT_EQ(call_tir->args[0].as<graph::GlobalVarNode>()->name, "tir_matmul");
  EXPECT_NE(call_tir->args[1].as<graph::TupleNode>(), nullptr);
  ASSERT_EQ(call_tir->sinfo_args.size(), 1u);
}

TEST(ParserTest, UnsuffixedLiteralsAdoptTheNeighbouringDtype) {
  IRModule m = MustParse(
      "prim_func @f(D: Buffer[(n,), f64], k: i32) {\n"
      "  D[0] = 0\n"
      "  let a: i32 = k + 1\n"
      "  let b: u8 = 7\n"
      "  let c = 2\n"
      "  let d = 2.5\n"
      "  D[1] = max(D[0], 1.5)\n"
      "}\n");
  std::vector<tir::Stmt> stmts = BodyStmts(m.GetPrimFunc("f"));
  ASSERT_EQ(stmts.size(), 2u);
  const auto* store = stmts[0].as<tir::BufferStoreNode>();
  ASSERT_NE(store, nullptr);
  ASSERT_NE(store->value.as<tir::FloatImmNode>(), nullptr);
  EXPECT_EQ(store->value.dtype(), DataType::F64());
  const auto* a = stmts[1].as<tir::LetStmtNode>();
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->value.as<tir::BinaryOpNode>()->b.dtype(), DataType::I32());
  const auto* b = a->body.as<tir::LetStmtNode>();
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->var->dtype, DataType::UInt(8));
  const auto* c = b->body.as<tir::LetStmtNode>();
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->var->dtype, DataType::I64());
  const auto* d = c->body.as<tir::LetStmtNode>();
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->var->dtype, DataType::F32());
  const auto* max_store = d->body.as<tir::BufferStoreNode>();
  ASSERT_NE(max_store, nullptr);
  EXPECT_EQ(max_store->value->kind, tir::PrimExprKind::kMax);
  EXPECT_EQ(max_store->value.as<tir::BinaryOpNode>()->b.dtype(), DataType::F64());
}

TEST(ParserTest, NegativeLiteralsAreConstantsAndMinusOfAnExpressionIsZeroMinus) {
  IRModule m = MustParse("prim_func @f(k: i64) {\n  evaluate -3\n  evaluate -k\n  evaluate -9223372036854775808\n}\n");
  std::vector<tir::Stmt> stmts = BodyStmts(m.GetPrimFunc("f"));
  ASSERT_EQ(stmts.size(), 3u);
  EXPECT_EQ(*tir::AsConstInt(stmts[0].as<tir::EvaluateNode>()->value), -3);
  const PrimExpr& neg = stmts[1].as<tir::EvaluateNode>()->value;
  ASSERT_EQ(neg->kind, tir::PrimExprKind::kSub);
  EXPECT_EQ(*tir::AsConstInt(neg.as<tir::BinaryOpNode>()->a), 0);
  EXPECT_EQ(*tir::AsConstInt(stmts[2].as<tir::EvaluateNode>()->value), std::numeric_limits<int64_t>::min());
}

TEST(ParserTest, ScalarParameterNamedInAnEarlierShapeIsThatVariable) {
  IRModule m = MustParse("prim_func @f(A: Buffer[(n,), f32], n: i32) {\n}\n");
  tir::PrimFunc f = m.GetPrimFunc("f");
  EXPECT_TRUE(f->params[0].buffer->shape[0].same_as(f->params[1].scalar));
  EXPECT_EQ(f->params[1].scalar.dtype(), DataType::I32());
}

TEST(ParserTest, MatchShapeOfATensorUsesItsDtype) {
  IRModule a = MustParse("func @f(x: Tensor[ndim=2, f16]) -> Object {\n  y = match_shape(x, (a, b))\n  return y\n}\n");
  IRModule b = MustParse(
      "func @f(x: Tensor[ndim=2, f16]) -> Object {\n  y = match_cast(x, Tensor[(a, b), f16])\n  return y\n}\n");
  std::string why;
  EXPECT_TRUE(StructuralEqual(a, b, &why)) << why;
}

TEST(ParserTest, CallPackedWithoutAnnotationReturnsObject) {
  IRModule m = MustParse("func @f(x: Tensor) -> Object {\n  y = call_packed(\"lib.f\", x, 1)\n  return y\n}\n");
  const graph::Binding& y = Body(m, "f")->blocks[0].bindings[0];
  EXPECT_FALSE(y.var->struct_info.defined());
  const auto* call = y.value.as<graph::CallNode>();
  ASSERT_NE(call, nullptr);
  ASSERT_EQ(call->sinfo_args.size(), 1u);
  EXPECT_NE(call->sinfo_args[0].as<graph::ObjectStructInfoNode>(), nullptr);
  ASSERT_EQ(call->args.size(), 3u);
  EXPECT_NE(call->args[2].as<graph::PrimValueNode>(), nullptr);
}

TEST(ParserTest, CallTIRWithShapeVariablesAndGenericOpAttrs) {
  IRModule m = MustParse(testing::ReadSourceFile("tests/text/cases/graph_control.sir"));
  const graph::SeqExprNode* main = Body(m, "main");
  ASSERT_NE(main, nullptr);
  const auto* call = main->blocks[1].bindings[0].value.as<graph::CallNode>();
  ASSERT_NE(call, nullptr);
  ASSERT_EQ(call->args.size(), 3u);
  EXPECT_NE(call->args[2].as<graph::ShapeExprNode>(), nullptr);
  const auto* dps = main->blocks[1].bindings[1].value.as<graph::CallNode>();
  ASSERT_NE(dps, nullptr);
  EXPECT_TRUE(dps->op.same_as(graph::OpNode::Get("call_dps_packed")));
  EXPECT_EQ(dps->args[0].as<graph::ExternFuncNode>()->name, "lib.scale");
  const auto* graph_call = main->blocks[1].bindings[2].value.as<graph::CallNode>();
  ASSERT_NE(graph_call, nullptr);
  EXPECT_EQ(graph_call->op.as<graph::GlobalVarNode>()->name, "helper");
  const auto* if_node = main->blocks[2].bindings[0].value.as<graph::IfNode>();
  ASSERT_NE(if_node, nullptr);
  EXPECT_NE(if_node->then_branch.as<graph::SeqExprNode>(), nullptr);

  IRModule v = MustParse(testing::ReadSourceFile("tests/text/cases/graph_values.sir"));
  const graph::SeqExprNode* values = Body(v, "values");
  ASSERT_NE(values, nullptr);
  const graph::CallNode* op = nullptr;
  const graph::ConstantNode* constant = nullptr;
  for (const graph::Binding& b : values->blocks[0].bindings) {
    if (b.var->name == "op") op = b.value.as<graph::CallNode>();
    if (b.var->name == "u") constant = b.value.as<graph::ConstantNode>();
  }
  ASSERT_NE(op, nullptr);
  EXPECT_EQ(op->op.as<graph::OpNode>()->name, "my_op");
  EXPECT_EQ(std::get<int64_t>(op->attrs.at("axis")), 1);
  EXPECT_EQ(std::get<std::vector<int64_t>>(op->attrs.at("axes")), (std::vector<int64_t>{0, -1}));
  EXPECT_EQ(std::get<double>(op->attrs.at("eps")), 1e-05);
  EXPECT_EQ(std::get<bool>(op->attrs.at("keepdims")), true);
  EXPECT_EQ(std::get<std::string>(op->attrs.at("mode")), "same");
  EXPECT_EQ(std::get<DataType>(op->attrs.at("out_dtype")), DataType::Float(16));
  EXPECT_EQ(std::get<std::vector<std::string>>(op->attrs.at("names")),
            (std::vector<std::string>{"input.1", "tab\t \"q\" \\", ""}));
  EXPECT_EQ(std::get<std::vector<int64_t>>(op->attrs.at("empty")), std::vector<int64_t>{});  // `[]` stays ints
  ASSERT_NE(constant, nullptr);
  EXPECT_EQ(constant->data->shape, (std::vector<int64_t>{3}));
  ASSERT_EQ(constant->data->bytes.size(), 12u);
  int32_t last;
  std::memcpy(&last, constant->data->bytes.data() + 8, 4);
  EXPECT_EQ(last, 2147483647);
}

TEST(ParserTest, FunctionOrderDoesNotMatterForReferences) {
  IRModule m = MustParse(
      "func @main(x: Tensor) -> Tensor {\n  y = @later(x)\n  return y\n}\n\n"
      "func @later(x: Tensor) -> Tensor {\n  return x\n}\n");
  EXPECT_EQ(m.functions().size(), 2u);
}

TEST(ParserTest, ElseIfIsANestedIf) {
  IRModule a =
      MustParse("prim_func @f(k: i64) {\n  if k < 0 {\n    evaluate 0\n  } else if k < 5 {\n    evaluate 1\n  }\n}\n");
  IRModule b = MustParse(
      "prim_func @f(k: i64) {\n  if k < 0 {\n    evaluate 0\n  } else {\n    if k < 5 {\n      evaluate 1\n    }\n  "
      "}\n}\n");
  std::string why;
  EXPECT_TRUE(StructuralEqual(a, b, &why)) << why;
}

TEST(ParserTest, CommentsAndShadowing) {
  IRModule m = MustParse(
      "# leading comment\n"
      "func @f(x: Tensor) -> Tensor {  # trailing comment\n"
      "  x = op(x)  # rebinding a name shadows the parameter\n"
      "  return x\n"
      "}\n");
  const graph::SeqExprNode* body = Body(m, "f");
  ASSERT_NE(body, nullptr);
  const graph::Var& rebound = body->blocks[0].bindings[0].var;
  EXPECT_TRUE(body->body.same_as(rebound));
  EXPECT_FALSE(body->body.same_as(m.GetGraphFunction("f")->params[0]));
  EXPECT_EQ(PrintModule(m), "func @f(x: Tensor) -> Tensor {\n  x_1 = op(x)\n  return x_1\n}\n");
}

}  // namespace
}  // namespace strata::ir
