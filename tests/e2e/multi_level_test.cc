// Multi-level executables (strata compile --cpu x86-64-v4,x86-64-v3): the
// kernels once per CPU level, the later levels alternatives of the first
// (format 1.7). The loader loads the best level this CPU runs; told to treat
// AVX-512 as absent (LoadOptions, or STRATA_DISABLE_CPU_FEATURES), it loads the
// AVX2 level, and both match ONNX Runtime's outputs.
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "compiler/driver/compile.h"
#include "compiler/driver/compile_context.h"
#include "compiler/frontend/onnx/onnx_importer.h"
#include "tests/e2e/e2e_test_util.h"
#include "vm/cpu_features.h"
#include "vm/executable.h"
#include "vm/tensor_io/npy.h"
#include "vm/virtual_machine.h"

namespace strata {
namespace {

namespace fs = std::filesystem;
using testing::ExpectTensorNear;
using testing::SourcePath;

constexpr const char* kLevels = "x86-64-v4,x86-64-v3";

StatusOr<std::vector<uint8_t>> CompileZoo(const std::string& model, const std::string& cpu) {
  STRATA_ASSIGN_OR_RETURN(ir::IRModule module,
                          frontend::ImportOnnxFile(SourcePath("tests/fixtures/onnx/" + model + "/model.onnx")));
  driver::CompileOptions options;
  options.codegen.cpu = cpu;
  return driver::Compile(std::move(module), options);
}

// Every run_N of a zoo model through `exe`, against ONNX Runtime's outputs.
void ExpectZooOutputs(const std::string& model, const std::shared_ptr<const vm::Executable>& exe) {
  const fs::path dir = SourcePath("tests/fixtures/onnx/" + model);
  int runs = 0;
  for (int r = 0; fs::exists(dir / ("run_" + std::to_string(r))); ++r, ++runs) {
    const fs::path run = dir / ("run_" + std::to_string(r));
    std::vector<vm::Value> inputs;
    for (int i = 0; fs::exists(run / ("in" + std::to_string(i) + ".npy")); ++i) {
      inputs.push_back(
          vm::Value::FromTensor(vm::ReadNpyFile((run / ("in" + std::to_string(i) + ".npy")).string()).value()));
    }
    vm::VirtualMachine machine(exe);
    auto result = machine.Invoke("main", inputs);
    ASSERT_TRUE(result.ok()) << model << " run_" << r << ": " << result.status().message();
    ExpectTensorNear(*result, vm::Value::FromTensor(vm::ReadNpyFile((run / "out0.npy").string()).value()), 1e-4f,
                     1e-5f);
  }
  EXPECT_GE(runs, 3) << model;
}

bool HostRuns(const vm::NativeModuleInfo& module) { return vm::CheckCpuFeatures(module.cpu_features, module.cpu).ok(); }

class MultiLevel : public ::testing::TestWithParam<std::string> {};

TEST_P(MultiLevel, TheLoaderPicksTheBestLevelThisCpuRunsAndEachMatchesOnnxRuntime) {
  auto bytes = CompileZoo(GetParam(), kLevels);
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();

  auto best = vm::Executable::LoadFromBytes(*bytes);
  ASSERT_TRUE(best.ok()) << best.status().message();
  const auto modules = (*best)->native_modules();
  ASSERT_EQ(modules.size(), 2u);
  EXPECT_EQ(modules[0].cpu, "x86-64-v4");
  EXPECT_EQ(modules[0].alternative_of, -1);
  EXPECT_EQ(modules[1].cpu, "x86-64-v3");
  EXPECT_EQ(modules[1].alternative_of, 0);
  EXPECT_EQ(modules[0].symbols, modules[1].symbols);
  // The AVX-512 level where this CPU has it, else the AVX2 one.
  const int32_t expected = HostRuns(modules[0]) ? 0 : 1;
  ASSERT_TRUE(HostRuns(modules[1])) << "this test needs an x86-64-v3 (AVX2) machine";
  EXPECT_EQ((*best)->loaded_native_modules()[0], expected);
  EXPECT_EQ((*best)->loaded_native_modules()[1], -1);
  ExpectZooOutputs(GetParam(), *best);

  vm::LoadOptions without_avx512;
  without_avx512.disabled_cpu_features = {"avx512*"};
  auto lower = vm::Executable::LoadFromBytes(*bytes, without_avx512);
  ASSERT_TRUE(lower.ok()) << lower.status().message();
  EXPECT_EQ((*lower)->loaded_native_modules()[0], 1);
  ExpectZooOutputs(GetParam(), *lower);
}

INSTANTIATE_TEST_SUITE_P(Zoo, MultiLevel, ::testing::Values("cnn", "mlp"));

TEST(MultiLevelErrors, ALevelNothingRunsIsRefusedNamingEachLevelAndWhatItLacks) {
  auto one_level = CompileZoo("mlp", "x86-64-v4");
  ASSERT_TRUE(one_level.ok()) << one_level.status().message();
  vm::LoadOptions without_avx512;
  without_avx512.disabled_cpu_features = {"avx512*"};
  auto refused = vm::Executable::LoadFromBytes(*one_level, without_avx512);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition);
  const std::string& single = refused.status().message();
  EXPECT_EQ(single.rfind("native_modules[0]: the native code was compiled for CPU 'x86-64-v4' and needs avx512f", 0),
            0u)
      << single;
  EXPECT_NE(single.find("(treated as absent: avx512*)"), std::string::npos) << single;

