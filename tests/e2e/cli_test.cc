// The strata tool as a user runs it: compile, run, inspect, and the errors it
// gives for bad arguments and corrupt executables (one line; the exit codes of
// apps/option_parsing.h). cli_front_door_test.cc has the first-use mistakes.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "tests/e2e/e2e_test_util.h"
#include "vm/tensor_io/npy.h"

namespace strata::testing {
namespace {

namespace fs = std::filesystem;

class Cli : public StrataCliTest {
 protected:
  void SetUp() override {
    StrataCliTest::SetUp();
    CompileMatmulRelu();
  }
  std::vector<uint8_t> ReadExecutable() {
    std::ifstream in(exe_, std::ios::binary);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
  }
  std::string WriteVariant(const std::string& name, const std::vector<uint8_t>& bytes) {
    std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    return path;
  }
};

TEST_F(Cli, RunWithNpyAndInlineInputsWritesNpyOutput) {
  std::string out;
  std::string y = (dir_ / "y.npy").string();
  ASSERT_EQ(Run("run " + exe_ + " --function main --input=@" + SourcePath("tests/fixtures/matmul_relu/x_3x4x2.npy") +
                    " --input=@" + SourcePath("tests/fixtures/matmul_relu/w_3x4x2.npy") + " --output=" + y,
                &out),
            0)
      << out;
  auto actual = vm::ReadNpyFile(y);
  ASSERT_TRUE(actual.ok()) << actual.status().message();
  ExpectTensorNear(vm::Value::FromTensor(*actual), LoadFixture("matmul_relu/y_3x4x2.npy"), 1e-4f, 1e-4f);
}

TEST_F(Cli, RunPrintsInlineResult) {
  std::string out;
  ASSERT_EQ(Run("run " + exe_ + " --input=2x3xf32=1,2,3,4,5,6 --input=3x2xf32=1,-1,1,-1,1,-1", &out), 0) << out;
  EXPECT_NE(out.find("2x2xf32=6,0,15,0"), std::string::npos) << out;
}

// --threads sizes the kernels' pool (here 1 and 3 threads on any machine): the
// same result either way; a count out of range is a usage error.
TEST_F(Cli, ThreadsOptionRunsTheKernelsOnThatManyThreads) {
  const std::string inputs = " --input=@" + SourcePath("tests/fixtures/matmul_relu/x_7x13x5.npy") + " --input=@" +
                             SourcePath("tests/fixtures/matmul_relu/w_7x13x5.npy") + " --expected-output=@" +
                             SourcePath("tests/fixtures/matmul_relu/y_7x13x5.npy");
  for (const char* threads : {"1", "3"}) {
    std::string out;
    EXPECT_EQ(Run("run " + exe_ + inputs + " --threads " + threads, &out), 0) << out;
  }
  std::string out;
  EXPECT_EQ(Run("run " + exe_ + inputs + " --threads 0", &out), 2);
  EXPECT_NE(out.find("strata run: --threads: the thread count must be between 1 and 4096, got 0"), std::string::npos)
      << out;
}

TEST_F(Cli, ExpectedOutputChecksTheResult) {
  std::string out;
  const std::string inputs = " --input=@" + SourcePath("tests/fixtures/matmul_relu/x_7x13x5.npy") + " --input=@" +
                             SourcePath("tests/fixtures/matmul_relu/w_7x13x5.npy");
  ASSERT_EQ(Run("run " + exe_ + inputs + " --expected-output=@" + SourcePath("tests/fixtures/matmul_relu/y_7x13x5.npy"),
                &out),
            0)
      << out;
  EXPECT_EQ(out.rfind("[ok] result #0 matches (Tensor[(7, 5), f32], max abs diff ", 0), 0u) << out;

  const std::string small = " --input=2x3xf32=1,2,3,4,5,6 --input=3x2xf32=1,-1,1,-1,1,-1";
  EXPECT_EQ(Run("run " + exe_ + small + " --expected-output=2x2xf32=6,0,15.5,0", &out), 1);
  EXPECT_EQ(out,
            "[FAILED] result #0: 1 of 4 elements differ by more than 1e-05 + 0.0001 * |expected|; first at [1, 0]: got "
            "15, expected 15.5; max abs diff 0.5\n")
      << out;
  EXPECT_EQ(Run("run " + exe_ + small + " --expected-output=2x2xf32=6,0,15.5,0 --rtol=0.04", &out), 0) << out;
  EXPECT_EQ(Run("run " + exe_ + small + " --expected-output=4xf32=6,0,15,0", &out), 1);
  EXPECT_EQ(out, "[FAILED] result #0: got Tensor[(2, 2), f32], expected Tensor[(4,), f32]\n") << out;
  EXPECT_EQ(Run("run " + exe_ + small + " --expected-output=2x2xf32=6,0,15,0 --expected-output=1xf32=1", &out), 1);
  EXPECT_EQ(out, "strata run: 2 --expected-output values given, but the function returned 1\n") << out;
  EXPECT_EQ(Run("run " + exe_ + small + " --expected-output=@missing.npy", &out), 3);
  EXPECT_EQ(out, "strata run: --expected-output #0: missing.npy: cannot open: No such file or directory\n") << out;
  EXPECT_EQ(Run("run " + exe_ + small + " --expected-output=2x2xf32=6,0,15,0 --atol=-1", &out), 2);
}

TEST_F(Cli, OperatorErrorsPointAtTheBindingInTheSource) {
  const std::string path = (dir_ / "bad_broadcast.sir").string();
  std::ofstream(path) << "func @main(x: Tensor[(n, 4), f32], y: Tensor[(3,), f32]) -> Tensor[(n, 4), f32] {\n"
                         "  dataflow {\n"
                         "    z = add(x, y)\n"
                         "    output z\n"
                         "  }\n"
                         "  return z\n"
                         "}\n";
  std::string out;
  EXPECT_EQ(Run("compile " + path + " -o " + (dir_ / "x.stx").string(), &out), 1);
  EXPECT_EQ(out, path +
                     ":3:5: error: Normalize: function 'main', binding 'z': add: cannot broadcast x: Tensor[(n, 4), "
                     "f32] with y: Tensor[(3,), f32]: dimension 1 of the result would be both 4 and 3\n");
}

TEST_F(Cli, CompileAndRunAnOnnxModelWithDynamicAxes) {
  std::string out;
  const std::string model = SourcePath("tests/fixtures/onnx/mlp/model.onnx");
  const std::string stx = (dir_ / "mlp.stx").string();
  ASSERT_EQ(Run("compile " + model + " --dynamic batch=1..64 -o " + stx, &out), 0) << out;
  for (int k : {0, 2}) {
    const std::string run = SourcePath("tests/fixtures/onnx/mlp/run_" + std::to_string(k));
    ASSERT_EQ(Run("run " + stx + " --input=@" + run + "/in0.npy --expected-output=@" + run + "/out0.npy", &out), 0)
        << out;
  }
  EXPECT_EQ(Run("compile " + model + " --dynamic batch=64..1 -o " + stx, &out), 2);
  EXPECT_EQ(out, "strata compile: --dynamic expects NAME=LO..HI with 0 <= LO <= HI, got 'batch=64..1'\n");
  EXPECT_EQ(Run("compile " + model + " --dynamic seq=1..8 -o " + stx, &out), 1);
  EXPECT_NE(out.find("the model has no dynamic dimension named 'seq'"), std::string::npos) << out;
}

TEST_F(Cli, DispatchAndTirLibraryOptions) {
  std::string out;
  const std::string concat = (dir_ / "concat.stx").string();
  ASSERT_EQ(Run("compile " + SourcePath("examples/custom_concat/model.sir") + " --tir-library " +
                    SourcePath("examples/custom_concat/concat_kernel.sir") + " -o " + concat,
                &out),
            0)
      << out;
  ASSERT_EQ(Run("inspect " + concat, &out), 0) << out;
  EXPECT_NE(out.find("symbol strata_kernel_concat_rows"), std::string::npos) << out;

  const std::string mlp = (dir_ / "mlp.stx").string();
  ASSERT_EQ(Run("compile " + SourcePath("examples/mlp.sir") + " --dispatch cpu-blas -o " + mlp, &out), 0) << out;
  ASSERT_EQ(Run("inspect " + mlp, &out), 0) << out;
  EXPECT_NE(out.find("strata.blas.dense_bias  library"), std::string::npos) << out;

  EXPECT_EQ(Run("compile " + SourcePath("examples/mlp.sir") + " --dispatch no-such-pass -o " + mlp, &out), 1);
  EXPECT_NE(out.find("unknown pass 'no-such-pass'"), std::string::npos) << out;
  EXPECT_EQ(Run("compile " + SourcePath("examples/mlp.sir") + " --tir-library /nonexistent.sir -o " + mlp, &out), 3);
  EXPECT_NE(out.find("--tir-library: cannot open '/nonexistent.sir': No such file or directory"), std::string::npos)
      << out;
}

TEST_F(Cli, CompileForAnOlderCpuRecordsItsFeaturesAndRuns) {
  std::string out;
  std::string portable = (dir_ / "v2.stx").string();
  ASSERT_EQ(Run("compile " + SourcePath("examples/matmul_relu.sir") + " -o " + portable + " --cpu=x86-64-v2", &out), 0)
      << out;
  ASSERT_EQ(Run("inspect " + portable, &out), 0) << out;
  EXPECT_NE(out.find("cpu x86-64-v2"), std::string::npos) << out;
  EXPECT_NE(out.find("cpu features: sse2 sse3 ssse3 sse4.1 sse4.2 popcnt\n"), std::string::npos) << out;
  ASSERT_EQ(Run("run " + portable + " --input=2x3xf32=1,2,3,4,5,6 --input=3x2xf32=1,-1,1,-1,1,-1", &out), 0) << out;
  EXPECT_NE(out.find("2x2xf32=6,0,15,0"), std::string::npos) << out;

  EXPECT_EQ(Run("compile " + SourcePath("examples/matmul_relu.sir") + " -o " + portable + " --cpu=i486-turbo", &out),
            1);
  EXPECT_NE(out.find("unknown CPU 'i486-turbo'"), std::string::npos) << out;
}

TEST_F(Cli, ScalarInputsDriveAGraphLevelIf) {
  // main(c: Prim[bool], x) = c ? relu(x) : negate(x)
  std::string out;
  std::string exe = (dir_ / "if_else.stx").string();
  ASSERT_EQ(Run("compile " + SourcePath("tests/transform/golden/if_else.sir") + " -o " + exe, &out), 0) << out;
  ASSERT_EQ(Run("run " + exe + " --input=true --input=3xf32=-1,2,-3", &out), 0) << out;
  EXPECT_EQ(out, "3xf32=0,2,0\n");
  ASSERT_EQ(Run("run " + exe + " --input=0 --input=3xf32=-1,2,-3", &out), 0) << out;
  EXPECT_EQ(out, "3xf32=1,-2,3\n");
  EXPECT_EQ(Run("run " + exe + " --input=2.5 --input=3xf32=-1,2,-3", &out), 1);
  EXPECT_NE(out.find("parameter 'c': expected a bool scalar, got Float 2.5"), std::string::npos) << out;
}

TEST_F(Cli, ShapeMismatchIsOneClearErrorWithExitCodeOne) {
  std::string out;
  EXPECT_EQ(
      Run("run " + exe_ + " --input=3x4xf32=1,2,3,4,5,6,7,8,9,10,11,12 --input=5x2xf32=1,2,3,4,5,6,7,8,9,10", &out), 1);
  EXPECT_NE(out.find("dimension 0"), std::string::npos) << out;
}

TEST_F(Cli, BadInlineInputSaysHowManyValuesWereExpected) {
  std::string out;
  EXPECT_EQ(Run("run " + exe_ + " --input=2x3xf32=1,2,3 --input=3x2xf32=1,-1,1,-1,1,-1", &out), 1);
  EXPECT_NE(out.find("6"), std::string::npos) << out;
}

TEST_F(Cli, InspectShowsVersionFunctionsBytecodeAndKernels) {
  std::string out;
  ASSERT_EQ(Run("inspect " + exe_, &out), 0) << out;
  // The matmul's result is an intermediate: the plan puts it in a symbolic storage.
  for (const char* expected :
       {"format 1.7", "checksums: XXH3-64 over every byte, verified",
        "[0] main  bytecode  (x: Tensor[ndim=2, f32], w: Tensor[ndim=2, f32]) -> Tensor[(m, k), f32]", "tir_matmul",
        "tir_relu", "vm.builtin.match_shape", "ret", "memory plan: 1 storage, 1 tensor planned, 1 pooled",
        "(symbolic, reused)"}) {
    EXPECT_NE(out.find(expected), std::string::npos) << "missing '" << expected << "' in:\n" << out;
  }
}

TEST_F(Cli, DumpIrWritesTheModuleAfterEachPass) {
  std::string out;
  fs::path dump = dir_ / "ir";
  ASSERT_EQ(Run("compile " + SourcePath("examples/matmul_relu.sir") + " -o " + (dir_ / "x.stx").string() +
                    " --dump-ir " + dump.string(),
                &out),
            0)
      << out;
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dump)) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  ASSERT_GE(names.size(), 3u);
  EXPECT_EQ(names.front(), "00-Input.sir");
  bool saw_rewrite = false, saw_shape_lower = false;
  for (const auto& n : names) {
    saw_rewrite |= n.find("CallTIRRewrite") != std::string::npos;
    saw_shape_lower |= n.find("VMShapeLower") != std::string::npos;
  }
  EXPECT_TRUE(saw_rewrite && saw_shape_lower);
}

