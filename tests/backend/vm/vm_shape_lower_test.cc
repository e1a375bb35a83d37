// VMShapeLower: error contexts the runtime will show, the heap, and the guarantee
// that no symbolic variable is left in a value.
#include "compiler/backend/vm/vm_shape_lower.h"

#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "compiler/ir/graph_visitor.h"
#include "tests/transform/test_util.h"

namespace strata::backend {
namespace {

using transform::testing::PackedCalls;
using transform::testing::Parse;
using transform::testing::RunPasses;
using transform::testing::StringArg;

ir::IRModule Lower(const std::string& text) {
  StatusOr<ir::IRModule> result = RunPasses(Parse(text), {"Normalize", "CallTIRRewrite", "VMShapeLower"});
  EXPECT_TRUE(result.ok()) << result.status().message();
  return result.ok() ? std::move(result).value() : ir::IRModule();
}

std::string ReadExample(const std::string& name) {
  std::ifstream in(std::string(STRATA_SOURCE_DIR) + "/examples/" + name);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The (code, value, expr) triples and the context of a match_shape call.
struct MatchShape {
  std::vector<std::tuple<int64_t, int64_t, std::string>> dims;
  std::string ctx;
};

MatchShape Decode(const analysis::PackedCall& call) {
  MatchShape m;
  auto int_arg = [&](size_t i) { return *tir::AsConstInt(call.args[i].as<graph::PrimValueNode>()->value); };
  int64_t ndim = int_arg(2);
  for (int64_t d = 0; d < ndim; ++d) {
    m.dims.emplace_back(int_arg(3 + 3 * d), int_arg(4 + 3 * d), StringArg(call.args[5 + 3 * d]));
  }
  m.ctx = StringArg(call.args.back());
  return m;
}

TEST(VMShapeLowerTest, MatchOfShapeOfParameterNamesTheParameter) {
  ir::IRModule module = Lower(ReadExample("matmul_relu.sir"));
  std::vector<analysis::PackedCall> matches = PackedCalls(module, "main", "vm.builtin.match_shape");
  ASSERT_EQ(matches.size(), 2u);
  MatchShape x = Decode(matches[0]);
  EXPECT_EQ(x.ctx, "main: parameter 'x' (match_shape)");
  // m and n are stored (code 1) into slots 0 and 1.
  EXPECT_EQ(x.dims, (std::vector<std::tuple<int64_t, int64_t, std::string>>{{1, 0, "m"}, {1, 1, "n"}}));
  MatchShape w = Decode(matches[1]);
  EXPECT_EQ(w.ctx, "main: parameter 'w' (match_shape)");
  // n is asserted (code 2) against slot 1, k stored.
  EXPECT_EQ(w.dims, (std::vector<std::tuple<int64_t, int64_t, std::string>>{{2, 1, "n"}, {1, 2, "k"}}));

  std::vector<analysis::PackedCall> checks = PackedCalls(module, "main", "vm.builtin.check_tensor_info");
  ASSERT_EQ(checks.size(), 2u);
  EXPECT_EQ(StringArg(checks[0].args.back()), "main: parameter 'x'");
  EXPECT_EQ(StringArg(checks[1].args.back()), "main: parameter 'w'");
}

TEST(VMShapeLowerTest, MatchOfAnyOtherValueNamesTheBinding) {
  ir::IRModule module = Lower(R"(
func @main(x: Tensor[ndim=1, f32]) -> Tensor {
  t = call_packed("lib.compute", x)
  y = match_cast(t, Tensor[(k, 2), f32])
  return y
}
)");
  std::vector<analysis::PackedCall> checks = PackedCalls(module, "main", "vm.builtin.check_tensor_info");
  ASSERT_EQ(checks.size(), 2u);
  EXPECT_EQ(StringArg(checks[1].args.back()), "main: binding 'y'");
  std::vector<analysis::PackedCall> matches = PackedCalls(module, "main", "vm.builtin.match_shape");
  ASSERT_EQ(matches.size(), 1u);
  MatchShape m = Decode(matches[0]);
  EXPECT_EQ(m.ctx, "main: binding 'y' (match_shape)");
  EXPECT_EQ(m.dims, (std::vector<std::tuple<int64_t, int64_t, std::string>>{{1, 0, "k"}, {0, 2, "2"}}));
}

TEST(VMShapeLowerTest, ShapeOfOperatorOnAParameterNamesTheParameter) {
  ir::IRModule module = Lower(R"(
func @main(x: Tensor[ndim=2, f32]) -> Tensor {
  s = shape_of(x)
  t = match_cast(s, Shape[(a, b)])
  return x
}
)");
  std::vector<analysis::PackedCall> matches = PackedCalls(module, "main", "vm.builtin.match_shape");
  ASSERT_EQ(matches.size(), 1u);
  EXPECT_EQ(Decode(matches[0]).ctx, "main: parameter 'x' (match_shape)");
}

TEST(VMShapeLowerTest, ProvenMatchCastEmitsNoCheck) {
  ir::IRModule module = Lower(R"(
func @main(x: Tensor[(a, b), f32]) -> Tensor {
  y = match_cast(x, Tensor[(a, b), f32])
  return y
}
)");
  // Only the parameter's own check and match remain.
  EXPECT_EQ(PackedCalls(module, "main", "vm.builtin.check_tensor_info").size(), 1u);
  EXPECT_EQ(PackedCalls(module, "main", "vm.builtin.match_shape").size(), 1u);
}

TEST(VMShapeLowerTest, StaticShapesUseNoHeap) {
  ir::IRModule module = Lower(R"(
func @main(x: Tensor[(2, 3), f32]) -> Tensor {
  return x
}
)");
  std::vector<graph::Binding> bindings = transform::testing::Bindings(module, "main");
  ASSERT_FALSE(bindings.empty());
  analysis::PackedCall first;
  ASSERT_TRUE(analysis::MatchCallPacked(bindings[0].value.as<graph::CallNode>(), &first));
  EXPECT_EQ(first.name, "vm.builtin.null");
  std::vector<analysis::PackedCall> matches = PackedCalls(module, "main", "vm.builtin.match_shape");
  ASSERT_EQ(matches.size(), 1u);
  EXPECT_EQ(Decode(matches[0]).dims,
            (std::vector<std::tuple<int64_t, int64_t, std::string>>{{0, 2, "2"}, {0, 3, "3"}}));
}

TEST(VMShapeLowerTest, TupleParameterFieldsAreCheckedThroughItems) {
  ir::IRModule module = Lower(R"(
func @main(t: Tuple[Tensor[(n,), f32], Object]) -> Object {
  return t
}
)");
  std::vector<analysis::PackedCall> tuple_checks = PackedCalls(module, "main", "vm.builtin.check_tuple_info");
  ASSERT_EQ(tuple_checks.size(), 1u);
  EXPECT_EQ(StringArg(tuple_checks[0].args.back()), "main: parameter 't'");
  std::vector<analysis::PackedCall> tensor_checks = PackedCalls(module, "main", "vm.builtin.check_tensor_info");
  ASSERT_EQ(tensor_checks.size(), 1u);
  EXPECT_EQ(StringArg(tensor_checks[0].args.back()), "main: parameter 't' field 0");
}

// Every shape(...) and prim(...) left in a graph function is a constant.
class SymbolicValueFinder : public graph::ExprVisitor {
 public:
  std::vector<std::string> found;

 protected:
  void VisitShapeExpr(const graph::ShapeExprNode* op) override {
    for (const tir::PrimExpr& d : op->values) {
      if (!tir::AsConstInt(d)) found.push_back(ir::PrintPrimExpr(d));
    }
  }
  void VisitPrimValue(const graph::PrimValueNode* op) override {
    if (!op->value.as<tir::IntImmNode>() && !op->value.as<tir::FloatImmNode>()) {
      found.push_back(ir::PrintPrimExpr(op->value));
    }
  }
};

TEST(VMShapeLowerTest, NoSymbolicVariableRemainsInAValue) {
  ir::IRModule module = Lower(R"(
prim_func @pad(A: Buffer[(n,), f32], B: Buffer[(n * 2 + 1,), f32], k: i64) {
  for i in range(0, n) {
    B[i] = A[i]
  }
}
func @main(x: Tensor[(n,), f32]) -> Shape {
  y = call_tir(@pad, (x,), Tensor[(n * 2 + 1,), f32], shape(n + 3))
  s = shape(n * 2 + 1, n)
  return s
}
)");
  graph::Function main = module.GetGraphFunction("main");
  ASSERT_TRUE(main != nullptr);
  SymbolicValueFinder finder;
  finder.VisitExpr(main->body);
  EXPECT_TRUE(finder.found.empty()) << "first symbolic value left: " << finder.found[0];
  // n * 2 + 1 is computed once and shared by the allocation and the returned shape.
  EXPECT_EQ(PackedCalls(module, "main", "vm.builtin.make_shape").size(), 3u);
  int shape_funcs = 0;
  for (const auto& [name, func] : module.functions()) shape_funcs += name.rfind("shape_func_main_", 0) == 0;
  EXPECT_EQ(shape_funcs, 2);  // n * 2 + 1 at the allocation, n + 3 at the kernel call
}

TEST(VMShapeLowerTest, UnknownRankAndDtypeAreCheckedAsAnyAndReparse) {
  ir::IRModule module = Lower(R"(
func @main(x: Tensor, s: Shape) -> Tensor {
  return x
}
)");
  std::vector<analysis::PackedCall> tensor_checks = PackedCalls(module, "main", "vm.builtin.check_tensor_info");
  ASSERT_EQ(tensor_checks.size(), 1u);
  EXPECT_EQ(ir::PrintGraphExpr(tensor_checks[0].args[1]), "-1");
  EXPECT_EQ(ir::PrintGraphExpr(tensor_checks[0].args[2]), "dtype(void)");
  EXPECT_EQ(PackedCalls(module, "main", "vm.builtin.check_shape_info").size(), 1u);
  std::string text = ir::PrintModule(module);
  StatusOr<ir::IRModule> reparsed = ir::ParseModule(text, "lowered.sir");
  ASSERT_TRUE(reparsed.ok()) << reparsed.status().message();
  EXPECT_EQ(ir::PrintModule(*reparsed), text);
}

TEST(VMShapeLowerTest, MatchCastWithCompositeOfItsOwnVariableMatchesTwice) {
  ir::IRModule module = Lower(R"(
func @main(x: Tensor[ndim=1, f32]) -> Tensor {
  t = call_packed("lib.make", x)
  y = match_cast(t, Tensor[(k, k * 2), f32])
  return y
}
)");
  std::vector<analysis::PackedCall> matches = PackedCalls(module, "main", "vm.builtin.match_shape");
  ASSERT_EQ(matches.size(), 2u);
  // First k is stored and k * 2 parked in a scratch slot; then k * 2 is computed
  // into its own slot by a shape function and both dims are asserted.
  EXPECT_EQ(Decode(matches[0]).dims,
            (std::vector<std::tuple<int64_t, int64_t, std::string>>{{1, 0, "k"}, {1, 1, "k * 2"}}));
  EXPECT_EQ(Decode(matches[1]).dims,
            (std::vector<std::tuple<int64_t, int64_t, std::string>>{{2, 0, "k"}, {2, 2, "k * 2"}}));
  EXPECT_EQ(Decode(matches[1]).ctx, "main: binding 'y' (match_shape)");
  ASSERT_TRUE(module.GetPrimFunc("shape_func_main_0") != nullptr);
  EXPECT_EQ(ir::PrintPrimFunc("shape_func_main_0", module.GetPrimFunc("shape_func_main_0")),
            "prim_func @shape_func_main_0(H: Buffer[(3,), i64]) {\n  H[2] = H[0] * 2\n}\n");
}

TEST(VMShapeLowerTest, CallTIRLeftUnrewrittenIsAnError) {
  StatusOr<ir::IRModule> result = RunPasses(Parse(R"(
prim_func @copy(A: Buffer[(n,), f32], B: Buffer[(n,), f32]) {
  for i in range(0, n) {
    B[i] = A[i]
  }
}
func @main(x: Tensor[(n,), f32]) -> Tensor {
  y = call_tir(@copy, (x,), Tensor[(n,), f32])
  return y
}
)"),
                                            {"Normalize", "VMShapeLower"});
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().message(),
            "VMShapeLower: function 'main', binding 'y': call_tir must be rewritten by CallTIRRewrite before "
            "VMShapeLower");
}

TEST(VMShapeLowerTest, SymbolicScalarsAreComputedIntoTheShapeHeapAndReadBack) {
  StatusOr<ir::IRModule> result = RunPasses(Parse(R"(
func @main(x: Tensor[(n,), f32]) -> Object {
  y = call_packed("lib.use", x, prim(n + 1), prim(n), prim(n == 4))
  return y
}
)"),
                                            {"Normalize", "VMShapeLower"});
  ASSERT_TRUE(result.ok()) << result.status().message();
  const std::string text = ir::PrintModule(*result);
  // n is stored by the parameter's match (slot 0); n + 1 and the comparison
  // (as an i64) are computed by a shape function into slots 1 and 2.
  EXPECT_NE(text.find("call_packed(\"vm.builtin.heap_scalar\", shape_heap, 0)"), std::string::npos) << text;
  EXPECT_NE(text.find("call_packed(\"vm.builtin.heap_scalar\", shape_heap, 1)"), std::string::npos) << text;
  EXPECT_NE(text.find("call_packed(\"vm.builtin.heap_scalar\", shape_heap, 2)"), std::string::npos) << text;
  EXPECT_NE(text.find("shape_func_main_"), std::string::npos) << text;
  EXPECT_EQ(text.find("prim(n"), std::string::npos) << text;
}

}  // namespace
}  // namespace strata::backend
