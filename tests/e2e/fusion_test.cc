// Fusion end to end on the ONNX zoo: every model compiled with fusion on and
// off (--no-fuse) matches onnxruntime at every exported shape, and fusion
// makes at least 1.5x fewer kernel launches and fewer VM instructions per
// inference (counted by the profiler).
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "compiler/driver/compile.h"
#include "compiler/frontend/onnx/onnx_importer.h"
#include "tests/e2e/e2e_test_util.h"
#include "vm/profiler.h"
#include "vm/tensor_io/npy.h"
#include "vm/tensor_io/tensor_compare.h"
#include "vm/virtual_machine.h"

namespace strata::testing {
namespace {

namespace fs = std::filesystem;

std::shared_ptr<const vm::Executable> CompileZoo(const std::string& model, bool fuse) {
  auto module = frontend::ImportOnnxFile(SourcePath("tests/fixtures/onnx/" + model + "/model.onnx"));
  EXPECT_TRUE(module.ok()) << module.status().message();
  if (!module.ok()) return nullptr;
  driver::CompileOptions options;
  options.fuse = fuse;
  auto bytes = driver::Compile(std::move(module).value(), options);
  EXPECT_TRUE(bytes.ok()) << bytes.status().message();
  if (!bytes.ok()) return nullptr;
  auto exe = vm::Executable::LoadFromBytes(*bytes);
  EXPECT_TRUE(exe.ok()) << exe.status().message();
  return exe.ok() ? exe.value() : nullptr;
}

struct Counts {
  int64_t kernels = 0;
  int64_t instructions = 0;
};

// Runs every exported shape, checks the first output against onnxruntime's,
// and returns the launches and instructions of one inference at the first shape.
Counts RunAndCount(const std::shared_ptr<const vm::Executable>& exe, const std::string& model) {
  Counts counts;
  vm::VirtualMachine machine(exe);
  const fs::path dir = SourcePath("tests/fixtures/onnx/" + model);
  const vm::Tolerance tolerance{1e-4, 1e-5};
  for (int k = 0; fs::exists(dir / ("run_" + std::to_string(k))); ++k) {
    SCOPED_TRACE(model + "/run_" + std::to_string(k));
    const fs::path run = dir / ("run_" + std::to_string(k));
    std::vector<vm::Value> inputs;
    for (int i = 0; fs::exists(run / ("in" + std::to_string(i) + ".npy")); ++i) {
      inputs.push_back(
          vm::Value::FromTensor(vm::ReadNpyFile((run / ("in" + std::to_string(i) + ".npy")).string()).value()));
    }
    vm::Profiler profiler(exe, {});
    if (k == 0) {
      EXPECT_TRUE(machine.SetProfiler(&profiler).ok());
    }
    auto result = machine.Invoke("main", inputs);
    if (k == 0) {
      EXPECT_TRUE(machine.SetProfiler(nullptr).ok());
      counts.kernels = profiler.kind_stat(vm::InstructionKind::kCallCompiledKernel).count;
      for (int kind = 0; kind < vm::kNumInstructionKinds; ++kind) {
        counts.instructions += profiler.kind_stat(static_cast<vm::InstructionKind>(kind)).count;
      }
    }
    EXPECT_TRUE(result.ok()) << result.status().message();
    if (!result.ok()) continue;
    vm::Value out = result->is_tuple() ? result->tuple()->fields()[0] : *result;
    auto expected = vm::ReadNpyFile((run / "out0.npy").string());
    EXPECT_TRUE(expected.ok());
    auto c = vm::CompareTensors(*out.tensor(), **expected, tolerance);
    EXPECT_TRUE(c.ok() && c->ok()) << (c.ok() ? vm::DescribeMismatch(*c, tolerance) : c.status().message());
  }
  return counts;
}

class ZooFusion : public ::testing::TestWithParam<std::string> {};

TEST_P(ZooFusion, MatchesWithAndWithoutFusionAndLaunchesFewerKernels) {
  auto fused = CompileZoo(GetParam(), true);
  auto unfused = CompileZoo(GetParam(), false);
  ASSERT_NE(fused, nullptr);
  ASSERT_NE(unfused, nullptr);
  const Counts with = RunAndCount(fused, GetParam());
  const Counts without = RunAndCount(unfused, GetParam());
  EXPECT_GT(with.kernels, 0);
  // At least 1.5x fewer kernel launches, and fewer instructions in all.
  EXPECT_LE(with.kernels * 3, without.kernels * 2) << "fused " << with.kernels << ", unfused " << without.kernels;
  EXPECT_LT(with.instructions, without.instructions);
  std::printf("[ fusion   ] %s: kernels %lld -> %lld, instructions %lld -> %lld\n", GetParam().c_str(),
              static_cast<long long>(without.kernels), static_cast<long long>(with.kernels),
              static_cast<long long>(without.instructions), static_cast<long long>(with.instructions));
}

std::vector<std::string> ZooModels() {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(SourcePath("tests/fixtures/onnx"))) {
    if (fs::exists(entry.path() / "model.onnx")) names.push_back(entry.path().filename());
  }
  std::sort(names.begin(), names.end());
  return names;
}

INSTANTIATE_TEST_SUITE_P(Zoo, ZooFusion, ::testing::ValuesIn(ZooModels()));

using FusionCli = StrataCliTest;

bool AnyFileContains(const fs::path& dir, const std::string& name_part, const std::string& text) {
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().filename().string().find(name_part) == std::string::npos) continue;
    std::ifstream in(entry.path());
    std::stringstream content;
    content << in.rdbuf();
    if (content.str().find(text) != std::string::npos) return true;
  }
  return false;
}

// --dump-ir shows the module after FuseOps (primitive functions) and after
// FuseTIR (fused kernels); --no-fuse runs neither, and both builds give
// onnxruntime's result.
TEST_F(FusionCli, DumpShowsBothPassesAndNoFuseTurnsThemOff) {
  const std::string model = SourcePath("tests/fixtures/onnx/cnn/model.onnx");
  const std::string io = "--input=@" + SourcePath("tests/fixtures/onnx/cnn/run_1/in0.npy") + " --expected-output=@" +
                         SourcePath("tests/fixtures/onnx/cnn/run_1/out0.npy");
  const fs::path fused_dump = dir_ / "fused", plain_dump = dir_ / "plain";
  const std::string fused = (dir_ / "fused.stx").string(), plain = (dir_ / "plain.stx").string();
  std::string out;
  ASSERT_EQ(Run("compile " + model + " -o " + fused + " --dump-ir " + fused_dump.string(), &out), 0) << out;
  EXPECT_TRUE(AnyFileContains(fused_dump, "-FuseOps.sir", "attrs {primitive = 1}"));
  EXPECT_TRUE(AnyFileContains(fused_dump, "-FuseTIR.sir", "call_tir(@fused_conv2d_nchwc_add_relu"));
  EXPECT_TRUE(AnyFileContains(fused_dump, "-FuseTIR.sir", "fused_ops = \"conv2d_nchwc,add,relu\""));
  ASSERT_EQ(Run("compile " + model + " --no-fuse -o " + plain + " --dump-ir " + plain_dump.string(), &out), 0) << out;
  EXPECT_FALSE(AnyFileContains(plain_dump, "-Fuse", ""));
  EXPECT_FALSE(AnyFileContains(plain_dump, "-CallTIRRewrite.sir", "fused_"));
  ASSERT_EQ(Run("run " + fused + " " + io, &out), 0) << out;
  ASSERT_EQ(Run("run " + plain + " " + io, &out), 0) << out;
}

}  // namespace
}  // namespace strata::testing
