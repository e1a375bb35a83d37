// The pass registry and Pipeline: lookup, insertion points, timing, the
// after-pass callback and its change detection, error prefixes.
#include "compiler/transform/pass.h"

#include <gtest/gtest.h>

#include "compiler/backend/vm/vm_codegen.h"
#include "compiler/driver/pipeline.h"
#include "compiler/ir/printer.h"
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
       {"Normalize", "WellFormed", "Canonicalize", "FoldBatchNorm", "FoldConstants", "EliminateCommonSubexpr",
        "DeadCodeElimination", "DispatchTIR", "cpu-blas", "PackWeights", "ConvertToNchwc", "LegalizeOps", "FuseOps",
        "FuseTIR", "CallTIRRewrite", "PlaceOnDevices", "PlanMemory"}) {
    StatusOr<Pass> pass = GetPass(name);
    ASSERT_TRUE(pass.ok()) << name;
    EXPECT_EQ(pass->name, name);
  }
}

TEST(PassRegistryTest, TheDriverRegistersTheUpperLayersPasses) {
  driver::RegisterCompilerPasses();
  driver::RegisterCompilerPasses();  // idempotent
  for (const char* name :
       {"VMShapeLower", "KillAfterLastUse", "MergeCompositeFunctions", "RunCodegen", "FuseOpsByPattern[dnnl]"}) {
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
  EXPECT_FALSE(RegisterPass(Pass{"", Pass::Function()}).ok());
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

TEST(PipelineTest, EveryPassReadsTheContextOfTheRun) {
  std::vector<int> seen;
  auto recorder = [&seen](const std::string& name) {
    return Pass{name, [&seen](ir::IRModule m, const PassContext& context) -> StatusOr<ir::IRModule> {
                  seen.push_back(context.target.vector_bits);
                  return m;
                }};
  };
  Pipeline pipeline;
  pipeline.Append(recorder("A"));
  pipeline.Append(Identity("ContextFree"));
  pipeline.Append(recorder("B"));
  PassContext context;
  context.target.vector_bits = 256;
  ASSERT_TRUE(pipeline.Run(Parse(kProgram), context).ok());
  EXPECT_EQ(seen, (std::vector<int>{256, 256}));
  ASSERT_TRUE(pipeline.Run(Parse(kProgram)).ok());
  EXPECT_EQ(seen, (std::vector<int>{256, 256, 512, 512}));
}

// A 1x1 convolution over 16 channels with a constant weight.
std::string ConvOver16Channels() {
  std::string weights;
  for (int i = 0; i < 16 * 16; ++i) weights += (i ? ", " : "") + std::to_string(i % 7 - 3);
  return "func @main(x: Tensor[(1, 16, 6, 6), f32]) -> Tensor {\n  c = conv2d(x, const(Tensor[(16, 16, 1, 1), f32], [" +
         weights + "]))\n  return c\n}\n";
}

std::string LowerWith(const std::vector<std::string>& passes, const PassContext& context) {
  StatusOr<Pipeline> pipeline = Pipeline::FromNames(passes);
  EXPECT_TRUE(pipeline.ok()) << pipeline.status().message();
  if (!pipeline.ok()) return "";
  StatusOr<ir::IRModule> lowered = pipeline->Run(Parse(ConvOver16Channels()), context);
  EXPECT_TRUE(lowered.ok()) << lowered.status().message();
  return lowered.ok() ? ir::PrintModule(*lowered) : "";
}

TEST(PassContextTest, NchwcBlocksFillTheTargetsVectorRegisters) {
  for (const auto& [bits, block] : std::vector<std::pair<int, int>>{{512, 16}, {256, 8}, {128, 4}}) {
    PassContext context;
    context.target.vector_bits = bits;
    const std::string text = LowerWith({"Normalize", "ConvertToNchwc"}, context);
    EXPECT_NE(text.find("to_nchwc(x, block=" + std::to_string(block) + ")"), std::string::npos)
        << bits << "-bit vectors:\n"
        << text;
  }
}

TEST(PassContextTest, LegalizeOpsKeepsNchwForAContextWithoutTheLayout) {
  PassContext blocked, plain;
  plain.nchwc_layout = false;
  EXPECT_NE(LowerWith({"Normalize", "LegalizeOps"}, blocked).find("nchwc"), std::string::npos);
  EXPECT_EQ(LowerWith({"Normalize", "LegalizeOps"}, plain).find("nchwc"), std::string::npos);
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
