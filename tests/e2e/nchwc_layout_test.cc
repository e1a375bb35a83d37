// The blocked layout end to end (ConvertToNchwc + the NCHWc kernels): a small
// convolutional network with constant weights, compiled with the layout
// (strata compile's default) and without it (--no-nchwc: the NCHW kernels that
// tests/fixtures/ops checks against numpy), run at symbolic batch and image
// sizes 1, 7, 13 and widths that are not multiples of any tile or block (a
// symbolic width under four tiles runs a 1x1 layer over the image's pixels as one
// sequence, 61 row by row); both
// builds must agree. The network has a 3-channel stem read in place, blocks of
// 8 with 24-lane weights (three output blocks per register tile), a strided
// depthwise layer, a 1x1 layer, a per-channel constant multiply, hard_swish,
// max pooling, a 1x1 expansion to 72 channels (72-lane weights: four and a
// half vectors per register tile) and its projection back (72 input channels
// in blocks of 8) added to its input, two 3x3 layers concatenated over the
// channels, a residual add,
// an intermediate result returned (needed plain mid-network), a global mean
// followed by a reshape (needed plain at the end) and a global max without
// keepdims (the blocked max reshaped).
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "compiler/driver/compile.h"
#include "compiler/transform/convert_to_nchwc.h"
#include "tests/e2e/e2e_test_util.h"
#include "vm/virtual_machine.h"

namespace strata::testing {
namespace {

std::string Const(const std::vector<int64_t>& shape, uint32_t seed, float scale = 0.3f) {
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  return ConstTensorText(shape, DeterministicValues(count, seed, scale));
}

std::string Network() {
  return "func @main(x: Tensor[(n, 3, h, w), f32]) -> Tuple[Tensor[(n, 64), f32], Tensor[ndim=4, f32], "
         "Tensor[(n, 64), f32]] {\n"
         "  dataflow {\n"
         "    stem = conv2d(x, " +
         Const({24, 3, 3, 3}, 1) +
         ", padding=[1, 1])\n"
         "    b0 = bias_add(stem, " +
         Const({24}, 2) +
         ", axis=1)\n"
         "    a0 = relu(b0)\n"
         "    dw = conv2d(a0, " +
         Const({24, 1, 3, 3}, 3) +
         ", strides=[2, 2], padding=[1, 1], groups=24)\n"
         "    pw = conv2d(dw, " +
         Const({16, 24, 1, 1}, 4) +
         ")\n"
         "    scaled = multiply(pw, " +
         Const({1, 16, 1, 1}, 5, 2.0f) +
         ")\n"
         "    hs = hard_swish(scaled)\n"
         "    pool = max_pool2d(hs, pool_size=[3, 3], strides=[2, 2], padding=[1, 1])\n"
         "    expand = conv2d(pool, " +
         Const({72, 16, 1, 1}, 9) +
         ")\n"
         "    expanded = relu(expand)\n"
         "    project = conv2d(expanded, " +
         Const({16, 72, 1, 1}, 10, 0.1f) +
         ")\n"
         "    mixed = add(pool, project)\n"
         "    left = conv2d(mixed, " +
         Const({32, 16, 3, 3}, 6) +
         ", padding=[1, 1])\n"
         "    right = conv2d(mixed, " +
         Const({32, 16, 3, 3}, 7) +
         ", padding=[1, 1])\n"
         "    both = concat((left, right), axis=1)\n"
         "    res = conv2d(both, " +
         Const({64, 64, 1, 1}, 8, 0.1f) +
         ")\n"
         "    sum = add(res, both)\n"
         "    out = relu(sum)\n"
         "    g = mean(out, axes=[2, 3], keepdims=true)\n"
         "    flat = reshape(g, shape(n, 64))\n"
         "    peak = max(out, axes=[3, 2])\n"
         "    output flat, pool, peak\n"
         "  }\n"
         "  return (flat, pool, peak)\n"
         "}\n";
}

std::shared_ptr<const vm::Executable> Build(bool nchwc) {
  driver::CompileOptions options;
  options.nchwc_layout = nchwc;
  return CompileText(Network(), "nchwc_network.sir", options);
}

vm::Value Image(int64_t n, int64_t h, int64_t w, uint32_t seed) {
  StatusOr<vm::Ref<vm::Tensor>> t = vm::Tensor::Empty({n, 3, h, w}, DataType::F32());
  EXPECT_TRUE(t.ok());
  std::vector<float> values = DeterministicValues(n * 3 * h * w, seed, 1.0f);
  std::copy(values.begin(), values.end(), static_cast<float*>((*t)->data()));
  return vm::Value::FromTensor(*t);
}

TEST(NchwcLayout, WeightLanesFillWholeVectorsElseTheFullestRegisters) {
  const transform::NchwcOptions avx512{16, 32}, avx2{8, 16};
  // Whole vectors up to max_lanes.
  EXPECT_EQ(transform::NchwcLanes(64, 16, avx512), 32);
  EXPECT_EQ(transform::NchwcLanes(48, 16, avx512), 16);
  EXPECT_EQ(transform::NchwcLanes(72, 8, avx2), 8);
  // No whole-vector tile divides 72 or 24 in blocks of 8: the fullest registers.
  EXPECT_EQ(transform::NchwcLanes(72, 8, avx512), 72);   // 4.5 of 5
  EXPECT_EQ(transform::NchwcLanes(24, 8, avx512), 24);   // 1.5 of 2
  EXPECT_EQ(transform::NchwcLanes(120, 8, avx512), 40);  // 2.5 of 3; 120 is too many registers
  EXPECT_EQ(transform::NchwcLanes(88, 8, avx512), 8);    // 11 blocks: 8 or 88
  EXPECT_EQ(transform::NchwcLanes(12, 4, avx512), 12);
}

TEST(NchwcLayout, AgreesWithTheNchwKernelsAtOddAndSymbolicSizes) {
  std::shared_ptr<const vm::Executable> blocked = Build(true), plain = Build(false);
  ASSERT_TRUE(blocked && plain);
  // The blocked build really runs blocked kernels.
  EXPECT_TRUE(HasKernel(*blocked, "conv2d_nchwc"));
  const int64_t sizes[][3] = {{1, 1, 1}, {2, 7, 7}, {1, 13, 9}, {2, 16, 23}, {1, 29, 13}, {1, 6, 61}};
  uint32_t seed = 100;
  for (const auto& s : sizes) {
    SCOPED_TRACE("n=" + std::to_string(s[0]) + " h=" + std::to_string(s[1]) + " w=" + std::to_string(s[2]));
    vm::Value x = Image(s[0], s[1], s[2], seed++);
    vm::VirtualMachine a(blocked), b(plain);
    const std::vector<vm::Value> args = {x};
    StatusOr<vm::Value> got = a.Invoke("main", args);
    StatusOr<vm::Value> want = b.Invoke("main", args);
    ASSERT_TRUE(got.ok()) << got.status().message();
    ASSERT_TRUE(want.ok()) << want.status().message();
    ASSERT_TRUE(got->is_tuple() && want->is_tuple());
    for (size_t i = 0; i < 3; ++i) {
      ExpectTensorNear(got->tuple()->fields()[i], want->tuple()->fields()[i], 1e-4f, 1e-4f);
    }
  }
}

}  // namespace
}  // namespace strata::testing
