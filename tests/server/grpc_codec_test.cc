// The gRPC transport's translations (apps/server/grpc_codec.h): HTTP statuses
// as gRPC codes, typed contents as tensors (viewed in place or converted, range-
// and count-checked), the JSON documents as messages, outputs as raw contents.
#include "apps/server/grpc_codec.h"

#include <cstring>

#include <gtest/gtest.h>

namespace strata::server {
namespace {

using inference::InferTensorContents;

std::shared_ptr<const void> Owner() { return std::make_shared<int>(0); }

template <typename T>
std::vector<T> Elements(const vm::Ref<vm::Tensor>& tensor) {
  StatusOr<std::vector<T>> values = tensor->ToVector<T>();
  EXPECT_TRUE(values.ok()) << values.status().message();
  return values.ok() ? *values : std::vector<T>{};
}

TEST(GrpcCodec, HttpStatusesMapToGrpcCodes) {
  EXPECT_EQ(GrpcCodeOf(400), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(GrpcCodeOf(403), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(GrpcCodeOf(404), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(GrpcCodeOf(413), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(GrpcCodeOf(503), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(GrpcCodeOf(500), grpc::StatusCode::INTERNAL);
  EXPECT_EQ(GrpcCodeOf(418), grpc::StatusCode::INTERNAL);
  const grpc::Status status = GrpcStatusOf(NotFound("unknown model 'm'"));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(status.error_message(), "unknown model 'm'");
}

TEST(GrpcCodec, ContentsOfTheDatatypesOwnTypeAreViewedInPlace) {
  auto request = std::make_shared<inference::ModelInferRequest>();
  InferTensorContents* contents = request->add_inputs()->mutable_contents();
  for (float v : {1.f, 2.f, 3.f, 4.f, 5.f, 6.f}) contents->add_fp32_contents(v);
  const int64_t shape[] = {2, 3};
  auto tensor = TensorFromContents(*contents, shape, DataType::F32(), request, "input 'x'");
  ASSERT_TRUE(tensor.ok()) << tensor.status().message();
  EXPECT_EQ((*tensor)->data(), static_cast<const void*>(contents->fp32_contents().data()));
  EXPECT_EQ(Elements<float>(*tensor), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(request.use_count(), 2);  // the tensor holds the request

  InferTensorContents ints;
  for (int64_t v : {int64_t{-1}, int64_t{1} << 40}) ints.add_int64_contents(v);
  const int64_t two[] = {2};
  auto wide = TensorFromContents(ints, two, DataType::I64(), Owner(), "input 'i'");
  ASSERT_TRUE(wide.ok());
  EXPECT_EQ(Elements<int64_t>(*wide), (std::vector<int64_t>{-1, int64_t{1} << 40}));

  InferTensorContents bools;
  for (bool v : {true, false}) bools.add_bool_contents(v);
  auto flags = TensorFromContents(bools, two, DataType::Bool(), Owner(), "input 'b'");
  ASSERT_TRUE(flags.ok());
  EXPECT_EQ(static_cast<const uint8_t*>((*flags)->data())[0], 1);
  EXPECT_EQ(static_cast<const uint8_t*>((*flags)->data())[1], 0);
}

TEST(GrpcCodec, NarrowerIntegersAreConvertedAndRangeChecked) {
  const int64_t three[] = {3};
  InferTensorContents ints;
  for (int32_t v : {-128, 0, 127}) ints.add_int_contents(v);
  auto i8 = TensorFromContents(ints, three, DataType::Int(8), Owner(), "input 'x'");
  ASSERT_TRUE(i8.ok()) << i8.status().message();
  EXPECT_EQ(Elements<int8_t>(*i8), (std::vector<int8_t>{-128, 0, 127}));
  ints.set_int_contents(2, 128);
  auto over = TensorFromContents(ints, three, DataType::Int(8), Owner(), "input 'x'");
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.status().message(), "input 'x': element 2 of int_contents (128) is out of the range of INT8");

  InferTensorContents uints;
  for (uint32_t v : {0u, 65535u, 65536u}) uints.add_uint_contents(v);
  auto u16 = TensorFromContents(uints, three, DataType::UInt(16), Owner(), "input 'u'");
  ASSERT_FALSE(u16.ok());
  EXPECT_NE(u16.status().message().find("element 2 of uint_contents (65536) is out of the range of UINT16"),
            std::string::npos);
  uints.set_uint_contents(2, 7);
  auto fits = TensorFromContents(uints, three, DataType::UInt(16), Owner(), "input 'u'");
  ASSERT_TRUE(fits.ok());
  EXPECT_EQ(Elements<uint16_t>(*fits), (std::vector<uint16_t>{0, 65535, 7}));
}

TEST(GrpcCodec, ContentsInTheWrongFieldOrCountAreRefused) {
  const int64_t shape[] = {2, 2};
  InferTensorContents contents;
  for (int32_t v : {1, 2, 3, 4}) contents.add_int_contents(v);
  auto wrong = TensorFromContents(contents, shape, DataType::F32(), Owner(), "input 'x'");
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().message(),
            "input 'x': datatype FP32 takes its elements in fp32_contents, the request sets int_contents");

  contents.clear_int_contents();
  for (float v : {1.f, 2.f, 3.f}) contents.add_fp32_contents(v);
  auto few = TensorFromContents(contents, shape, DataType::F32(), Owner(), "input 'x'");
  ASSERT_FALSE(few.ok());
  EXPECT_EQ(few.status().message(), "input 'x': fp32_contents has 3 elements, the shape (2, 2) needs 4");

  auto none = TensorFromContents(InferTensorContents(), shape, DataType::F32(), Owner(), "input 'x'");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().message(), "input 'x': fp32_contents is empty, the shape (2, 2) needs 4 elements");

  auto half = TensorFromContents(contents, shape, DataType::Float(16), Owner(), "input 'h'");
  ASSERT_FALSE(half.ok());
  EXPECT_EQ(half.status().message(), "input 'h': FP16 has no contents field; send its bytes in raw_input_contents");

  const int64_t empty[] = {0, 4};
  auto nothing = TensorFromContents(InferTensorContents(), empty, DataType::F32(), Owner(), "input 'x'");
  ASSERT_TRUE(nothing.ok());
  EXPECT_EQ((*nothing)->num_elements(), 0);
}

TEST(GrpcCodec, JsonDocumentsBecomeMessagesOrSayWhatDoesNotFit) {
  inference::ServerMetadataResponse metadata;
  ASSERT_FALSE(MessageFromJson(R"({"name": "s", "version": "1", "extensions": ["a", "b"]})", &metadata, "metadata"));
  EXPECT_EQ(metadata.name(), "s");
  EXPECT_EQ(metadata.extensions_size(), 2);

  inference::ModelStatisticsResponse stats;
  const auto error = MessageFromJson(R"({"model_stats": [{"name": "m", "colour": 1}]})", &stats, "statistics");
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(error->http_status, 500);
  EXPECT_NE(error->message.find("the statistics does not convert to inference.ModelStatisticsResponse"),
            std::string::npos)
      << error->message;
  EXPECT_NE(error->message.find("colour"), std::string::npos) << error->message;
}

TEST(GrpcCodec, ModelConfigDropsTheOutputsFormatOnly) {
  inference::ModelConfig config;
  const auto error = ModelConfigFromJson(
      R"({"name": "m", "max_batch_size": 8, "input": [{"name": "x", "data_type": "TYPE_FP32", "format": "FORMAT_NONE",
          "dims": [-1, 64]}], "output": [{"name": "y", "data_type": "TYPE_FP32", "format": "FORMAT_NONE", "dims": [10]}],
          "dynamic_batching": {"max_queue_delay_microseconds": 500}, "parameters": {"f": {"string_value": "main"}}})",
      &config);
  ASSERT_FALSE(error.has_value()) << error->message;
  EXPECT_EQ(config.max_batch_size(), 8);
  EXPECT_EQ(config.input(0).data_type(), inference::TYPE_FP32);
  EXPECT_EQ(config.input(0).dims(0), -1);
  EXPECT_EQ(config.output(0).dims(0), 10);
  EXPECT_EQ(config.dynamic_batching().max_queue_delay_microseconds(), 500u);
  EXPECT_EQ(config.parameters().at("f").string_value(), "main");
  EXPECT_TRUE(ModelConfigFromJson(R"({"name": "m", "sequence_batching": {}})", &config).has_value());
}

TEST(GrpcCodec, OutputsGoInRawContentsWithTheirNamesDatatypesAndShapes) {
  ModelVersion version;
  version.model = "m";
  version.version = 3;
  auto y = vm::Tensor::FromValues<float>({2, 2}, {1.f, 2.f, 3.f, 4.f});
  auto z = vm::Tensor::FromValues<int64_t>({1}, {42});
  ASSERT_TRUE(y.ok() && z.ok());
  const NamedOutput outputs[] = {{"output1", z->get()}, {"output0", y->get()}};
  inference::ModelInferResponse response;
  EncodeInferResponse(version, "req-1", outputs, &response);
  EXPECT_EQ(response.model_name(), "m");
  EXPECT_EQ(response.model_version(), "3");
  EXPECT_EQ(response.id(), "req-1");
  ASSERT_EQ(response.outputs_size(), 2);
  ASSERT_EQ(response.raw_output_contents_size(), 2);
  EXPECT_EQ(response.outputs(0).name(), "output1");
  EXPECT_EQ(response.outputs(0).datatype(), "INT64");
  EXPECT_EQ(response.outputs(1).datatype(), "FP32");
  EXPECT_EQ(std::vector<int64_t>(response.outputs(1).shape().begin(), response.outputs(1).shape().end()),
            (std::vector<int64_t>{2, 2}));
  int64_t answer = 0;
  ASSERT_EQ(response.raw_output_contents(0).size(), sizeof answer);
  std::memcpy(&answer, response.raw_output_contents(0).data(), sizeof answer);
  EXPECT_EQ(answer, 42);
  float last = 0;
  ASSERT_EQ(response.raw_output_contents(1).size(), 4 * sizeof last);
  std::memcpy(&last, response.raw_output_contents(1).data() + 3 * sizeof last, sizeof last);
  EXPECT_EQ(last, 4.f);
  EXPECT_FALSE(response.outputs(0).has_contents());
}

}  // namespace
}  // namespace strata::server
