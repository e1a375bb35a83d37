// Depthwise convolutions with a symbolic image width in the blocked layout.
// Such a row runs without a padded copy of the input: a first tile whose taps
// are decided from its constant columns, unchecked tiles, a last tile per
// residue of the width modulo the stride whose taps are decided against the
// width written in terms of the row's reach, positions counted one by one
// between them when the right padding spans several positions, and rows
// narrower than the kernel's reach position by position (conv2d_nchwc.cc,
// depthwise_rows). Without column padding the row schedule runs, whose last
// tile reads the last position's columns for its positions past the output.
// Each layer below runs at every width from 1 to 40 and at 61, so that every
// path and every residue runs, and must agree with the NCHW kernel (strata
// compile --no-nchwc), which tests/fixtures/ops checks against numpy.
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "compiler/driver/compile.h"
#include "tests/e2e/e2e_test_util.h"
#include "vm/virtual_machine.h"

namespace strata::testing {
namespace {

struct DepthwiseLayer {
  const char* name;
  int64_t channels, kernel, stride, dilation;
  std::vector<int64_t> padding;  // top, left, bottom, right
};

// Test names and failure messages show the layer's name.
void PrintTo(const DepthwiseLayer& layer, std::ostream* os) { *os << layer.name; }

std::string Ints(const std::vector<int64_t>& values) {
  std::string text = "[";
  for (size_t i = 0; i < values.size(); ++i) text += (i ? ", " : "") + std::to_string(values[i]);
  return text + "]";
}

std::string Module(const DepthwiseLayer& layer) {
  const int64_t c = layer.channels, k = layer.kernel;
  const std::string weight = ConstTensorText({c, 1, k, k}, DeterministicValues(c * k * k, 3));
  // A relu after the convolution, so that the blocked build keeps the layer
  // blocked between its conversions (and fuses an epilogue into its stores).
  return "func @main(x: Tensor[(n, " + std::to_string(c) +
         ", h, w), f32]) -> Tensor[ndim=4, f32] {\n"
         "  dataflow {\n"
         "    y = conv2d(x, " +
         weight + ", strides=[" + std::to_string(layer.stride) + ", " + std::to_string(layer.stride) +
         "], padding=" + Ints(layer.padding) + ", dilation=[" + std::to_string(layer.dilation) + ", " +
         std::to_string(layer.dilation) + "], groups=" + std::to_string(c) +
         ")\n"
         "    r = relu(y)\n"
         "    output r\n"
         "  }\n"
         "  return r\n"
         "}\n";
}

std::shared_ptr<const vm::Executable> Build(const DepthwiseLayer& layer, bool nchwc) {
  driver::CompileOptions options;
  options.nchwc_layout = nchwc;
  return CompileText(Module(layer), std::string(layer.name) + ".sir", options);
}

class NchwcDepthwise : public ::testing::TestWithParam<DepthwiseLayer> {};

TEST_P(NchwcDepthwise, AgreesWithTheNchwKernelAtEveryWidth) {
  const DepthwiseLayer& layer = GetParam();
  std::shared_ptr<const vm::Executable> blocked = Build(layer, true), plain = Build(layer, false);
  ASSERT_TRUE(blocked && plain);
  EXPECT_TRUE(HasKernel(*blocked, "conv2d_nchwc"));
  std::vector<int64_t> widths;
  for (int64_t w = 1; w <= 40; ++w) widths.push_back(w);
  widths.push_back(61);
  vm::VirtualMachine a(blocked), b(plain);
  for (int64_t w : widths) {
    // The kernel's extent must fit the padded height: a few rows more than it.
    const int64_t n = w % 2 + 1, h = (layer.kernel - 1) * layer.dilation + 2;
    SCOPED_TRACE("n=" + std::to_string(n) + " h=" + std::to_string(h) + " w=" + std::to_string(w));
    StatusOr<vm::Ref<vm::Tensor>> t = vm::Tensor::Empty({n, layer.channels, h, w}, DataType::F32());
    ASSERT_TRUE(t.ok());
    const std::vector<float> values = DeterministicValues(n * layer.channels * h * w, static_cast<uint32_t>(w));
    std::copy(values.begin(), values.end(), static_cast<float*>((*t)->data()));
    const std::vector<vm::Value> args = {vm::Value::FromTensor(*t)};
    StatusOr<vm::Value> got = a.Invoke("main", args);
    StatusOr<vm::Value> want = b.Invoke("main", args);
    ASSERT_EQ(got.ok(), want.ok()) << (got.ok() ? want.status().message() : got.status().message());
    if (!got.ok()) continue;  // both refuse a width the kernel does not fit
    ExpectTensorNear(*got, *want, 1e-5f, 1e-5f);
  }
}

// Blocks of 16 channels run tiles of 14 positions (7 when a row is short), of
// 8 channels tiles of 8 (or 4).
INSTANTIATE_TEST_SUITE_P(Layers, NchwcDepthwise,
                         ::testing::Values(DepthwiseLayer{"k3_s1", 16, 3, 1, 1, {1, 1, 1, 1}},
                                           DepthwiseLayer{"k3_s2_block8", 24, 3, 2, 1, {1, 1, 1, 1}},
                                           DepthwiseLayer{"k5_s1", 32, 5, 1, 1, {2, 2, 2, 2}},
                                           DepthwiseLayer{"k5_s2", 16, 5, 2, 1, {2, 2, 2, 2}},
                                           // pr = 3 > stride: positions between the inner and last tiles.
                                           DepthwiseLayer{"k7_s1", 16, 7, 1, 1, {3, 3, 3, 3}},
                                           DepthwiseLayer{"k3_s3_asymmetric", 8, 3, 3, 1, {0, 2, 1, 0}},
                                           DepthwiseLayer{"k3_s2_right_only", 16, 3, 2, 1, {0, 0, 1, 1}},
                                           DepthwiseLayer{"k3_dilated", 16, 3, 1, 2, {2, 2, 2, 2}},
                                           // No column padding: the row schedule, whose last tile
                                           // reads its positions past the output at the last one.
                                           DepthwiseLayer{"k3_s2_unpadded", 16, 3, 2, 1, {1, 0, 1, 0}}),
                         [](const ::testing::TestParamInfo<DepthwiseLayer>& info) { return info.param.name; });

}  // namespace
}  // namespace strata::testing
