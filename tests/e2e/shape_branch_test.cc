// A graph function that branches on its input's shape values: the condition
// prim(n == 2 && m * 2 == 6) is computed into the shape heap and read back by
// vm.builtin.heap_scalar (VMShapeLower), so an executable can run a function
// compiled for one static shape when the input has it and a generic one
// otherwise. Each branch's own result tells which one ran.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "tests/e2e/e2e_test_util.h"
#include "vm/virtual_machine.h"

namespace strata::testing {
namespace {

constexpr const char* kShapeBranch = R"(
func @static_2x3(x: Tensor[(2, 3), f32]) -> Tensor[(2, 3), f32] {
  y = relu(x)
  return y
}
func @generic(x: Tensor[(n, m), f32]) -> Tensor[(n, m), f32] {
  y = multiply(x, const(Tensor[(), f32], [-1]))
  return y
}
func @main(x: Tensor[(n, m), f32]) -> Tensor[(n, m), f32] {
  r = if prim(n == 2 && m * 2 == 6) {
    xs = match_cast(x, Tensor[(2, 3), f32])
    a = @static_2x3(xs)
    b = match_cast(a, Tensor[(n, m), f32])
    b
  } else {
    c = @generic(x)
    c
  }
  return r
}
)";

vm::Value Matrix(int64_t rows, int64_t cols) {
  StatusOr<vm::Ref<vm::Tensor>> t = vm::Tensor::Empty({rows, cols}, DataType::F32());
  EXPECT_TRUE(t.ok());
  float* data = static_cast<float*>((*t)->data());
  for (int64_t i = 0; i < rows * cols; ++i) data[i] = (i % 2 ? -1.0f : 1.0f) * static_cast<float>(i + 1);
  return vm::Value::FromTensor(*t);
}

TEST(ShapeBranch, AnIfOnShapeValuesRunsTheFunctionForThatShape) {
  std::shared_ptr<const vm::Executable> exe = CompileText(kShapeBranch, "shape_branch.sir");
  ASSERT_TRUE(exe);
  vm::VirtualMachine machine(exe);
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{2, 3}, {2, 2}, {3, 3}, {1, 6}}) {
    SCOPED_TRACE(std::to_string(rows) + "x" + std::to_string(cols));
    vm::Value x = Matrix(rows, cols);
    const std::vector<vm::Value> args = {x};
    StatusOr<vm::Value> got = machine.Invoke("main", args);
    ASSERT_TRUE(got.ok()) << got.status().message();
    const float* in = static_cast<const float*>(x.tensor()->data());
    const float* out = static_cast<const float*>(got->tensor()->data());
    const bool static_branch = rows == 2 && cols == 3;
    for (int64_t i = 0; i < rows * cols; ++i) {
      const float want = static_branch ? std::max(in[i], 0.0f) : -in[i];
      EXPECT_EQ(out[i], want) << "element " << i;
    }
  }
}

}  // namespace
}  // namespace strata::testing
