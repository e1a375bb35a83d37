// Helpers of the end-to-end tests.
#include "tests/e2e/e2e_test_util.h"

#include <array>
#include <cmath>
#include <cstdio>
#include <unistd.h>

#include <sys/wait.h>

#include "compiler/driver/compile.h"
#include "compiler/ir/parser.h"
#include "vm/tensor_io/npy.h"

namespace strata::testing {

std::string SourcePath(const std::string& relative) { return std::string(STRATA_SOURCE_DIR) + "/" + relative; }

namespace {

std::shared_ptr<const vm::Executable> CompileAndLoad(StatusOr<ir::IRModule> module,
                                                     const driver::CompileOptions& options) {
  EXPECT_TRUE(module.ok()) << module.status().message();
  if (!module.ok()) return nullptr;
  StatusOr<std::vector<uint8_t>> bytes = driver::Compile(std::move(module).value(), options);
  EXPECT_TRUE(bytes.ok()) << bytes.status().message();
  if (!bytes.ok()) return nullptr;
  auto executable = vm::Executable::LoadFromBytes(*bytes);
  EXPECT_TRUE(executable.ok()) << executable.status().message();
  if (!executable.ok()) return nullptr;
  return *executable;
}

}  // namespace

std::shared_ptr<const vm::Executable> CompileExample(const std::string& relative_path) {
  return CompileAndLoad(driver::LoadModuleFile(SourcePath(relative_path)), {});
}

std::shared_ptr<const vm::Executable> CompileText(const std::string& text, const std::string& name,
                                                  const driver::CompileOptions& options) {
  return CompileAndLoad(ir::ParseModule(text, name), options);
}

bool HasKernel(const vm::Executable& executable, const std::string& name) {
  for (const vm::NativeModuleInfo& module : executable.native_modules()) {
    for (const std::string& symbol : module.symbols) {
      if (symbol.find(name) != std::string::npos) return true;
    }
  }
  return false;
}

std::vector<float> DeterministicValues(int64_t count, uint32_t seed, float scale) {
  std::vector<float> out(static_cast<size_t>(count));
  uint32_t state = seed * 2654435761u + 7;
  for (float& v : out) {
    state = state * 1664525u + 1013904223u;
    v = (static_cast<float>(state >> 8) / static_cast<float>(1u << 23) - 1.0f) * scale;
  }
  return out;
}

std::string ConstTensorText(const std::vector<int64_t>& shape, const std::vector<float>& values) {
  std::string text = "const(Tensor[(";
  for (size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  text += shape.size() == 1 ? ",), f32], [" : "), f32], [";
  for (size_t i = 0; i < values.size(); ++i) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%s%.9g", i ? ", " : "", values[i]);
    text += buf;
  }
  return text + "])";
}

vm::Value LoadFixture(const std::string& relative_path) {
  auto tensor = vm::ReadNpyFile(SourcePath("tests/fixtures/" + relative_path));
  EXPECT_TRUE(tensor.ok()) << tensor.status().message();
  if (!tensor.ok()) return vm::Value();
  return vm::Value::FromTensor(std::move(tensor).value());
}

void ExpectTensorNear(const vm::Value& actual, const vm::Value& expected, float rtol, float atol) {
  ASSERT_TRUE(actual.is_tensor()) << "result is " << actual.Describe();
  ASSERT_TRUE(expected.is_tensor());
  const vm::Tensor& a = *actual.tensor();
  const vm::Tensor& e = *expected.tensor();
  ASSERT_EQ(a.TypeString(), e.TypeString());
  auto av = a.ToVector<float>();
  auto ev = e.ToVector<float>();
  ASSERT_TRUE(av.ok() && ev.ok());
  int reported = 0;
  for (size_t i = 0; i < av->size(); ++i) {
    float x = (*av)[i], y = (*ev)[i];
    if (std::fabs(x - y) > atol + rtol * std::fabs(y) && reported++ < 5) {
      ADD_FAILURE() << "element " << i << ": got " << x << ", expected " << y;
    }
  }
  EXPECT_EQ(reported, 0) << reported << " elements differ";
}

int RunCommand(const std::string& command, std::string* out_output) {
  out_output->clear();
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return -1;
  std::array<char, 4096> buffer;
  size_t n;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) out_output->append(buffer.data(), n);
  int status = pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

void StrataCliTest::SetUp() {
  const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
  dir_ = std::filesystem::temp_directory_path() /
         ("strata_cli_" + std::to_string(::getpid()) + "_" + test->test_suite_name() + "_" + test->name());
  std::filesystem::create_directories(dir_);
}

void StrataCliTest::TearDown() { std::filesystem::remove_all(dir_); }

int StrataCliTest::Run(const std::string& args, std::string* out) {
  return RunCommand(std::string(STRATA_BINARY) + " " + args, out);
}

void StrataCliTest::CompileMatmulRelu() {
  exe_ = (dir_ / "mr.stx").string();
  std::string out;
  ASSERT_EQ(Run("compile " + SourcePath("examples/matmul_relu.sir") + " -o " + exe_, &out), 0) << out;
}

}  // namespace strata::testing
