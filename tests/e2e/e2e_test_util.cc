// Helpers of the end-to-end tests.
#include "tests/e2e/e2e_test_util.h"

#include <sys/wait.h>

#include <array>
#include <cmath>
#include <cstdio>

#include "compiler/driver/compile.h"
#include "vm/npy.h"

namespace strata::testing {

std::string SourcePath(const std::string& relative) { return std::string(STRATA_SOURCE_DIR) + "/" + relative; }

std::shared_ptr<const vm::Executable> CompileExample(const std::string& relative_path) {
  StatusOr<ir::IRModule> module = driver::LoadModuleFile(SourcePath(relative_path));
  EXPECT_TRUE(module.ok()) << module.status().message();
  if (!module.ok()) return nullptr;
  StatusOr<std::vector<uint8_t>> bytes = driver::Compile(std::move(module).value(), {});
  EXPECT_TRUE(bytes.ok()) << bytes.status().message();
  if (!bytes.ok()) return nullptr;
  auto executable = vm::Executable::LoadFromBytes(*bytes);
  EXPECT_TRUE(executable.ok()) << executable.status().message();
  if (!executable.ok()) return nullptr;
  return *executable;
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

}  // namespace strata::testing
