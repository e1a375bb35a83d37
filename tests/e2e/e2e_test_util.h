// Helpers of the end-to-end tests: compile an example, load fixtures, compare.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "compiler/driver/compile.h"
#include "vm/executable.h"
#include "vm/value.h"

namespace strata::testing {

// Absolute path of a file in the source tree.
std::string SourcePath(const std::string& relative);

// Compiles a .sir file of the source tree and loads the executable (fails the
// test on any error).
std::shared_ptr<const vm::Executable> CompileExample(const std::string& relative_path);

// Compiles module text (`name` for its messages) with `options` and loads the
// executable (fails the test on any error).
std::shared_ptr<const vm::Executable> CompileText(const std::string& text, const std::string& name,
                                                  const driver::CompileOptions& options = {});

// Whether a kernel whose symbol contains `name` is in `executable`.
bool HasKernel(const vm::Executable& executable, const std::string& name);

// Deterministic values in [-scale, scale) from `seed`.
std::vector<float> DeterministicValues(int64_t count, uint32_t seed, float scale = 1.0f);

// The text IR constant `const(Tensor[(shape), f32], [values])`.
std::string ConstTensorText(const std::vector<int64_t>& shape, const std::vector<float>& values);

// Reads a fixture .npy file (tests/fixtures/...).
vm::Value LoadFixture(const std::string& relative_path);

// Expects `actual` to be an f32 tensor equal to `expected` in shape and, within
// a relative tolerance of `rtol` (plus absolute `atol`), in values.
void ExpectTensorNear(const vm::Value& actual, const vm::Value& expected, float rtol = 1e-5f, float atol = 1e-5f);

// Runs a shell command and returns its exit code; stdout+stderr go to *out_output.
int RunCommand(const std::string& command, std::string* out_output);

// Tests of the strata command line: a fresh temporary directory per test
// (removed afterwards) and the binary under test (STRATA_BINARY).
class StrataCliTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;
  // Runs `strata <args>`; its stdout and stderr go to *out.
  int Run(const std::string& args, std::string* out);
  // Compiles examples/matmul_relu.sir into exe_ (dir_/mr.stx).
  void CompileMatmulRelu();

  std::filesystem::path dir_;
  std::string exe_;
};

}  // namespace strata::testing
