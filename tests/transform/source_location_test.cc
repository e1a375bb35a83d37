// Source locations: bindings carry where they were written through every pass,
// and a pass's error about a binding carries that location in its Status.
#include <gtest/gtest.h>

#include "compiler/frontend/onnx/onnx_importer.h"
#include "tests/transform/test_util.h"

namespace strata::transform {
namespace {

using testing::Bindings;
using testing::Parse;
using testing::RunPasses;

// Line numbers below count from the "func" line as 2 (the text starts with a newline).
constexpr const char* kProgram = R"(
func @main(x: Tensor[(n, 4), f32], w: Tensor[(4, 8), f32]) -> Tensor[(n, 8), f32] {
  y = matmul(x, w)
  z = relu(y)
  return z
}
)";

TEST(SourceLocationTest, TheParserRecordsEachBindingsLineAndColumn) {
  ir::IRModule module = Parse(kProgram);
  std::vector<graph::Binding> bindings = Bindings(module, "main");
  ASSERT_EQ(bindings.size(), 2u);
  ASSERT_TRUE(bindings[0].location);
  EXPECT_EQ(bindings[0].location->Text(), "test.sir:3:3");
  EXPECT_EQ(bindings[1].location->Text(), "test.sir:4:3");
}

TEST(SourceLocationTest, LoweringKeepsTheLocationOfTheBindingEachNewBindingCameFrom) {
  StatusOr<ir::IRModule> lowered =
      RunPasses(Parse(kProgram), {"Normalize", "LegalizeOps", "CallTIRRewrite", "VMShapeLower"});
  ASSERT_TRUE(lowered.ok()) << lowered.status().message();
  int from_matmul = 0, from_relu = 0;
  for (const graph::Binding& b : Bindings(*lowered, "main")) {
    if (!b.location) continue;  // the shape checks of the parameters belong to no binding
    EXPECT_EQ(b.location->file, "test.sir");
    from_matmul += b.location->line == 3;
    from_relu += b.location->line == 4;
  }
  // Each operator became at least an allocation and a kernel call.
  EXPECT_GE(from_matmul, 2);
  EXPECT_GE(from_relu, 2);
}

TEST(SourceLocationTest, ANormalizeErrorCarriesTheBindingsLocation) {
  StatusOr<ir::IRModule> result = RunPasses(Parse(R"(
func @main(x: Tensor[(n, 4), f32], y: Tensor[(n, 5), f32]) -> Tensor[(n, 4), f32] {
  a = relu(x)
  z = add(a, y)
  return z
}
)"),
                                            {"Normalize"});
  ASSERT_FALSE(result.ok());
  ASSERT_NE(result.status().location(), nullptr) << result.status().message();
  EXPECT_EQ(result.status().location()->Text(), "test.sir:4:3");
  EXPECT_EQ(result.status().code(), StatusCode::kInvalidArgument);
}

TEST(SourceLocationTest, AWellFormedErrorCarriesTheBindingsLocation) {
  StatusOr<ir::IRModule> result = RunPasses(Parse(R"(
prim_func @relu(A: Buffer[(m,), f32], B: Buffer[(m,), f32]) {
  for i in range(0, m) {
    B[i] = max(A[i], 0.0)
  }
}
func @main(x: Tensor[ndim=1, f32]) -> Tensor {
  y = call_tir(@relu, (x,), Tensor[(q,), f32])
  return y
}
)"),
                                            {"WellFormed"});
  ASSERT_FALSE(result.ok());
  ASSERT_NE(result.status().location(), nullptr) << result.status().message();
  EXPECT_EQ(result.status().location()->Text(), "test.sir:8:3");
}

TEST(SourceLocationTest, ImportedBindingsNameTheirModelNode) {
  const std::string path = std::string(STRATA_SOURCE_DIR) + "/tests/fixtures/onnx/mlp/model.onnx";
  StatusOr<ir::IRModule> module = frontend::ImportOnnxFile(path);
  ASSERT_TRUE(module.ok()) << module.status().message();
  std::vector<graph::Binding> bindings = Bindings(*module, "main");
  ASSERT_FALSE(bindings.empty());
  for (const graph::Binding& b : bindings) {
    ASSERT_TRUE(b.location) << b.var->name;
    EXPECT_EQ(b.location->file, path);
    EXPECT_FALSE(b.location->node.empty()) << b.var->name;
    EXPECT_EQ(b.location->line, 0);
  }
}

}  // namespace
}  // namespace strata::transform
