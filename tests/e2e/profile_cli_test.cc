// strata run --profile / --trace / --repeat / --warmup, as a user runs them:
// the profile table, a trace that parses as Chrome trace-event JSON, the
// latency summary, and the usage errors.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include <gtest/gtest.h>

#include "tests/e2e/e2e_test_util.h"
#include "tests/vm/profile_output.h"

namespace strata::testing {
namespace {

namespace fs = std::filesystem;

// matmul_relu's main: shape builtins, an allocation, then the kernels
// shape_func_main_0 (the symbolic shape), tir_matmul and tir_relu.
const char* const kInputs = " --input=2x3xf32=1,2,3,4,5,6 --input=3x2xf32=1,-1,1,-1,1,-1";

class ProfileCli : public StrataCliTest {
 protected:
  void SetUp() override {
    StrataCliTest::SetUp();
    CompileMatmulRelu();
  }
  std::string ReadText(const fs::path& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
};

TEST_F(ProfileCli, ProfilePrintsTimePerInstructionKindAndPerCallee) {
  std::string out;
  ASSERT_EQ(Run("run " + exe_ + kInputs + " --profile", &out), 0) << out;
  EXPECT_NE(out.find("2x2xf32=6,0,15,0"), std::string::npos) << out;  // the result is still printed
  EXPECT_NE(out.find("profile: 1 run of 'main', "), std::string::npos) << out;
  EXPECT_NE(out.find("instruction                count     total us    mean us   share\n"), std::string::npos) << out;
  EXPECT_EQ(ReportCount(out, "call compiled kernel"), 3) << out;
  EXPECT_EQ(ReportCount(out, "ret"), 1) << out;
  EXPECT_GT(ReportCount(out, "call library"), 5) << out;
  EXPECT_EQ(ReportCount(out, "tir_matmul"), 1) << out;
  EXPECT_EQ(ReportCount(out, "tir_relu"), 1) << out;
  EXPECT_EQ(ReportCount(out, "shape_func_main_0"), 1) << out;
  EXPECT_EQ(ReportCount(out, "vm.builtin.alloc_tensor"), 1) << out;
  EXPECT_EQ(out.find("latency over"), std::string::npos) << out;  // only with --repeat
}

TEST_F(ProfileCli, RepeatProfilesTheTimedRunsOnly) {
  std::string out;
  ASSERT_EQ(Run("run " + exe_ + kInputs + " --profile --repeat 4 --warmup 2", &out), 0) << out;
  EXPECT_NE(out.find("profile: 4 runs of 'main', "), std::string::npos) << out;
  EXPECT_EQ(ReportCount(out, "call compiled kernel"), 3 * 4) << out;
  EXPECT_EQ(ReportCount(out, "tir_matmul"), 4) << out;
  EXPECT_NE(out.find("latency over 4 runs after 2 warmup: median "), std::string::npos) << out;
  EXPECT_NE(out.find(" (profiled: includes the profiler's clock reads)\n"), std::string::npos) << out;
  // --warmup alone: one profiled run after the warmup calls, no latency line.
  ASSERT_EQ(Run("run " + exe_ + kInputs + " --profile --warmup 3", &out), 0) << out;
  EXPECT_NE(out.find("profile: 1 run of 'main', "), std::string::npos) << out;
  EXPECT_EQ(ReportCount(out, "tir_relu"), 1) << out;
  EXPECT_EQ(out.find("latency over"), std::string::npos) << out;
}

TEST_F(ProfileCli, RepeatPrintsMedianP90MinAndMean) {
  std::string out;
  ASSERT_EQ(Run("run " + exe_ + kInputs + " --repeat 25 --warmup 3", &out), 0) << out;
  EXPECT_NE(out.find("2x2xf32=6,0,15,0"), std::string::npos) << out;
  const std::regex line(
      R"(latency over 25 runs after 3 warmup: median ([0-9.]+) us, p90 ([0-9.]+) us, min ([0-9.]+) us, mean ([0-9.]+) us\n)");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(out, m, line)) << out;
  const double median = std::stod(m[1]), p90 = std::stod(m[2]), min = std::stod(m[3]), mean = std::stod(m[4]);
  EXPECT_GT(min, 0);
  EXPECT_LE(min, median);
  EXPECT_LE(median, p90);
  EXPECT_LE(min, mean);
  EXPECT_EQ(out.find("profile:"), std::string::npos) << out;
  EXPECT_EQ(out.find("profiled"), std::string::npos) << out;

