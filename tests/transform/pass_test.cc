// The pass registry and Pipeline: lookup, insertion points, timing, the
// after-pass callback and its change detection, error prefixes.
#include "compiler/transform/pass.h"

#include <gtest/gtest.h>

#include "compiler/backend/vm/vm_codegen.h"
#include "compiler/driver/pipeline.h"
#include "tests/transform/test_util.h"

namespace strata::transform {
namespace {

using testing::Parse;

Pass Identity(const std::string& name) {
  return Pass{name, [](ir::IRModule m) -> StatusOr<ir::IRModule> { return m; }};
}

constexpr const char* kProgram = R"(
prim_func @relu(A: Buffer[(n,), f32], B: Buffer[(n,), f32]) {
  for i in range(0, n) {
    B[i] = max(A[i], 0.0)
  }
}
func @main(x: Tensor[(n,), f32]) -> Tensor[(n,), f32] {
  y = call_tir(@relu, (x,), Tensor[(n,), f32])
  return y
}
)";

TEST(PassRegistryTest, TransformPassesAreRegisteredWithoutTheLayersAbove) {
  for (const char* name :
       {"Normalize", "WellFormed", "Canonicalize", "FoldBatchNorm", "EliminateCommonSubexpr", "DeadCodeElimination",
        "DispatchTIR", "PackWeights", "LegalizeOps", "CallTIRRewrite", "PlanMemory"}) {
    StatusOr<Pass> pass = GetPass(name);
    ASSERT_TRUE(pass.ok()) << name;
    EXPECT_EQ(pass->name, name);
  }
}

TEST(PassRegistryTest, TheDriverRegistersTheUpperLayersPasses) {
  driver::RegisterCompilerPasses();
  driver::RegisterCompilerPasses();  // idempotent
  for (const char* name : {"VMShapeLower", "KillAfterLastUse", "FoldConstants", "MergeCompositeFunctions", "RunCodegen",
                           "FuseOpsByPattern[dnnl]"}) {
    StatusOr<Pass> pass = GetPass(name);
    ASSERT_TRUE(pass.ok()) << name;
    EXPECT_EQ(pass->name, name);
  }
}

TEST(PassRegistryTest, UnknownPassListsTheRegisteredOnes) {
  driver::RegisterCompilerPasses();
  StatusOr<Pass> pass = GetPass("NoSuchPass");
  ASSERT_FALSE(pass.ok());
  EXPECT_EQ(pass.status().code(), StatusCode::kNotFound);
  EXPECT_NE(pass.status().message().find("unknown pass 'NoSuchPass' (registered: "), std::string::npos);
  EXPECT_NE(pass.status().message().find("VMShapeLower"), std::string::npos);
}

TEST(PassRegistryTest, RegisterPassRejectsDuplicates) {
  ASSERT_TRUE(RegisterPass(Identity("PassTestIdentity")).ok());
  EXPECT_TRUE(GetPass("PassTestIdentity").ok());
  Status again = RegisterPass(Identity("PassTestIdentity"));
  EXPECT_EQ(again.message(), "RegisterPass: a pass named 'PassTestIdentity' is already registered");
  EXPECT_FALSE(RegisterPass(Pass{"", nullptr}).ok());
}

TEST(PipelineTest, InsertBeforeAndAfterNamedPasses) {
  Pipeline pipeline = driver::DefaultPipeline();
  EXPECT_EQ(pipeline.names(), driver::DefaultPipelinePassNames());
  ASSERT_TRUE(pipeline.InsertBefore("LegalizeOps", Identity("Dispatch")).ok());
  ASSERT_TRUE(pipeline.InsertAfter("CallTIRRewrite", Identity("MyOpt")).ok());
  // WellFormed appears twice: insertion goes next to the first one.
  ASSERT_TRUE(pipeline.InsertAfter("WellFormed", Identity("Check")).ok());
  EXPECT_EQ(pipeline.names(),
            (std::vector<std::string>{"Normalize", "WellFormed", "Check", "Canonicalize", "FoldBatchNorm",
                                      "FoldConstants", "EliminateCommonSubexpr", "DeadCodeElimination", "DispatchTIR",
                                      "Dispatch", "LegalizeOps", "FuseOps", "FuseTIR", "CallTIRRewrite", "MyOpt",
                                      "PlanMemory", "VMShapeLower", "KillAfterLastUse", "WellFormed"}));
  Status missing = pipeline.InsertBefore("SimplifyGraph", Identity("X"));
  EXPECT_EQ(missing.message(),
            "no pass 'SimplifyGraph' in the pipeline (Normalize, WellFormed, Check, Canonicalize, FoldBatchNorm, "
            "FoldConstants, EliminateCommonSubexpr, DeadCodeElimination, DispatchTIR, Dispatch, LegalizeOps, "
            "FuseOps, FuseTIR, CallTIRRewrite, MyOpt, PlanMemory, VMShapeLower, KillAfterLastUse, WellFormed)");
}

TEST(PipelineTest, CallbackSeesEveryPassAndWhetherItChangedTheModule) {
  StatusOr<Pipeline> pipeline = Pipeline::FromNames({"Normalize", "Normalize", "WellFormed", "CallTIRRewrite"});
  ASSERT_TRUE(pipeline.ok());
  std::vector<std::tuple<size_t, std::string, bool>> seen;
  pipeline->SetAfterPassCallback([&](size_t index, const std::string& name, const ir::IRModule& module, bool changed) {
    seen.emplace_back(index, name, changed);
  });
  StatusOr<ir::IRModule> result = pipeline->Run(Parse(kProgram));
  ASSERT_TRUE(result.ok()) << result.status().message();
  EXPECT_EQ(
      seen,
      (std::vector<std::tuple<size_t, std::string, bool>>{
          {0, "Normalize", true}, {1, "Normalize", false}, {2, "WellFormed", false}, {3, "CallTIRRewrite", true}}));
  ASSERT_EQ(pipeline->timings().size(), 4u);
  EXPECT_EQ(pipeline->timings()[3].name, "CallTIRRewrite");
  EXPECT_GE(pipeline->timings()[3].milliseconds, 0.0);
}

TEST(PipelineTest, ErrorsNameTheFailingPass) {
  Pipeline pipeline;
  pipeline.Append(Identity("First"));
  pipeline.Append(Pass{"Breaks", [](ir::IRModule) -> StatusOr<ir::IRModule> { return Status::Error("boom"); }});
  pipeline.Append(Identity("Never"));
  StatusOr<ir::IRModule> result = pipeline.Run(Parse(kProgram));
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().message(), "Breaks: boom");
  EXPECT_EQ(pipeline.timings().size(), 2u);  // the third pass never ran
}

TEST(PipelineTest, DefaultPipelineOutputIsAcceptedByVMCodegen) {
  StatusOr<ir::IRModule> lowered = driver::DefaultPipeline().Run(Parse(kProgram));
  ASSERT_TRUE(lowered.ok()) << lowered.status().message();
  StatusOr<serialization::ExecutableSpec> exe = backend::CodegenVM(*lowered);
  ASSERT_TRUE(exe.ok()) << exe.status().message();
  EXPECT_EQ(exe->functions[0].name, "main");
}

}  // namespace
}  // namespace strata::transform
