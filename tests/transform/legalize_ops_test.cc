// LegalizeOps beyond the golden files: user overrides, operators without a
// default kernel, user-registered operators, and the registry's rules.
#include "compiler/transform/legalize_ops.h"

#include <gtest/gtest.h>

#include "compiler/op/kernel_builder.h"
#include "compiler/op/op_util.h"
#include "tests/transform/test_util.h"

namespace strata::transform::testing {
namespace {

constexpr const char* kReluProgram = R"(
func @main(x: Tensor[(n, 4), f32]) -> Tensor[(n, 4), f32] {
  y = relu(x)
  return y
}
)";

// relu6 in place of relu: what a user's own kernel for an operator looks like.
StatusOr<tir::Stmt> Relu6(const op::OpCall& call, op::KernelBuilder& b) {
  STRATA_ASSIGN_OR_RETURN(tir::Buffer x, b.Input(call.arg(0), "X", "x"));
  STRATA_ASSIGN_OR_RETURN(tir::Buffer y, b.Output(call.call().struct_info, "Y"));
  return b.Elementwise(y->shape, [&](const std::vector<tir::PrimExpr>& i) {
    tir::PrimExpr v = tir::BufferLoadNode::make(x, i);
    return tir::BufferStoreNode::make(
        y, i, tir::Min(tir::Max(v, tir::FloatImm(DataType::F32(), 0)), tir::FloatImm(DataType::F32(), 6)));
  });
}

TEST(LegalizeOps, AUserOverrideReplacesTheDefaultKernel) {
  StatusOr<ir::IRModule> normalized = RunPasses(Parse(kReluProgram), {"Normalize"});
  ASSERT_TRUE(normalized.ok()) << normalized.status().message();
  LegalizeOptions options;
  options.overrides["relu"] = Relu6;
  StatusOr<ir::IRModule> lowered = LegalizeOps(*normalized, options);
  ASSERT_TRUE(lowered.ok()) << lowered.status().message();
  const std::string text = ir::PrintModule(*lowered);
  EXPECT_NE(text.find("Y[i0, i1] = min(max(X[i0, i1], 0.0), 6.0)"), std::string::npos) << text;
  EXPECT_NE(text.find("y: Tensor[(n, 4), f32] = call_tir(@relu, (x,), Tensor[(n, 4), f32])"), std::string::npos)
      << text;
}

TEST(LegalizeOps, AnOperatorWithoutADefaultKernelMustBeDispatched) {
  op::OpDef def;
  def.name = "test.fancy_op";
  def.params = {"x"};
  def.infer = [](const op::OpCall& call) -> StatusOr<graph::StructInfo> { return call.arg_sinfo(0); };
  ASSERT_TRUE(op::RegisterOp(def).ok());
  StatusOr<ir::IRModule> lowered = RunPasses(Parse(R"(
func @main(x: Tensor[(n,), f32]) -> Tensor[(n,), f32] {
  y = test.fancy_op(x)
  return y
}
)"),
                                             {"Normalize", "LegalizeOps"});
  ASSERT_FALSE(lowered.ok());
  EXPECT_EQ(lowered.status().message(),
            "LegalizeOps: function 'main', binding 'y': test.fancy_op: no default tensor program; run a dispatch "
            "pass that lowers it before LegalizeOps");
}

TEST(LegalizeOps, RegistryRefusesDuplicatesAndBuiltins) {
  op::OpDef def;
  def.name = "add";
  def.params = {"x", "y"};
  def.infer = [](const op::OpCall& call) -> StatusOr<graph::StructInfo> { return call.arg_sinfo(0); };
  EXPECT_EQ(op::RegisterOp(def, /*replace=*/true).message(), "RegisterOp: 'add' is a built-in operator");
  def.name = "test.twice";
  ASSERT_TRUE(op::RegisterOp(def).ok());
  EXPECT_EQ(op::RegisterOp(def).message(), "RegisterOp: operator 'test.twice' is already registered");
  EXPECT_TRUE(op::RegisterOp(def, /*replace=*/true).ok());
  def.infer = nullptr;
  EXPECT_EQ(op::RegisterOp(def).message(), "RegisterOp: an operator needs a name and an inference function");
  EXPECT_NE(op::FindOp("softmax"), nullptr);
  EXPECT_EQ(op::FindOp("no_such_op"), nullptr);
}

TEST(LegalizeOps, UnknownOperatorIsANormalizeError) {
  StatusOr<ir::IRModule> lowered = RunPasses(Parse(R"(
func @main(x: Tensor[(n,), f32]) -> Tensor[(n,), f32] {
  y = addd(x, x)
  return y
}
)"),
                                             {"Normalize"});
  ASSERT_FALSE(lowered.ok());
  EXPECT_EQ(lowered.status().message(), "Normalize: function 'main', binding 'y': unknown operator 'addd'");
}

}  // namespace
}  // namespace strata::transform::testing