  ASSERT_EQ(Run("run " + exe_ + kInputs + " --repeat=1", &out), 0) << out;
  EXPECT_NE(out.find("latency over 1 run: median "), std::string::npos) << out;
}

TEST_F(ProfileCli, TraceWritesChromeTraceJsonWithOneEventPerCall) {
  std::string out;
  const fs::path trace = dir_ / "trace.json";
  ASSERT_EQ(Run("run " + exe_ + kInputs + " --trace=" + trace.string() + " --repeat 3", &out), 0) << out;
  EXPECT_EQ(out.find("profile:"), std::string::npos) << out;  // --trace alone prints no table
  std::string error;
  std::vector<TraceSpan> spans = ParseTrace(ReadText(trace), &error);
  ASSERT_TRUE(error.empty()) << error;
  std::map<std::string, int> by_name, by_cat;
  double run_begin = -1, run_end = -1;
  for (const TraceSpan& span : spans) {
    EXPECT_EQ(span.ph, "X");
    ++by_name[span.name];
    ++by_cat[span.cat];
    if (span.cat == "invoke") {
      EXPECT_GE(span.begin, run_end);  // runs do not overlap
      run_begin = span.begin;
      run_end = span.end;
    } else {
      EXPECT_GE(span.begin, run_begin - 0.0021) << span.name;
      EXPECT_LE(span.end, run_end + 0.0021) << span.name;
    }
  }
  EXPECT_EQ(by_cat["invoke"], 3);
  EXPECT_EQ(by_name["main"], 3);
  EXPECT_EQ(by_cat["compiled kernel"], 3 * 3);
  EXPECT_EQ(by_name["tir_matmul"], 3);
  EXPECT_EQ(by_name["tir_relu"], 3);
  EXPECT_EQ(by_name["vm.builtin.alloc_tensor"], 3);
  EXPECT_GT(by_cat["library"], 3 * 5);

  // With --profile the same calls are in the table.
  ASSERT_EQ(Run("run " + exe_ + kInputs + " --trace=" + trace.string() + " --profile", &out), 0) << out;
  EXPECT_EQ(ReportCount(out, "tir_matmul"), 1) << out;
  spans = ParseTrace(ReadText(trace), &error);
  ASSERT_TRUE(error.empty()) << error;
  EXPECT_EQ(spans.size(),
            static_cast<size_t>(1 + ReportCount(out, "call compiled kernel") + ReportCount(out, "call library")));
}

TEST_F(ProfileCli, AFailedCallStillReportsWhatRan) {
  std::string out;
  // k mismatch: the second match_shape fails after the first calls ran.
  EXPECT_EQ(Run("run " + exe_ + " --input=2x3xf32=1,2,3,4,5,6 --input=4x2xf32=1,2,3,4,5,6,7,8 --profile", &out), 1);
  EXPECT_NE(out.find("error: functions[0] 'main': instruction at word "), std::string::npos) << out;
  EXPECT_NE(out.find(" (call): main: parameter 'w' (match_shape): dimension 0 expected n = 3, got 4"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("profile: 1 run of 'main', "), std::string::npos) << out;
  EXPECT_EQ(ReportCount(out, "call compiled kernel"), -1) << out;  // no compiled kernel ran
  EXPECT_GT(ReportCount(out, "call library"), 0) << out;
}

TEST_F(ProfileCli, BadTimingOptionsAreUsageErrors) {
  std::string out;
  EXPECT_EQ(Run("run " + exe_ + kInputs + " --repeat=0", &out), 2);
  EXPECT_EQ(out, "strata run: --repeat must be between 1 and 10000000, got 0\n");
  EXPECT_EQ(Run("run " + exe_ + kInputs + " --repeat=10000001", &out), 2);
  EXPECT_EQ(out, "strata run: --repeat must be between 1 and 10000000, got 10000001\n");
  EXPECT_EQ(Run("run " + exe_ + kInputs + " --warmup=-1", &out), 2);
  EXPECT_EQ(out, "strata run: --warmup must be between 0 and 10000000, got -1\n");
  EXPECT_EQ(Run("run " + exe_ + kInputs + " --repeat=many", &out), 2);
  EXPECT_EQ(out.substr(0, out.find('\n')), "strata run: the argument ('many') for option '--repeat' is invalid");
  EXPECT_EQ(Run("run " + exe_ + kInputs + " --repeat=2.5", &out), 2);
  EXPECT_NE(out.find("for option '--repeat' is invalid"), std::string::npos) << out;
  EXPECT_EQ(Run("run " + exe_ + kInputs + " --trace ''", &out), 2);
  EXPECT_EQ(out, "strata run: --trace needs a file name (--trace=trace.json)\n");
  EXPECT_EQ(Run("run " + exe_ + kInputs + " --trace=", &out), 2);  // refused by the option parser itself
  EXPECT_EQ(out.substr(0, out.find('\n')),
            "strata run: the argument for option '--trace' should follow immediately after the equal sign");
  const std::string unwritable = (dir_ / "no" / "such" / "dir" / "t.json").string();
  EXPECT_EQ(Run("run " + exe_ + kInputs + " --trace=" + unwritable, &out), 3);
  EXPECT_EQ(out, "strata run: cannot write the trace to '" + unwritable + "': No such file or directory\n");
}

}  // namespace
}  // namespace strata::testing