TEST_F(Cli, CompileErrorGivesFileLineColumn) {
  std::string bad = (dir_ / "bad.sir").string();
  std::ofstream(bad) << "func @main(x: Tensor[(n,), f32]) -> Tensor[(n,), f32] {\n  return y\n}\n";
  std::string out;
  EXPECT_EQ(Run("compile " + bad + " -o " + (dir_ / "bad.stx").string(), &out), 1);
  EXPECT_NE(out.find("bad.sir:2:"), std::string::npos) << out;
}

// Every corrupt variant must give exit code 1 (3 for a file that is not
// there) and a one-line error, never a crash.
void ExpectOneLineError(int code, const std::string& out, const std::string& what, int expected_code = 1) {
  EXPECT_EQ(code, expected_code) << what << ": " << out;
  ASSERT_FALSE(out.empty()) << what;
  EXPECT_EQ(out.find('\n'), out.size() - 1) << what << ": not one line:\n" << out;
  EXPECT_TRUE(out.rfind("strata run: error: ", 0) == 0 || out.rfind("strata inspect: error: ", 0) == 0)
      << what << ": " << out;
}

TEST_F(Cli, CorruptExecutablesGiveOneLineErrors) {
  std::vector<uint8_t> good = ReadExecutable();
  ASSERT_GT(good.size(), 64u);
  const std::string args = " --input=2x3xf32=1,2,3,4,5,6 --input=3x2xf32=1,-1,1,-1,1,-1";
  std::string out;

  std::vector<uint8_t> truncated(good.begin(), good.begin() + good.size() / 2);
  ExpectOneLineError(Run("run " + WriteVariant("truncated.stx", truncated) + args, &out), out, "truncated");

  std::vector<uint8_t> magic = good;
  magic[4] = 'X';
  ExpectOneLineError(Run("run " + WriteVariant("magic.stx", magic) + args, &out), out, "wrong magic");
  EXPECT_NE(out.find("STRX"), std::string::npos) << out;

  ExpectOneLineError(Run("run " + WriteVariant("empty.stx", {}) + args, &out), out, "empty file");
  ExpectOneLineError(Run("inspect " + WriteVariant("empty2.stx", {1, 2, 3}), &out), out, "tiny file");
  const std::string missing = (dir_ / "does_not_exist.stx").string();
  ExpectOneLineError(Run("run " + missing + args, &out), out, "missing file", 3);
  EXPECT_EQ(out, "strata run: error: " + missing + ": cannot open: No such file or directory\n");

  // Flip bytes across the file: each run either fails cleanly or runs; never crashes.
  for (size_t pos = 0; pos < good.size(); pos += std::max<size_t>(1, good.size() / 97)) {
    std::vector<uint8_t> flipped = good;
    flipped[pos] ^= 0xFF;
    int code = Run("run " + WriteVariant("flip.stx", flipped) + args, &out);
    EXPECT_TRUE(code == 0 || code == 1) << "byte " << pos << ": exit " << code << "\n" << out;
  }
}

