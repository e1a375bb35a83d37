// Golden text tests: module in, one pass, module out, compared as text.
//
// Each tests/transform/golden/<name>.sir starts with a line naming the pass:
//     # RUN: CallTIRRewrite
// The test parses the file and normalizes it (struct info on every value, as
// any pass expects its input; skipped when the pass under test is Normalize),
// runs that one pass by registry name, prints the result with PrintModule and
// compares it exactly with <name>.expected.sir. The input is written in the form
// the pass meets in the pipeline (the output of the passes before it). Further
// directives, each on a line of its own:
//     # CHECK-UNCHANGED     the output must also equal the printed input (a pass
//                           that must not change an already-lowered module)
//     # PREPARE: A,B        passes run before the tested one, only where the
//                           input holds state the text format cannot carry (the
//                           device code RunCodegen records for PlaceOnDevices)
// The output must always reparse and print back to the same text.
//
// To regenerate the expected files after an intended change, run with
// STRATA_UPDATE_GOLDEN=1 (then read the diff before committing):
//     STRATA_UPDATE_GOLDEN=1 build/tests/transform_tests --gtest_filter='Golden*'
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "compiler/driver/pipeline.h"
#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"
#include "compiler/transform/pass.h"

namespace strata::transform {
namespace {

namespace fs = std::filesystem;

const char kExpectedSuffix[] = ".expected.sir";

fs::path GoldenDir() { return fs::path(STRATA_SOURCE_DIR) / "tests" / "transform" / "golden"; }

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Input files (not the expected outputs), sorted so test order is stable.
std::vector<std::string> GoldenInputs() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(GoldenDir(), ec)) {
    std::string file = entry.path().filename().string();
    if (EndsWith(file, ".sir") && !EndsWith(file, kExpectedSuffix)) names.push_back(file);
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::vector<std::string> SplitComma(const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream stream(text);
  std::string part;
  while (std::getline(stream, part, ',')) {
    part.erase(0, part.find_first_not_of(" \t"));
    part.erase(part.find_last_not_of(" \t\r") + 1);
    if (!part.empty()) parts.push_back(part);
  }
  return parts;
}

struct Directives {
  std::vector<std::string> passes;   // # RUN: exactly one
  std::vector<std::string> prepare;  // # PREPARE:
  bool check_unchanged = false;
};

Directives ParseDirectives(const std::string& text) {
  Directives d;
  std::stringstream stream(text);
  std::string line;
  while (std::getline(stream, line)) {
    if (line.rfind("# RUN:", 0) == 0) d.passes = SplitComma(line.substr(6));
    if (line.rfind("# PREPARE:", 0) == 0) d.prepare = SplitComma(line.substr(10));
    if (line.rfind("# CHECK-UNCHANGED", 0) == 0) d.check_unchanged = true;
  }
  return d;
}

class GoldenTest : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenTest, OutputMatchesExpectedFile) {
  const fs::path input_path = GoldenDir() / GetParam();
  const std::string input = ReadFile(input_path);
  ASSERT_FALSE(input.empty()) << "cannot read " << input_path;
  Directives directives = ParseDirectives(input);
  ASSERT_EQ(directives.passes.size(), 1u) << input_path << ": the first line must be '# RUN: Pass' (one pass)";

  StatusOr<ir::IRModule> module = ir::ParseModule(input, input_path.string());
  ASSERT_TRUE(module.ok()) << module.status().message();
  const std::string printed_input = ir::PrintModule(*module);
  driver::RegisterCompilerPasses();
  std::vector<std::string> passes = directives.prepare;
  if (directives.passes[0] != "Normalize") passes.insert(passes.begin(), "Normalize");
  passes.push_back(directives.passes[0]);
  StatusOr<Pipeline> pipeline = Pipeline::FromNames(passes);
  ASSERT_TRUE(pipeline.ok()) << pipeline.status().message();
  StatusOr<ir::IRModule> result = pipeline->Run(std::move(module).value());
  ASSERT_TRUE(result.ok()) << result.status().message();
  const std::string actual = ir::PrintModule(*result);

  std::string stem = GetParam().substr(0, GetParam().size() - 4);
  const fs::path expected_path = GoldenDir() / (stem + kExpectedSuffix);
  const char* update = std::getenv("STRATA_UPDATE_GOLDEN");
  if (update && std::string(update) == "1") {
    std::ofstream(expected_path, std::ios::binary) << actual;
  } else {
    ASSERT_TRUE(fs::exists(expected_path)) << expected_path << " is missing; run with STRATA_UPDATE_GOLDEN=1";
    EXPECT_EQ(ReadFile(expected_path), actual) << "output of " << GetParam() << " differs from " << expected_path;
  }
  if (directives.check_unchanged) {
    EXPECT_EQ(printed_input, actual) << "the passes changed a module they must leave alone";
  }

  StatusOr<ir::IRModule> reparsed = ir::ParseModule(actual, expected_path.string());
  ASSERT_TRUE(reparsed.ok()) << "the output does not reparse: " << reparsed.status().message();
  EXPECT_EQ(actual, ir::PrintModule(*reparsed)) << "the output does not print back to itself";
}

std::string CaseName(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param.substr(0, info.param.size() - 4);
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(Golden, GoldenTest, ::testing::ValuesIn(GoldenInputs()), CaseName);

TEST(GoldenFiles, DirectoryHoldsCases) {
  // Guards against a moved directory silently running no golden test at all.
  EXPECT_GE(GoldenInputs().size(), 10u) << "golden inputs not found in " << GoldenDir();
}

}  // namespace
}  // namespace strata::transform
