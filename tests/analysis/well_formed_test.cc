// WellFormed: each invariant is violated once, and the report names the problem.
// Modules the parser would reject (it scopes variables itself) are built in C++.
#include "compiler/analysis/well_formed.h"

#include <gtest/gtest.h>

#include "compiler/transform/normalize.h"
#include "tests/transform/test_util.h"

namespace strata::analysis {
namespace {

using namespace graph;  // NOLINT: building graph IR by hand
using transform::testing::Parse;

StructInfo Vec(PrimExpr n) { return TensorStructInfoNode::make({n}, DataType::F32()); }

Binding Bind(Var var, Expr value) {
  Binding b;
  b.var = std::move(var);
  b.value = std::move(value);
  return b;
}

// @main(params) { blocks; return body } with Object return struct info.
ir::IRModule ModuleWith(std::vector<Var> params, std::vector<BindingBlock> blocks, Expr body) {
  Expr seq = Expr(std::make_shared<const SeqExprNode>(std::move(blocks), body, body->struct_info));
  ir::IRModule module;
  module.Add("main", Function(std::make_shared<const FunctionNode>(std::move(params), seq, ObjectStructInfoNode::make(),
                                                                   ir::Attrs{})));
  return module;
}

std::string WellFormedError(const ir::IRModule& module, bool require_struct_info = true) {
  Status status = CheckWellFormed(module, {require_struct_info});
  EXPECT_FALSE(status.ok()) << "accepted:\n" << ir::PrintModule(module);
  return status.message();
}

TEST(WellFormedTest, NormalizedExampleIsWellFormed) {
  ir::IRModule module = Parse(R"(
prim_func @relu(A: Buffer[(m,), f32], B: Buffer[(m,), f32]) {
  for i in range(0, m) {
    B[i] = max(A[i], 0.0)
  }
}
func @main(x: Tensor[ndim=1, f32]) -> Tensor[(n,), f32] {
  s = shape_of(x)
  _1 = match_cast(s, Shape[(n,)])
  dataflow {
    y = call_tir(@relu, (x,), Tensor[(n,), f32])
    output y
  }
  return y
}
)");
  StatusOr<ir::IRModule> normalized = transform::Normalize(module);
  ASSERT_TRUE(normalized.ok()) << normalized.status().message();
  EXPECT_TRUE(CheckWellFormed(*normalized).ok()) << CheckWellFormed(*normalized).message();
}

TEST(WellFormedTest, UseBeforeDefinitionIsReported) {
  Var x("x", Vec(4));
  Var a("a", Vec(4));
  Var b("b", Vec(4));
  BindingBlock block;
  block.bindings = {Bind(a, b), Bind(b, x)};
  EXPECT_EQ(WellFormedError(ModuleWith({x}, {block}, a)),
            "function 'main', binding 'a': variable 'b' is used before its definition");
}

TEST(WellFormedTest, DataflowVariableEscapingItsBlockIsReported) {
  Var x("x", Vec(4));
  Var d("d", Vec(4), /*is_dataflow=*/true);
  Var e("e", Vec(4));
  BindingBlock dataflow;
  dataflow.is_dataflow = true;
  dataflow.bindings = {Bind(d, x)};
  BindingBlock after;
  after.bindings = {Bind(e, d)};
  EXPECT_EQ(WellFormedError(ModuleWith({x}, {dataflow, after}, e)),
            "function 'main', binding 'e': dataflow variable 'd' is used outside its dataflow block (list it "
            "after `output`)");
}

TEST(WellFormedTest, DataflowVariableOutsideADataflowBlockIsReported) {
  Var x("x", Vec(4));
  Var d("d", Vec(4), /*is_dataflow=*/true);
  BindingBlock block;
  block.bindings = {Bind(d, x)};
  EXPECT_EQ(WellFormedError(ModuleWith({x}, {block}, x)),
            "function 'main', binding 'd': dataflow variable 'd' is bound outside a dataflow block");
}

TEST(WellFormedTest, VariableDefinedTwiceIsReported) {
  Var x("x", Vec(4));
  Var a("a", Vec(4));
  BindingBlock block;
  block.bindings = {Bind(a, x), Bind(a, x)};
  EXPECT_EQ(WellFormedError(ModuleWith({x}, {block}, a)),
            "function 'main', binding 'a': variable 'a' is defined twice");
}

TEST(WellFormedTest, UnboundSymbolicVariableInAShapeValueIsReported) {
  tir::Var n("n");
  tir::Var p("p");
  Var x("x", Vec(n));
  Var s("s", ShapeStructInfoNode::make({p * 2}));
  BindingBlock block;
  block.bindings = {Bind(s, ShapeExprNode::make({p * 2}))};
  EXPECT_EQ(WellFormedError(ModuleWith({x}, {block}, s)),
            "function 'main', binding 's': symbolic variable 'p' in shape value p * 2 is used before it is bound "
            "(by a parameter's shape or a match_cast)");
}

TEST(WellFormedTest, SymbolicAttributeVariablesMustBeBound) {
  // q in strided_slice's end is bound by nothing: the slice could not be sized.
  Var x("x", Vec(8)), y("y", nullptr);
  tir::Var q("q");
  Expr slice = CallNode::make(OpNode::Get("strided_slice"), {x},
                              ir::Attrs{{"begin", ir::MakeIntList({PrimExpr(0)})}, {"end", ir::MakeIntList({q})}});
  EXPECT_EQ(WellFormedError(ModuleWith({x}, {BindingBlock{false, {Bind(y, slice)}}}, y), /*require_struct_info=*/false),
            "function 'main', binding 'y': symbolic variable 'q' in attribute 'end' q is used before it is bound (by a "
            "parameter's shape or a match_cast)");
}

TEST(WellFormedTest, SymbolicVariableOnlyInsideAParameterExpressionIsReported) {
  ir::IRModule module = Parse(R"(
func @main(x: Tensor[(n * 2,), f32]) -> Tensor {
  return x
}
)");
  EXPECT_EQ(WellFormedError(module, /*require_struct_info=*/false),
            "function 'main': parameter 'x' has struct info Tensor[(n * 2,), f32], where symbolic variable 'n' "
            "appears only inside an expression and no parameter binds it");
}

TEST(WellFormedTest, CallTIROutputShapeNeedsBoundVariables) {
  ir::IRModule module = Parse(R"(
prim_func @relu(A: Buffer[(m,), f32], B: Buffer[(m,), f32]) {
  for i in range(0, m) {
    B[i] = max(A[i], 0.0)
  }
}
func @main(x: Tensor[ndim=1, f32]) -> Tensor {
  y = call_tir(@relu, (x,), Tensor[(q,), f32])
  return y
}
)");
  EXPECT_EQ(WellFormedError(module, /*require_struct_info=*/false),
            "function 'main', binding 'y': symbolic variable 'q' in the output of call_tir Tensor[(q,), f32] is "
            "used before it is bound (by a parameter's shape or a match_cast)");
}

TEST(WellFormedTest, TensorProgramUsedAsAValueIsReported) {
  ir::IRModule module = Parse(R"(
prim_func @relu(A: Buffer[(m,), f32], B: Buffer[(m,), f32]) {
  for i in range(0, m) {
    B[i] = max(A[i], 0.0)
  }
}
func @main(x: Tensor[(4,), f32]) -> Object {
  f = @relu
  return f
}
)");
  EXPECT_EQ(WellFormedError(module, /*require_struct_info=*/false),
            "function 'main', binding 'f': tensor program @relu is used as a value; call it through call_tir");
}

TEST(WellFormedTest, CallTIROfAGraphFunctionIsReported) {
  Var x("x", Vec(4));
  Var y("y", Vec(4));
  BindingBlock block;
  block.bindings = {Bind(y, CallNode::make(OpNode::Get(ops::kCallTIR),
                                           {GlobalVarNode::make("main"), TupleNode::make({x})}, {}, {Vec(4)}))};
  EXPECT_EQ(WellFormedError(ModuleWith({x}, {block}, y), /*require_struct_info=*/false),
            "function 'main', binding 'y': call_tir of @main, which is a graph function; call it directly");
}

TEST(WellFormedTest, UnknownFunctionIsReported) {
  Var x("x", Vec(4));
  Var y("y", Vec(4));
  BindingBlock block;
  block.bindings = {Bind(y, CallNode::make(GlobalVarNode::make("missing"), {x}))};
  EXPECT_EQ(WellFormedError(ModuleWith({x}, {block}, y), /*require_struct_info=*/false),
            "function 'main', binding 'y': call to @missing, which is not a function of the module");
}

TEST(WellFormedTest, MissingStructInfoIsReportedOnlyWhenRequired) {
  ir::IRModule module = Parse(R"(
func @main(x: Tensor[(4,), f32]) -> Tensor {
  y = call_packed("lib.f", x)
  return y
}
)");
  EXPECT_TRUE(CheckWellFormed(module, {/*require_struct_info=*/false}).ok());
  EXPECT_EQ(WellFormedError(module), "function 'main', binding 'y': a call has no struct info (run Normalize first)");
}

TEST(WellFormedTest, VariablesOfABranchAreNotVisibleAfterIt) {
  Var c("c", PrimStructInfoNode::make(DataType::Bool()));
  Var x("x", Vec(4));
  Var inner("inner", Vec(4));
  Var r("r", Vec(4));
  Var leak("leak", Vec(4));
  BindingBlock then_block;
  then_block.bindings = {Bind(inner, x)};
  Expr then_branch(std::make_shared<const SeqExprNode>(std::vector<BindingBlock>{then_block}, inner, Vec(4)));
  Expr else_branch(std::make_shared<const SeqExprNode>(std::vector<BindingBlock>{}, x, Vec(4)));
  BindingBlock block;
  block.bindings = {Bind(r, Expr(std::make_shared<const IfNode>(c, then_branch, else_branch, Vec(4)))),
                    Bind(leak, inner)};
  EXPECT_EQ(WellFormedError(ModuleWith({c, x}, {block}, leak)),
            "function 'main', binding 'leak': variable 'inner' is used before its definition");
}

}  // namespace
}  // namespace strata::analysis