// An ONNX model's own input and output names (format 1.6): inspect lists them,
// run labels each result with its name; a model without them prints as before.
TEST_F(Cli, InspectAndRunUseTheModelsInputAndOutputNames) {
  std::string out;
  const std::string fixture = SourcePath("tests/fixtures/onnx_ops/graph_io_names");
  const std::string stx = (dir_ / "io.stx").string();
  ASSERT_EQ(Run("compile " + fixture + "/model.onnx -o " + stx, &out), 0) << out;
  ASSERT_EQ(Run("inspect " + stx, &out), 0) << out;
  EXPECT_NE(out.find("\n      model input names: \"input.1\", \"mask/0\"\n"), std::string::npos) << out;
  EXPECT_NE(out.find("\n      model output names: \"probs\", \"logits\"\n"), std::string::npos) << out;
  ASSERT_EQ(Run("inspect " + exe_, &out), 0) << out;
  EXPECT_EQ(out.find("model input names"), std::string::npos) << out;
  EXPECT_EQ(out.find("model output names"), std::string::npos) << out;

  const std::string inputs = " --input=@" + fixture + "/run_1/in0.npy --input=@" + fixture + "/run_1/in1.npy";
  ASSERT_EQ(Run("run " + stx + inputs, &out), 0) << out;
  EXPECT_EQ(out.rfind("probs: 3x3xf32=", 0), 0u) << out;
  EXPECT_NE(out.find("\nlogits: 3x3xf32="), std::string::npos) << out;
  const std::string expected =
      " --expected-output=@" + fixture + "/run_1/out0.npy --expected-output=@" + fixture + "/run_1/out1.npy";
  ASSERT_EQ(Run("run " + stx + inputs + expected, &out), 0) << out;
  EXPECT_EQ(out.rfind("[ok] result #0 (probs) matches (Tensor[(3, 3), f32], max abs diff ", 0), 0u) << out;
  EXPECT_NE(out.find("\n[ok] result #1 (logits) matches (Tensor[(3, 3), f32], max abs diff "), std::string::npos)
      << out;
  const std::string swapped =
      " --expected-output=@" + fixture + "/run_1/out1.npy --expected-output=@" + fixture + "/run_1/out0.npy";
  EXPECT_EQ(Run("run " + stx + inputs + swapped, &out), 1) << out;
  EXPECT_EQ(out.rfind("[FAILED] result #0 (probs): ", 0), 0u) << out;
  EXPECT_NE(out.find("[FAILED] result #1 (logits): "), std::string::npos) << out;
  // --output still takes the results in order.
  const std::string probs = (dir_ / "probs.npy").string(), logits = (dir_ / "logits.npy").string();
  ASSERT_EQ(Run("run " + stx + inputs + " --output=" + probs + " --output=" + logits, &out), 0) << out;
  ASSERT_EQ(Run("run " + stx + inputs + " --expected-output=@" + probs + " --expected-output=@" + logits, &out), 0)
      << out;
}

