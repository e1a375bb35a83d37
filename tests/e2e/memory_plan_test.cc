// Memory planning end to end on the ONNX zoo: peak live bytes against the lower
// bound at every exported shape, no system allocation when a shape repeats,
// bit-identical results with and without the plan, results that a later call
// cannot overwrite, bounded plans (--dynamic) and their run-time check, and the
// CLI's --stats, --no-memory-plan and inspect output.
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "compiler/driver/compile.h"
#include "compiler/frontend/onnx/onnx_importer.h"
#include "tests/e2e/e2e_test_util.h"
#include "vm/tensor_io/npy.h"
#include "vm/virtual_machine.h"

namespace strata {
namespace {

namespace fs = std::filesystem;
using testing::ExpectTensorNear;
using testing::SourcePath;

struct ZooRun {
  std::string name;
  std::vector<vm::Value> inputs;
  vm::Value expected;
};

std::vector<ZooRun> LoadRuns(const std::string& model) {
  std::vector<ZooRun> runs;
  const fs::path dir = SourcePath("tests/fixtures/onnx/" + model);
  for (int r = 0; fs::exists(dir / ("run_" + std::to_string(r))); ++r) {
    const fs::path run = dir / ("run_" + std::to_string(r));
    ZooRun out;
    out.name = model + "/run_" + std::to_string(r);
    for (int i = 0; fs::exists(run / ("in" + std::to_string(i) + ".npy")); ++i) {
      out.inputs.push_back(
          vm::Value::FromTensor(vm::ReadNpyFile((run / ("in" + std::to_string(i) + ".npy")).string()).value()));
    }
    out.expected = vm::Value::FromTensor(vm::ReadNpyFile((run / "out0.npy").string()).value());
    runs.push_back(std::move(out));
  }
  return runs;
}

std::shared_ptr<const vm::Executable> CompileZoo(const std::string& model, bool plan_memory,
                                                 const frontend::OnnxImportOptions& import = {}) {
  // Compiling the transformer takes seconds: each variant once per test program.
  static std::map<std::pair<std::string, bool>, std::shared_ptr<const vm::Executable>> cache;
  const bool cacheable = import.dim_bounds.empty();
  if (cacheable) {
    auto it = cache.find({model, plan_memory});
    if (it != cache.end()) return it->second;
  }
  auto module = frontend::ImportOnnxFile(SourcePath("tests/fixtures/onnx/" + model + "/model.onnx"), import);
  EXPECT_TRUE(module.ok()) << module.status().message();
  if (!module.ok()) return nullptr;
  driver::CompileOptions options;
  options.plan_memory = plan_memory;
  auto bytes = driver::Compile(std::move(module).value(), options);
  EXPECT_TRUE(bytes.ok()) << bytes.status().message();
  if (!bytes.ok()) return nullptr;
  auto exe = vm::Executable::LoadFromBytes(*bytes);
  EXPECT_TRUE(exe.ok()) << exe.status().message();
  if (!exe.ok()) return nullptr;
  if (cacheable) cache[{model, plan_memory}] = exe.value();
  return exe.value();
}

std::vector<uint8_t> Bytes(const vm::Value& v) {
  const vm::Tensor& t = *v.tensor();
  std::vector<uint8_t> bytes(static_cast<size_t>(t.num_bytes()));
  EXPECT_TRUE(t.CopyToHost(bytes).ok());
  return bytes;
}

class ZooMemoryPlan : public ::testing::TestWithParam<std::string> {};

TEST_P(ZooMemoryPlan, PeakLiveBytesStayWithinAQuarterOfTheLowerBound) {
  auto exe = CompileZoo(GetParam(), /*plan_memory=*/true);
  ASSERT_NE(exe, nullptr);
  std::vector<ZooRun> runs = LoadRuns(GetParam());
  ASSERT_GE(runs.size(), 3u);
  for (const ZooRun& run : runs) {
    vm::VirtualMachine machine(exe);
    auto result = machine.Invoke("main", run.inputs);
    ASSERT_TRUE(result.ok()) << run.name << ": " << result.status().message();
    ExpectTensorNear(*result, run.expected, 1e-4f, 1e-5f);
    const vm::MemoryStats& stats = machine.last_memory_stats();
    EXPECT_GT(stats.lower_bound_bytes, 0) << run.name;
    EXPECT_LE(static_cast<double>(stats.peak_live_bytes), 1.25 * static_cast<double>(stats.lower_bound_bytes))
        << run.name << ": peak live " << stats.peak_live_bytes << " bytes, lower bound " << stats.lower_bound_bytes;
  }
}

TEST_P(ZooMemoryPlan, RepeatedCallsAtOneShapeAllocateNothingFromTheSystem) {
  auto exe = CompileZoo(GetParam(), /*plan_memory=*/true);
  ASSERT_NE(exe, nullptr);
  for (const ZooRun& run : LoadRuns(GetParam())) {
    vm::VirtualMachine machine(exe);
    ASSERT_TRUE(machine.Invoke("main", run.inputs).ok());
    const vm::MemoryStats first = machine.last_memory_stats();
    EXPECT_GT(first.system_allocations, 0) << run.name;
    for (int call = 0; call < 3; ++call) {
      auto result = machine.Invoke("main", run.inputs);
      ASSERT_TRUE(result.ok()) << run.name << ": " << result.status().message();
      const vm::MemoryStats& stats = machine.last_memory_stats();
      EXPECT_EQ(stats.system_bytes, 0) << run.name << " call " << call + 2;
      EXPECT_EQ(stats.system_allocations, 0) << run.name << " call " << call + 2;
      EXPECT_EQ(stats.allocations, first.allocations) << run.name;
    }
    // KillAfterLastUse and Ret leave nothing behind: between calls the VM holds
    // no memory but the results its caller keeps.
    EXPECT_EQ(machine.memory_pool().live_bytes(), 0) << run.name;
  }
}

TEST_P(ZooMemoryPlan, ResultsAreBitIdenticalWithAndWithoutThePlan) {
  auto planned = CompileZoo(GetParam(), /*plan_memory=*/true);
  auto unplanned = CompileZoo(GetParam(), /*plan_memory=*/false);
  ASSERT_NE(planned, nullptr);
  ASSERT_NE(unplanned, nullptr);
  vm::VirtualMachine a(planned), b(unplanned);
  for (const ZooRun& run : LoadRuns(GetParam())) {
    auto x = a.Invoke("main", run.inputs);
    auto y = b.Invoke("main", run.inputs);
    ASSERT_TRUE(x.ok() && y.ok()) << run.name;
    EXPECT_EQ(Bytes(*x), Bytes(*y)) << run.name;
    // The plan replaces one allocation per intermediate with a few storages
    // (fusion leaves the small models few intermediates to plan).
    EXPECT_LE(a.last_memory_stats().allocations, b.last_memory_stats().allocations) << run.name;
    // Without the plan, KillAfterLastUse alone keeps the peak at the lower bound
    // (each tensor is its own block, freed right after its last reader).
    const vm::MemoryStats& unplanned_stats = b.last_memory_stats();
    EXPECT_LE(static_cast<double>(unplanned_stats.peak_live_bytes),
              1.25 * static_cast<double>(unplanned_stats.lower_bound_bytes))
        << run.name;
  }
}

TEST_P(ZooMemoryPlan, AResultKeptByTheCallerIsNotOverwrittenByLaterCalls) {
  auto exe = CompileZoo(GetParam(), /*plan_memory=*/true);
  ASSERT_NE(exe, nullptr);
  std::vector<ZooRun> runs = LoadRuns(GetParam());
  vm::VirtualMachine machine(exe);
  auto kept = machine.Invoke("main", runs[0].inputs);
  ASSERT_TRUE(kept.ok());
  const std::vector<uint8_t> before = Bytes(*kept);
  for (const ZooRun& run : runs) ASSERT_TRUE(machine.Invoke("main", run.inputs).ok());
  ASSERT_TRUE(machine.Invoke("main", runs[0].inputs).ok());
  EXPECT_EQ(Bytes(*kept), before);
  ExpectTensorNear(*kept, runs[0].expected, 1e-4f, 1e-5f);
}

INSTANTIATE_TEST_SUITE_P(Zoo, ZooMemoryPlan, ::testing::Values("mlp", "cnn", "transformer"));

// With --dynamic batch=1..32 every intermediate has a bounded size: the plan is
// one static arena, the same block serves every batch size, and a batch beyond
// the bound is refused before anything is written.
TEST(BoundedMemoryPlan, OneArenaServesEveryBatchAndTheBoundIsChecked) {
  frontend::OnnxImportOptions import;
  import.dim_bounds["batch"] = {1, 32};
  auto exe = CompileZoo("mlp", /*plan_memory=*/true, import);
  ASSERT_NE(exe, nullptr);
  const vm::VMFunction& main = exe->functions()[*exe->FindEntryPoint("main")];
  ASSERT_EQ(main.memory_plan.storages.size(), 1u);
  EXPECT_EQ(main.memory_plan.storages[0].name, "arena");
  EXPECT_GT(main.memory_plan.storages[0].static_bytes, 0);
  EXPECT_EQ(main.memory_plan.bounds, (std::vector<std::string>{"batch = 1..32"}));
  EXPECT_EQ(main.memory_plan.pooled.size(), 1u);  // the result

  vm::VirtualMachine machine(exe);
  std::vector<ZooRun> runs = LoadRuns("mlp");
  // The largest batch first: afterwards the arena block is cached.
  auto largest = machine.Invoke("main", runs.back().inputs);
  ASSERT_TRUE(largest.ok()) << largest.status().message();
  ExpectTensorNear(*largest, runs.back().expected, 1e-4f, 1e-5f);
  for (const ZooRun& run : runs) {
    auto result = machine.Invoke("main", run.inputs);
    ASSERT_TRUE(result.ok()) << run.name << ": " << result.status().message();
    ExpectTensorNear(*result, run.expected, 1e-4f, 1e-5f);
    // At most the result's block is new: the arena and the shape heap are reused.
    EXPECT_LE(machine.last_memory_stats().system_allocations, 1) << run.name;
  }

  auto too_big = vm::Tensor::Empty({33, 64}, DataType::F32());
  ASSERT_TRUE(too_big.ok());
  std::memset((*too_big)->data(), 0, static_cast<size_t>((*too_big)->num_bytes()));
  std::vector<vm::Value> too_big_args = {vm::Value::FromTensor(*too_big)};
  auto refused = machine.Invoke("main", too_big_args);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(
      refused.status().message().find("main: dimension 'batch' (the model was compiled for batch = 1..32): got 33"),
      std::string::npos)
      << refused.status().message();
  // The VM is still usable.
  auto again = machine.Invoke("main", runs[0].inputs);
  ASSERT_TRUE(again.ok()) << again.status().message();
  ExpectTensorNear(*again, runs[0].expected, 1e-4f, 1e-5f);
}

using MemoryCli = testing::StrataCliTest;

TEST_F(MemoryCli, StatsInspectAndNoMemoryPlan) {
  const std::string model = SourcePath("tests/fixtures/onnx/mlp/model.onnx");
  const std::string input = "--input=@" + SourcePath("tests/fixtures/onnx/mlp/run_2/in0.npy");
  const std::string expected = "--expected-output=@" + SourcePath("tests/fixtures/onnx/mlp/run_2/out0.npy");
  const std::string planned = (dir_ / "planned.stx").string();
  const std::string unplanned = (dir_ / "unplanned.stx").string();
  const std::string bounded = (dir_ / "bounded.stx").string();
  std::string out;
  ASSERT_EQ(Run("compile " + model + " -o " + planned, &out), 0) << out;
  ASSERT_EQ(Run("compile " + model + " --no-memory-plan -o " + unplanned, &out), 0) << out;
  ASSERT_EQ(Run("compile " + model + " --dynamic batch=1..64 -o " + bounded, &out), 0) << out;

  ASSERT_EQ(Run("run " + planned + " " + input + " " + expected + " --stats=per-call", &out), 0) << out;
  EXPECT_NE(out.find("memory, call 1: "), std::string::npos) << out;
  EXPECT_NE(out.find(" from the system ("), std::string::npos) << out;
  EXPECT_NE(out.find("peak live "), std::string::npos) << out;
  EXPECT_NE(out.find("lower bound "), std::string::npos) << out;
  // --stats alone: one summary after every repetition, and no per-call lines.
  ASSERT_EQ(Run("run " + planned + " " + input + " " + expected + " --stats --repeat 3", &out), 0) << out;
  EXPECT_EQ(out.find("memory, call "), std::string::npos) << out;
  EXPECT_NE(out.find("memory over 3 calls: "), std::string::npos) << out;
  EXPECT_NE(out.find(" after the first call)"), std::string::npos) << out;
  EXPECT_NE(out.find("largest lower bound "), std::string::npos) << out;
  ASSERT_EQ(Run("run " + unplanned + " " + input + " " + expected + " --stats", &out), 0) << out;
  EXPECT_NE(out.find("memory over 1 call: "), std::string::npos) << out;
  EXPECT_EQ(Run("run " + planned + " " + input + " --stats=sometimes", &out), 2) << out;
  EXPECT_NE(out.find("--stats takes no value or =per-call, got 'sometimes'"), std::string::npos) << out;

  ASSERT_EQ(Run("inspect " + planned, &out), 0) << out;
  EXPECT_NE(out.find("memory plan: "), std::string::npos) << out;
  EXPECT_NE(out.find("batch * 512 bytes  (symbolic, reused)"), std::string::npos) << out;
  EXPECT_NE(out.find("pooled  "), std::string::npos) << out;
  ASSERT_EQ(Run("inspect " + unplanned, &out), 0) << out;
  EXPECT_EQ(out.find("(symbolic, reused)"), std::string::npos) << out;
  ASSERT_EQ(Run("inspect " + bounded, &out), 0) << out;
  EXPECT_NE(out.find("(static arena)"), std::string::npos) << out;
  EXPECT_NE(out.find("bound checked at run time: batch = 1..64"), std::string::npos) << out;
}

}  // namespace
}  // namespace strata