  auto two_levels = CompileZoo("mlp", kLevels);
  ASSERT_TRUE(two_levels.ok()) << two_levels.status().message();
  vm::LoadOptions without_avx2;
  without_avx2.disabled_cpu_features = {"avx2"};
  refused = vm::Executable::LoadFromBytes(*two_levels, without_avx2);
  ASSERT_FALSE(refused.ok());
  const std::string& both = refused.status().message();
  EXPECT_EQ(both.rfind("native_modules[0] and its alternatives: none runs on this CPU (native_modules[0]: the native "
                       "code was compiled for CPU 'x86-64-v4' and needs avx2",
                       0),
            0u)
      << both;
  EXPECT_NE(both.find("; native_modules[1]: the native code was compiled for CPU 'x86-64-v3' and needs avx2"),
            std::string::npos)
      << both;
}

TEST(MultiLevelErrors, TheCpuListIsChecked) {
  auto twice = CompileZoo("mlp", "x86-64-v3,x86-64-v3");
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.status().message(), "--cpu 'x86-64-v3,x86-64-v3': CPU 'x86-64-v3' is named twice");
  auto empty = CompileZoo("mlp", "x86-64-v3,");
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.status().message(), "--cpu 'x86-64-v3,': an empty CPU name");
  auto unknown = CompileZoo("mlp", "x86-64-v3,x86-64-v9");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().message().rfind("unknown CPU 'x86-64-v9' for x86_64", 0), 0u)
      << unknown.status().message();
}

TEST(MultiLevelContext, PassesSeeOnlyTheFeaturesEveryLevelHas) {
  driver::CompileOptions options;
  options.codegen.cpu = kLevels;
  auto context = driver::MakeCompileContext(options);
  ASSERT_TRUE(context.ok()) << context.status().message();
  ASSERT_EQ(context->cpus.size(), 2u);
  const std::vector<std::string>& best = context->cpus[0].required_cpu_features;
  EXPECT_NE(std::find(best.begin(), best.end(), "avx512f"), best.end());
  EXPECT_FALSE(context->passes.target.Has("avx512f"));  // the x86-64-v3 level lacks it
  EXPECT_TRUE(context->passes.target.Has("avx2"));
  EXPECT_TRUE(context->passes.target.Has("fma"));
  EXPECT_EQ(context->passes.target.vector_bits, context->cpus[0].vector_bits);  // the layout of the best level
}

TEST(DisabledCpuFeatures, NamesAndPrefixesFromTheEnvironment) {
  ::setenv("STRATA_DISABLE_CPU_FEATURES", " avx512* , fma,,", 1);
  const std::vector<std::string> disabled = vm::DisabledCpuFeaturesFromEnvironment();
  ::unsetenv("STRATA_DISABLE_CPU_FEATURES");
  EXPECT_EQ(disabled, (std::vector<std::string>{"avx512*", "fma"}));
  EXPECT_TRUE(vm::IsDisabledCpuFeature("avx512f", disabled));
  EXPECT_TRUE(vm::IsDisabledCpuFeature("avx512vnni", disabled));
  EXPECT_TRUE(vm::IsDisabledCpuFeature("fma", disabled));
  EXPECT_FALSE(vm::IsDisabledCpuFeature("avx2", disabled));
  EXPECT_FALSE(vm::IsDisabledCpuFeature("fma4", disabled));
  const vm::CpuFeatureProbe probe = vm::HostCpuFeaturesWithout(disabled);
  EXPECT_EQ(probe("avx512f"), std::optional<bool>(false));
  EXPECT_EQ(probe("sse2"), vm::HostHasCpuFeature("sse2"));
  EXPECT_EQ(probe("no-such-feature"), std::nullopt);
  EXPECT_TRUE(vm::DisabledCpuFeaturesFromEnvironment().empty());
}

class MultiLevelCli : public testing::StrataCliTest {};

TEST_F(MultiLevelCli, CompileInspectAndRunWithAndWithoutAvx512) {
  const std::string exe = (dir_ / "mlp.stx").string();
  std::string out;
  ASSERT_EQ(
      Run("compile " + SourcePath("tests/fixtures/onnx/mlp/model.onnx") + " --cpu " + kLevels + " -o " + exe, &out), 0)
      << out;
  ASSERT_EQ(Run("inspect " + exe, &out), 0) << out;
  EXPECT_NE(out.find("cpu x86-64-v3"), std::string::npos) << out;
  EXPECT_NE(out.find("alternative of [0]"), std::string::npos) << out;
  EXPECT_NE(out.find("on this CPU: [0] -> ["), std::string::npos) << out;

  // Both levels match ONNX Runtime's output (strata run exits 1 when not).
  const std::string run = " run " + exe + " --input=@" + SourcePath("tests/fixtures/onnx/mlp/run_0/in0.npy") +
                          " --expected-output=@" + SourcePath("tests/fixtures/onnx/mlp/run_0/out0.npy");
  ASSERT_EQ(Run(run, &out), 0) << out;
  const std::string without_avx512 = "STRATA_DISABLE_CPU_FEATURES='avx512*' " + std::string(STRATA_BINARY);
  ASSERT_EQ(testing::RunCommand(without_avx512 + run, &out), 0) << out;
  ASSERT_EQ(testing::RunCommand(without_avx512 + " inspect " + exe, &out), 0) << out;
  EXPECT_NE(out.find("on this CPU (treating as absent: avx512*): [0] -> [1]"), std::string::npos) << out;
  // With nothing left that runs, the run is refused, saying why.
  ASSERT_NE(testing::RunCommand("STRATA_DISABLE_CPU_FEATURES=avx2 " + std::string(STRATA_BINARY) + run, &out), 0);
  EXPECT_NE(out.find("native_modules[0] and its alternatives: none runs on this CPU"), std::string::npos) << out;
}

}  // namespace
}  // namespace strata
