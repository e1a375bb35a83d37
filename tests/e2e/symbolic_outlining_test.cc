// Outlined functions at symbolic shapes: a chain of stride-2, pad-1
// convolutions over a dynamic batch and image size, compiled once with BYOC
// (oneDNN) and once for the simulated NPU, runs at several shapes and matches
// the default pipeline's compiled kernels (themselves checked against numpy by
// the operator tests). Before outlining carried exact struct info, the second
// convolution's composite function could not prove its return shape
// ((s0 + 1) // 2 against a fresh s2) and the compile failed.
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "compiler/driver/compile.h"
#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"
#include "tests/e2e/e2e_test_util.h"
#include "vm/plugged_device.h"
#include "vm/virtual_machine.h"

namespace strata {
namespace {

using testing::ExpectTensorNear;

constexpr const char* kStridedCnn = R"(
func @main(x: Tensor[(n, 3, h, w), f32], w1: Tensor[(8, 3, 3, 3), f32], b1: Tensor[(8,), f32],
           w2: Tensor[(16, 8, 3, 3), f32], b2: Tensor[(16,), f32]) -> Tensor {
  y1 = conv2d(x, w1, strides=[2, 2], padding=[1, 1, 1, 1])
  z1 = bias_add(y1, b1, axis=1)
  r1 = relu(z1)
  y2 = conv2d(r1, w2, strides=[2, 2], padding=[1, 1, 1, 1])
  z2 = bias_add(y2, b2, axis=1)
  r2 = relu(z2)
  return r2
}
)";

std::shared_ptr<const vm::Executable> Compile(const driver::CompileOptions& options, std::string* lowered_text) {
  auto module = ir::ParseModule(kStridedCnn, "strided_cnn.sir");
  EXPECT_TRUE(module.ok()) << module.status().message();
  if (!module.ok()) return nullptr;
  if (lowered_text != nullptr) {
    auto lowered = driver::Lower(*module, options);
    EXPECT_TRUE(lowered.ok()) << lowered.status().message();
    if (lowered.ok()) *lowered_text = ir::PrintModule(*lowered);
  }
  auto bytes = driver::Compile(std::move(module).value(), options);
  EXPECT_TRUE(bytes.ok()) << bytes.status().message();
  if (!bytes.ok()) return nullptr;
  auto exe = vm::Executable::LoadFromBytes(*bytes);
  EXPECT_TRUE(exe.ok()) << exe.status().message();
  return exe.ok() ? exe.value() : nullptr;
}

// A tensor of `shape` filled from a fixed linear congruential sequence in [-1, 1).
vm::Value Filled(std::vector<int64_t> shape, uint32_t seed) {
  auto tensor = vm::Tensor::Empty(shape, DataType::F32());
  EXPECT_TRUE(tensor.ok());
  float* data = (*tensor)->data_as<float>();
  uint32_t state = seed;
  for (int64_t i = 0; i < (*tensor)->num_elements(); ++i) {
    state = state * 1664525u + 1013904223u;
    data[i] = static_cast<float>(state >> 8) / static_cast<float>(1 << 23) - 1.0f;
  }
  return vm::Value::FromTensor(std::move(tensor).value());
}

std::vector<vm::Value> Inputs(int64_t n, int64_t h, int64_t w) {
  return {Filled({n, 3, h, w}, 1), Filled({8, 3, 3, 3}, 2), Filled({8}, 3), Filled({16, 8, 3, 3}, 4), Filled({16}, 5)};
}

// (n, h, w): odd and even sizes, so the ceil in (h + 1) // 2 matters.
const std::vector<std::vector<int64_t>> kShapes = {{1, 17, 23}, {2, 32, 32}, {3, 9, 8}};

void ExpectMatchesDefaultPipeline(const std::shared_ptr<const vm::Executable>& offloaded) {
  auto reference = Compile(driver::CompileOptions(), nullptr);
  ASSERT_NE(reference, nullptr);
  ASSERT_NE(offloaded, nullptr);
  vm::VirtualMachine expected_vm(reference), actual_vm(offloaded);
  for (const std::vector<int64_t>& s : kShapes) {
    SCOPED_TRACE("n=" + std::to_string(s[0]) + " h=" + std::to_string(s[1]) + " w=" + std::to_string(s[2]));
    auto expected = expected_vm.Invoke("main", Inputs(s[0], s[1], s[2]));
    ASSERT_TRUE(expected.ok()) << expected.status().message();
    auto actual = actual_vm.Invoke("main", Inputs(s[0], s[1], s[2]));
    ASSERT_TRUE(actual.ok()) << actual.status().message();
    const std::vector<int64_t> want = {s[0], 16, ((s[1] + 1) / 2 + 1) / 2, ((s[2] + 1) / 2 + 1) / 2};
    ASSERT_TRUE(actual->is_tensor());
    EXPECT_EQ(std::vector<int64_t>(actual->tensor()->shape().begin(), actual->tensor()->shape().end()), want);
    ExpectTensorNear(*actual, *expected, 1e-4f, 1e-5f);
  }
}

TEST(SymbolicOutlining, StridedConvolutionsOffloadedToOneDnnRunAtEveryShape) {
  driver::CompileOptions options;
  options.byoc_backends = {"dnnl"};
  std::string text;
  auto exe = Compile(options, &text);
  // The composite of the second convolution returns its exact shape in its own
  // variables, so the caller's result carries the composed expression.
  EXPECT_NE(text.find("Tensor[(n, 16, ((h + 1) // 2 + 1) // 2, ((w + 1) // 2 + 1) // 2), f32]"), std::string::npos)
      << text;
  ExpectMatchesDefaultPipeline(exe);
}

TEST(SymbolicOutlining, StridedConvolutionsOnTheNpuRunAtEveryShape) {
  vm::RegisterDevicePlugin("sim_npu", STRATA_SIM_NPU_PLUGIN);
  driver::CompileOptions options;
  options.device_targets = {"npu"};
  ExpectMatchesDefaultPipeline(Compile(options, nullptr));
}

}  // namespace
}  // namespace strata
