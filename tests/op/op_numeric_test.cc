// Numerical tests of the legalized operators: every case folder under
// tests/fixtures/ops/ (written by scripts/fixtures/ops_*.py with numpy) holds a
// program and several runs at different shapes. The program is compiled once
// through the default pipeline (LegalizeOps generates the kernels) and each run
// must match numpy within the case's tolerance.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "compiler/driver/compile.h"
#include "vm/executable.h"
#include "vm/tensor_io/npy.h"
#include "vm/tensor_io/tensor_compare.h"
#include "vm/virtual_machine.h"

namespace strata::op::testing {
namespace {

namespace fs = std::filesystem;

fs::path OpsFixtureDir() { return fs::path(STRATA_SOURCE_DIR) / "tests" / "fixtures" / "ops"; }

std::vector<std::string> CaseNames() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(OpsFixtureDir(), ec)) {
    if (entry.is_directory() && fs::exists(entry.path() / "program.sir")) names.push_back(entry.path().filename());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// The tensors run_dir/<prefix>0.npy, <prefix>1.npy, ... in order.
std::vector<vm::Ref<vm::Tensor>> ReadNumbered(const fs::path& run_dir, const std::string& prefix) {
  std::vector<vm::Ref<vm::Tensor>> out;
  for (int i = 0;; ++i) {
    fs::path path = run_dir / (prefix + std::to_string(i) + ".npy");
    if (!fs::exists(path)) break;
    StatusOr<vm::Ref<vm::Tensor>> tensor = vm::ReadNpyFile(path.string());
    EXPECT_TRUE(tensor.ok()) << tensor.status().message();
    if (tensor.ok()) out.push_back(*tensor);
  }
  return out;
}

class OpNumeric : public ::testing::TestWithParam<std::string> {};

TEST_P(OpNumeric, MatchesNumpyAtEveryShape) {
  const fs::path dir = OpsFixtureDir() / GetParam();
  StatusOr<ir::IRModule> module = driver::LoadModuleFile((dir / "program.sir").string());
  ASSERT_TRUE(module.ok()) << module.status().message();
  StatusOr<std::vector<uint8_t>> bytes = driver::Compile(std::move(module).value(), {});
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  auto exe = vm::Executable::LoadFromBytes(*bytes);
  ASSERT_TRUE(exe.ok()) << exe.status().message();
  vm::Tolerance tolerance;
  std::ifstream(dir / "tolerance.txt") >> tolerance.rtol >> tolerance.atol;

  int runs = 0;
  for (int k = 0; fs::exists(dir / ("run_" + std::to_string(k))); ++k, ++runs) {
    const fs::path run = dir / ("run_" + std::to_string(k));
    std::vector<vm::Value> inputs;
    for (auto& t : ReadNumbered(run, "in")) inputs.push_back(vm::Value::FromTensor(t));
    std::vector<vm::Ref<vm::Tensor>> expected = ReadNumbered(run, "out");
    ASSERT_FALSE(expected.empty()) << run;

    vm::VirtualMachine machine(*exe);
    StatusOr<vm::Value> result = machine.Invoke("main", inputs);
    ASSERT_TRUE(result.ok()) << run << ": " << result.status().message();
    std::vector<vm::Value> results;
    if (result->is_tuple()) {
      for (const vm::Value& field : result->tuple()->fields()) results.push_back(field);
    } else {
      results.push_back(*result);
    }
    ASSERT_EQ(results.size(), expected.size()) << run;
    for (size_t i = 0; i < results.size(); ++i) {
      ASSERT_TRUE(results[i].is_tensor()) << run << ": result " << i << " is " << results[i].Describe();
      StatusOr<vm::TensorComparison> c = vm::CompareTensors(*results[i].tensor(), *expected[i], tolerance);
      ASSERT_TRUE(c.ok()) << run << ": result " << i << ": " << c.status().message();
      EXPECT_TRUE(c->ok()) << run << ": result " << i << ": " << vm::DescribeMismatch(*c, tolerance);
    }
  }
  EXPECT_GE(runs, 2) << "a case needs runs at several shapes";
}

INSTANTIATE_TEST_SUITE_P(Fixtures, OpNumeric, ::testing::ValuesIn(CaseNames()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace strata::op::testing
