// The strata tool as a first-time user meets it: --version, the mistakes a new
// user makes (a typo in a command, a flag or a dimension name, a missing file,
// a folder, an empty model, a model given to `run`), - for standard input and
// output, and one exit code per kind of failure (apps/option_parsing.h).
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "serialization/format_version.h"
#include "tests/e2e/e2e_test_util.h"

namespace strata::testing {
namespace {

namespace fs = std::filesystem;

bool Contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

class CliFrontDoor : public StrataCliTest {
 protected:
  std::string Mlp() { return SourcePath("tests/fixtures/onnx/mlp/model.onnx"); }
  std::string Out(const std::string& name = "out.stx") { return (dir_ / name).string(); }
  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path) << text;
    return path;
  }
};

TEST_F(CliFrontDoor, VersionNamesTheProjectAndTheFormat) {
  std::string out;
  ASSERT_EQ(Run("--version", &out), 0) << out;
  const std::string format =
      std::to_string(serialization::kFormatMajor) + "." + std::to_string(serialization::kFormatMinor);
  EXPECT_EQ(out, "strata " + std::string(STRATA_VERSION) + " (executable format " + format + ")\n");
}

TEST_F(CliFrontDoor, TyposGetTheClosestName) {
  std::string out;
  EXPECT_EQ(Run("compil x.onnx", &out), 2);
  EXPECT_TRUE(Contains(out, "unknown command 'compil'; did you mean 'compile'?")) << out;
  EXPECT_EQ(Run("compile " + Mlp() + " --outptu " + Out(), &out), 2);
  EXPECT_TRUE(Contains(out, "unknown option '--outptu'; did you mean '--output'?")) << out;
  EXPECT_EQ(Run("run x.stx --inptu=1xf32=1", &out), 2);
  EXPECT_TRUE(Contains(out, "did you mean '--input'?")) << out;
  // A dimension name: the ones the model has, and the closest.
  EXPECT_EQ(Run("compile " + Mlp() + " --dynamic btach=1..8 -o " + Out(), &out), 1);
  EXPECT_TRUE(Contains(out, "no dynamic dimension named 'btach' (it has: batch); did you mean 'batch'?")) << out;
  EXPECT_EQ(Run("compile " + Mlp() + " --target cpu,nup -o " + Out(), &out), 2);
  EXPECT_TRUE(Contains(out, "unknown target 'nup' in 'cpu,nup' (known: cpu, npu); did you mean 'npu'?")) << out;
  EXPECT_FALSE(fs::exists(Out())) << "nothing is written for a refused compile";
}

TEST_F(CliFrontDoor, MissingArgumentsSayWhatToAdd) {
  std::string out;
  EXPECT_EQ(Run("compile", &out), 2);
  EXPECT_TRUE(Contains(out, "strata compile: no model given\nusage: strata compile MODEL.onnx|MODEL.sir|- -o")) << out;
  EXPECT_FALSE(Contains(out, "is required")) << out;
  EXPECT_EQ(Run("compile " + Mlp(), &out), 2);
  EXPECT_TRUE(Contains(out, "no output given: add -o OUT.stx (or -o - for standard output)")) << out;
  EXPECT_EQ(Run("compile a.onnx b.onnx -o " + Out(), &out), 2);
  EXPECT_TRUE(Contains(out, "too many files given")) << out;
  EXPECT_EQ(Run("run --input=1xf32=1", &out), 2);
  EXPECT_TRUE(Contains(out, "strata run: no executable given\nusage: strata run EXE.stx|-")) << out;
  EXPECT_EQ(Run("inspect", &out), 2);
  EXPECT_TRUE(Contains(out, "strata inspect: no executable given")) << out;
}

TEST_F(CliFrontDoor, FilesThatCannotBeReadOrWrittenExitWithThree) {
  std::string out;
  EXPECT_EQ(Run("compile " + (dir_ / "missing.onnx").string() + " -o " + Out(), &out), 3);
  EXPECT_TRUE(Contains(out, "cannot open '" + (dir_ / "missing.onnx").string() + "': No such file or directory"))
      << out;
  EXPECT_EQ(Run("compile " + dir_.string() + " -o " + Out(), &out), 3);
  EXPECT_TRUE(Contains(out, "it is a directory, not a model (.onnx or .sir)")) << out;
  EXPECT_EQ(Run("compile " + Mlp() + " -o " + (dir_ / "no" / "such" / "dir.stx").string(), &out), 3);
  EXPECT_TRUE(Contains(out, "the directory '" + (dir_ / "no" / "such").string() + "' does not exist")) << out;
  EXPECT_EQ(Run("compile " + Mlp() + " -o " + dir_.string(), &out), 3);
  EXPECT_TRUE(Contains(out, "it is a directory; give a file name")) << out;
  EXPECT_EQ(Run("run " + (dir_ / "missing.stx").string(), &out), 3);
  EXPECT_TRUE(Contains(out, "cannot open: No such file or directory")) << out;
}

