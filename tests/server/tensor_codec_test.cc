// Protocol tensors: datatypes, JSON data (flat and nested, range-checked), binary data viewed in place.
#include "apps/server/tensor_codec.h"

#include <cmath>
#include <cstring>

#include <gtest/gtest.h>
#include <rapidjson/stringbuffer.h>

namespace strata::server {
namespace {

rapidjson::Document Json(const char* text) {
  rapidjson::Document doc;
  doc.Parse(text);
  return doc;
}

std::string JsonOf(const vm::Tensor& t) {
  rapidjson::StringBuffer buffer;
  JsonWriter out(buffer);
  WriteJsonData(t, out);
  return buffer.GetString();
}

TEST(TensorCodec, DatatypeNamesRoundTrip) {
  for (const char* name :
       {"BOOL", "UINT8", "UINT16", "UINT32", "UINT64", "INT8", "INT16", "INT32", "INT64", "FP16", "FP32", "FP64"}) {
    std::optional<DataType> dtype = DataTypeFromProtocol(name);
    ASSERT_TRUE(dtype.has_value()) << name;
    EXPECT_EQ(ProtocolDataType(*dtype), name);
  }
  EXPECT_FALSE(DataTypeFromProtocol("BYTES").has_value());
  EXPECT_FALSE(DataTypeFromProtocol("fp32").has_value());
}

TEST(TensorCodec, FlatAndNestedDataGiveTheSameTensor) {
  const int64_t shape[] = {2, 3};
  auto flat = TensorFromJson(Json("[1, 2, 3, 4, 5, 6]"), shape, DataType::I32(), "input 'x'");
  auto nested = TensorFromJson(Json("[[1, 2, 3], [4, 5, 6]]"), shape, DataType::I32(), "input 'x'");
  ASSERT_TRUE(flat.ok() && nested.ok());
  EXPECT_EQ(std::memcmp((*flat)->data(), (*nested)->data(), 24), 0);
  EXPECT_EQ(JsonOf(**flat), "[1,2,3,4,5,6]");
}

TEST(TensorCodec, Fp16AndBoolRoundTrip) {
  const int64_t shape[] = {5};
  auto half = TensorFromJson(Json("[0.5, -2, 65504, 0.0001, 1e-7]"), shape, DataType::Float(16), "h");
  ASSERT_TRUE(half.ok());
  rapidjson::Document back = Json(JsonOf(**half).c_str());
  // numpy.array([0.5, -2, 65504, 0.0001, 1e-7], numpy.float16): rounding to
  // nearest, 1e-7 to the subnormal 2^-23.
  const double expected[] = {0.5, -2.0, 65504.0, 0.00010001659393310547, 1.1920928955078125e-07};
  for (int i = 0; i < 5; ++i) EXPECT_NEAR(back[i].GetDouble(), expected[i], 1e-12 * std::fabs(expected[i])) << i;
  const int64_t two[] = {2};
  auto flags = TensorFromJson(Json("[true, 0]"), two, DataType::Bool(), "b");
  ASSERT_TRUE(flags.ok());
  EXPECT_EQ(JsonOf(**flags), "[true,false]");
}

TEST(TensorCodec, BadDataIsAnErrorNamingTheInput) {
  const int64_t shape[] = {2};
  struct Case {
    const char* json;
    DataType dtype;
    const char* message;
  };
  const Case cases[] = {
      {"[1, 2, 3]", DataType::F32(), "input 'x': 'data' has 3 elements, the shape (2,) needs 2"},
      {"[1, \"a\"]", DataType::F32(), "element 1 of 'data' is not a valid FP32 value"},
      {"[1, 300]", DataType::UInt(8), "element 1 of 'data' is not a valid UINT8 value"},
      {"[1, -1]", DataType::UInt(32), "not a valid UINT32"},
      {"[1, 2.5]", DataType::I64(), "not a valid INT64"},
      {"[1, 2]", DataType::Bool(), "element 1 of 'data' is not a valid BOOL value"},
      {"5", DataType::F32(), "'data' must be an array"},
  };
  for (const Case& c : cases) {
    auto t = TensorFromJson(Json(c.json), shape, c.dtype, "input 'x'");
    ASSERT_FALSE(t.ok()) << c.json;
    EXPECT_NE(t.status().message().find(c.message), std::string::npos) << t.status().message();
  }
}

TEST(TensorCodec, BinaryDataIsViewedInPlaceWhenAligned) {
  auto body = std::make_shared<std::string>(64, '\0');
  float values[4] = {1, 2, 3, 4};
  std::memcpy(body->data() + 16, values, sizeof values);
  const int64_t shape[] = {4};
  std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(body->data()) + 16, 16);
  auto view = TensorFromBinary(bytes, shape, DataType::F32(), body, "input 'x'");
  ASSERT_TRUE(view.ok());
  EXPECT_EQ((*view)->data(), body->data() + 16);  // no copy
  EXPECT_EQ(JsonOf(**view), "[1.0,2.0,3.0,4.0]");
  // Misaligned for f32: copied, same values.
  std::memcpy(body->data() + 17, values, sizeof values);
  auto copy = TensorFromBinary(bytes.subspan(1).first(15), shape, DataType::F32(), body, "input 'x'");
  ASSERT_FALSE(copy.ok());  // 15 bytes for 16
  EXPECT_NE(copy.status().message().find("binary_data_size is 15 bytes"), std::string::npos);
  std::span<const uint8_t> shifted(reinterpret_cast<const uint8_t*>(body->data()) + 17, 16);
  auto copied = TensorFromBinary(shifted, shape, DataType::F32(), body, "input 'x'");
  ASSERT_TRUE(copied.ok());
  EXPECT_NE((*copied)->data(), body->data() + 17);
  EXPECT_EQ(JsonOf(**copied), "[1.0,2.0,3.0,4.0]");
}

}  // namespace
}  // namespace strata::server

namespace strata::server {
namespace {

TEST(TensorCodec, FiniteValuesPastTheRangeAreRefusedNotMadeInfinite) {
  const int64_t shape[] = {1};
  for (const char* text : {"[1e39]", "[-3.5e38]"}) {
    auto t = TensorFromJson(Json(text), shape, DataType::F32(), "input 'x'");
    ASSERT_FALSE(t.ok()) << text;
    EXPECT_NE(t.status().message().find("element 0 of 'data' is not a valid FP32 value"), std::string::npos);
  }
  EXPECT_FALSE(TensorFromJson(Json("[70000]"), shape, DataType::Float(16), "input 'x'").ok());
  EXPECT_TRUE(TensorFromJson(Json("[65504]"), shape, DataType::Float(16), "input 'x'").ok());
  EXPECT_TRUE(TensorFromJson(Json("[3.4028235e38]"), shape, DataType::F32(), "input 'x'").ok());
  // Explicit non-finite values are what the client meant.
  rapidjson::Document doc;
  std::string error;
  ASSERT_TRUE(ParseJson("[NaN, Infinity, -Infinity]", &doc, &error));
  const int64_t three[] = {3};
  auto t = TensorFromJson(doc, three, DataType::F32(), "input 'x'");
  ASSERT_TRUE(t.ok()) << t.status().message();
  const float* v = static_cast<const float*>((*t)->data());
  EXPECT_TRUE(std::isnan(v[0]) && std::isinf(v[1]) && std::isinf(v[2]));
  EXPECT_EQ(JsonOf(**t), "[NaN,Infinity,-Infinity]");
}

}  // namespace
}  // namespace strata::server
