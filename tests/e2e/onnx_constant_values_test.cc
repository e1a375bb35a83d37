// Scalars the ONNX importer builds from attributes (LeakyRelu's alpha, a
// normalization's epsilon) and reads from constants (Clip's bounds, Pad's and
// ConstantOfShape's fill values, shapes and axes): every dtype keeps its value,
// and a value out of the dtype's range saturates instead of being undefined
// behaviour. The file's values are untrusted: a fuzzed model once planted an
// epsilon of 3.4e35 on a uint8 input.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "compiler/frontend/onnx/onnx_context.h"
#include "support/half_float.h"

namespace strata::testing {
namespace {

using frontend::onnx_import::ConstantElement;
using frontend::onnx_import::ConstantInts;
using frontend::onnx_import::MakeScalarTensor;

template <typename T>
T ScalarOf(const graph::HostTensor& tensor) {
  EXPECT_EQ(tensor.bytes.size(), sizeof(T));
  T value{};
  std::memcpy(&value, tensor.bytes.data(), std::min(sizeof(T), tensor.bytes.size()));
  return value;
}

template <typename T>
graph::HostTensor TensorOf(DataType dtype, const std::vector<T>& values) {
  graph::HostTensor tensor;
  tensor.dtype = dtype;
  tensor.shape = {static_cast<int64_t>(values.size())};
  tensor.bytes.resize(values.size() * sizeof(T));
  std::memcpy(tensor.bytes.data(), values.data(), tensor.bytes.size());
  return tensor;
}

TEST(OnnxConstants, FloatScalarsKeepTheirValueInEveryFloatDtype) {
  EXPECT_FLOAT_EQ(ScalarOf<float>(*MakeScalarTensor(DataType::F32(), 0.1)), 0.1f);
  EXPECT_DOUBLE_EQ(ScalarOf<double>(*MakeScalarTensor(DataType::F64(), 0.1)), 0.1);
  // An f16 model's alpha of 0.1 once became the integer 0.
  EXPECT_NEAR(HalfToFloat(ScalarOf<uint16_t>(*MakeScalarTensor(DataType::Float(16), 0.1))), 0.1, 1e-4);
  EXPECT_TRUE(std::isinf(HalfToFloat(ScalarOf<uint16_t>(*MakeScalarTensor(DataType::Float(16), 3.4e35)))));
}

TEST(OnnxConstants, IntegerScalarsTruncateAndSaturateAtTheirDtypesRange) {
  EXPECT_EQ(ScalarOf<int32_t>(*MakeScalarTensor(DataType::I32(), -7.9)), -7);
  EXPECT_EQ(ScalarOf<int8_t>(*MakeScalarTensor(DataType::Int(8), 300)), 127);
  EXPECT_EQ(ScalarOf<int8_t>(*MakeScalarTensor(DataType::Int(8), -300)), -128);
  EXPECT_EQ(ScalarOf<uint8_t>(*MakeScalarTensor(DataType::UInt(8), 3.4e35)), 255);
  EXPECT_EQ(ScalarOf<uint8_t>(*MakeScalarTensor(DataType::UInt(8), -5)), 0);
  EXPECT_EQ(ScalarOf<uint16_t>(*MakeScalarTensor(DataType::UInt(16), 65535)), 65535);
  EXPECT_EQ(ScalarOf<int64_t>(*MakeScalarTensor(DataType::I64(), 1e30)), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(ScalarOf<int64_t>(*MakeScalarTensor(DataType::I64(), -1e30)), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(ScalarOf<uint64_t>(*MakeScalarTensor(DataType::UInt(64), 1e30)), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(ScalarOf<int32_t>(*MakeScalarTensor(DataType::I32(), std::nan(""))), 0);
  EXPECT_EQ(ScalarOf<uint8_t>(*MakeScalarTensor(DataType::Bool(), 2.0)), 1);
  EXPECT_EQ(ScalarOf<uint8_t>(*MakeScalarTensor(DataType::Bool(), 0.0)), 0);
}

TEST(OnnxConstants, ElementsOfEveryDtypeReadAsTheirValue) {
  EXPECT_EQ(ConstantElement(TensorOf<uint16_t>(DataType::UInt(16), {65535}), 0), 65535.0);
  EXPECT_EQ(ConstantElement(TensorOf<int16_t>(DataType::Int(16), {-2}), 0), -2.0);
  EXPECT_EQ(ConstantElement(TensorOf<uint32_t>(DataType::UInt(32), {4000000000u}), 0), 4e9);
  EXPECT_EQ(ConstantElement(TensorOf<uint64_t>(DataType::UInt(64), {uint64_t{1} << 63}), 0), 0x1p63);
  EXPECT_EQ(ConstantElement(TensorOf<int8_t>(DataType::Int(8), {5, -128}), 1), -128.0);
  EXPECT_EQ(ConstantElement(TensorOf<uint16_t>(DataType::Float(16), {FloatToHalf(1.5f), FloatToHalf(-0.25f)}), 1),
            -0.25);
  EXPECT_EQ(ConstantElement(TensorOf<float>(DataType::F32(), {0.5f}), 0), 0.5);
  EXPECT_EQ(ConstantElement(TensorOf<double>(DataType::F64(), {1e300}), 0), 1e300);
  EXPECT_EQ(ConstantElement(TensorOf<uint8_t>(DataType::Bool(), {0, 7}), 1), 1.0);
}

TEST(OnnxConstants, IntegerViewsAreExactAndFloatsSaturate) {
  EXPECT_EQ(ConstantInts(TensorOf<uint8_t>(DataType::Bool(), {1, 0, 3})), (std::vector<int64_t>{1, 0, 1}));
  EXPECT_EQ(ConstantInts(TensorOf<uint16_t>(DataType::UInt(16), {40000})), (std::vector<int64_t>{40000}));
  EXPECT_EQ(ConstantInts(TensorOf<uint32_t>(DataType::UInt(32), {4000000000u})), (std::vector<int64_t>{4000000000}));
  EXPECT_EQ(ConstantInts(TensorOf<int64_t>(DataType::I64(), {(int64_t{1} << 62) + 1})),
            (std::vector<int64_t>{(int64_t{1} << 62) + 1}));
  EXPECT_EQ(ConstantInts(TensorOf<uint64_t>(DataType::UInt(64), {std::numeric_limits<uint64_t>::max()})),
            (std::vector<int64_t>{-1}));  // the bits are kept
  EXPECT_EQ(ConstantInts(TensorOf<float>(DataType::F32(), {1e30f, -2.7f, std::nanf(""), -1e30f})),
            (std::vector<int64_t>{std::numeric_limits<int64_t>::max(), -2, 0, std::numeric_limits<int64_t>::min()}));
}

}  // namespace
}  // namespace strata::testing