TEST_F(CliFrontDoor, ModelsWithNothingToCallAreRefused) {
  std::string out;
  EXPECT_EQ(Run("compile " + Write("empty.sir", "\n\n") + " -o " + Out(), &out), 1);
  EXPECT_TRUE(Contains(out, "empty.sir: error: the file is empty: an executable needs at least one function to call"))
      << out;
  const std::string kernels_only = Write("kernels.sir", "prim_func @k(A: Buffer[(4,), f32]) {\n  A[0] = 1.0\n}\n");
  EXPECT_EQ(Run("compile " + kernels_only + " -o " + Out(), &out), 1);
  EXPECT_TRUE(Contains(out, "kernels.sir: error: the module defines no graph function (func @name)")) << out;
  EXPECT_FALSE(fs::exists(Out()));
}

TEST_F(CliFrontDoor, AReturnThatContradictsTheSignaturePointsAtTheReturn) {
  std::string out;
  const std::string path = Write("ret.sir",
                                 "func @main(x: Tensor[(n, 4), f32]) -> Tensor[(n, 5), f32] {\n"
                                 "  dataflow {\n"
                                 "    y: Tensor[(n, 4), f32] = relu(x)\n"
                                 "    output y\n"
                                 "  }\n"
                                 "  return y\n"
                                 "}\n");
  EXPECT_EQ(Run("compile " + path + " -o " + Out(), &out), 1);
  EXPECT_EQ(out, path +
                     ":6:3: error: Normalize: function 'main': the returned value has struct info Tensor[(n, 4), f32], "
                     "which contradicts the declared return struct info Tensor[(n, 5), f32]\n");
}

TEST_F(CliFrontDoor, TheWrongKindOfFileSaysWhatToRunInstead) {
  std::string out;
  EXPECT_EQ(Run("run " + Mlp() + " --input=1x64xf32=0", &out), 1);
  EXPECT_TRUE(Contains(out, "not a Strata executable")) << out;
  EXPECT_TRUE(Contains(out, "compile it first: strata compile " + Mlp() + " -o model.stx")) << out;
  CompileMatmulRelu();
  EXPECT_EQ(Run("compile " + exe_ + " -o " + Out(), &out), 1);
  EXPECT_TRUE(Contains(out, "this is a Strata executable, already compiled: run it with `strata run`")) << out;
  // Options for a device the executable does not use are a mistake, not ignored.
  EXPECT_EQ(Run("run " + exe_ +
                    " --device-options sim_npuu=memory=1M --input=2x3xf32=1,2,3,4,5,6 "
                    "--input=3x2xf32=1,-1,1,-1,1,-1",
                &out),
            1);
  EXPECT_TRUE(Contains(out,
                       "device options name device 'sim_npuu', which the executable does not use (it uses: "
                       "the CPU only)"))
      << out;
}

TEST_F(CliFrontDoor, DashIsStandardInputAndOutput) {
  std::string out;
  const std::string exe = Out("piped.stx");
  // A model from stdin (its format read from its bytes), an executable to stdout.
  ASSERT_EQ(
      RunCommand(std::string("cat ") + Mlp() + " | " + STRATA_BINARY + " compile - --dynamic batch=1..8 -o - > " + exe,
                 &out),
      0)
      << out;
  ASSERT_EQ(Run("inspect " + exe, &out), 0) << out;
  EXPECT_TRUE(Contains(out, "entry points: main")) << out;
  // An executable from stdin.
  std::string zeros = "0";
  for (int i = 1; i < 2 * 64; ++i) zeros += ",0";
  ASSERT_EQ(RunCommand(std::string(STRATA_BINARY) + " run - --input=2x64xf32=" + zeros + " < " + exe, &out), 0) << out;
  EXPECT_TRUE(Contains(out, "2x10xf32=")) << out;
  ASSERT_EQ(RunCommand(std::string("cat ") + exe + " | " + STRATA_BINARY + " inspect -", &out), 0) << out;
  EXPECT_TRUE(Contains(out, "entry points: main")) << out;
  // Text IR from stdin.
  ASSERT_EQ(RunCommand(std::string("cat ") + SourcePath("examples/matmul_relu.sir") + " | " + STRATA_BINARY +
                           " compile - -o " + Out("text.stx"),
                       &out),
            0)
      << out;
}

}  // namespace
}  // namespace strata::testing