// Damaged weights: refused naming the constant unless the checksums are
// skipped, and then the model runs with a wrong result. The constant's index,
// size and offset come from the loaded file, not from the message.
TEST_F(Cli, DamagedWeightsAreRefusedUnlessChecksumsAreSkipped) {
  std::string out;
  const std::string stx = (dir_ / "mlp.stx").string();
  ASSERT_EQ(Run("compile " + SourcePath("tests/fixtures/onnx/mlp/model.onnx") + " -o " + stx, &out), 0) << out;
  const std::string run = SourcePath("tests/fixtures/onnx/mlp/run_0");
  const std::string args = " --input=@" + run + "/in0.npy --expected-output=@" + run + "/out0.npy";
  ASSERT_EQ(Run("run " + stx + args, &out), 0) << out;
  ASSERT_EQ(Run("inspect " + stx, &out), 0) << out;
  EXPECT_NE(out.find("checksums: XXH3-64 over every byte, verified\n"), std::string::npos) << out;

  vm::LoadOptions describe_only;
  describe_only.resolve = false;
  auto exe = vm::Executable::LoadFromFile(stx, describe_only);
  ASSERT_TRUE(exe.ok()) << exe.status().message();
  size_t weight = 0, weight_bytes = 0, weight_offset = 0;
  for (size_t i = 0; i < (*exe)->constants().size(); ++i) {
    const vm::Value& c = (*exe)->constants()[i];
    if (!c.is_tensor() || static_cast<size_t>(c.tensor()->num_bytes()) <= weight_bytes) continue;
    weight = i;
    weight_bytes = static_cast<size_t>(c.tensor()->num_bytes());
    weight_offset = static_cast<size_t>(static_cast<const uint8_t*>(c.tensor()->data()) - (*exe)->bytes().data());
  }
  ASSERT_GE(weight_bytes, 1024u);
  std::ifstream in(stx, std::ios::binary);
  std::vector<uint8_t> damaged((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_EQ(damaged.size(), (*exe)->bytes().size());
  // The sign of every element (f32, little-endian): every result changes.
  ASSERT_EQ((*exe)->constants()[weight].tensor()->dtype(), DataType::F32());
  for (size_t i = 3; i < weight_bytes; i += 4) damaged[weight_offset + i] ^= 0x80;
  const std::string bad = WriteVariant("damaged_weight.stx", damaged);

  ExpectOneLineError(Run("run " + bad + args, &out), out, "damaged weight");
  EXPECT_EQ(out, "strata run: error: " + bad + ": checksum mismatch in constants[" + std::to_string(weight) +
                     "] (tensor data, " + std::to_string(weight_bytes) + " bytes at offset " +
                     std::to_string(weight_offset) + "): the file is damaged\n");
  ExpectOneLineError(Run("inspect " + bad, &out), out, "inspect damaged weight");
  ASSERT_EQ(Run("inspect " + bad + " --no-verify-checksums", &out), 0) << out;
  EXPECT_NE(out.find("checksums: XXH3-64 over every byte, not verified"), std::string::npos) << out;
  // Skipped: it runs, and the result is wrong.
  EXPECT_EQ(Run("run " + bad + " --no-verify-checksums --input=@" + run + "/in0.npy", &out), 0) << out;
  EXPECT_EQ(Run("run " + bad + " --no-verify-checksums" + args, &out), 1) << out;
  EXPECT_NE(out.find("[FAILED] result #0"), std::string::npos) << out;
}

}  // namespace
}  // namespace strata::testing
