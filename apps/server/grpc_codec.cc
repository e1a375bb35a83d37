// The gRPC transport's translations; see grpc_codec.h.
#include "apps/server/grpc_codec.h"

#include <algorithm>
#include <cstdint>
#include <utility>

#include <google/protobuf/util/json_util.h>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "apps/server/tensor_codec.h"

namespace strata::server {
namespace {

using inference::InferTensorContents;

// The contents field that carries `dtype`'s elements, as the protocol assigns
// them; null for the datatypes that have none (FP16: raw contents only).
const char* ContentsFieldOf(DataType dtype) {
  switch (dtype.code()) {
    case DataType::Code::kBool: return "bool_contents";
    case DataType::Code::kInt: return dtype.bits() == 64 ? "int64_contents" : "int_contents";
    case DataType::Code::kUInt: return dtype.bits() == 64 ? "uint64_contents" : "uint_contents";
    case DataType::Code::kFloat:
      if (dtype.bits() == 32) return "fp32_contents";
      if (dtype.bits() == 64) return "fp64_contents";
      return nullptr;
    default: return nullptr;
  }
}

// The element count of each of `contents`' fields, by name.
std::vector<std::pair<const char*, int>> FieldSizes(const InferTensorContents& c) {
  return {{"bool_contents", c.bool_contents_size()},     {"int_contents", c.int_contents_size()},
          {"int64_contents", c.int64_contents_size()},   {"uint_contents", c.uint_contents_size()},
          {"uint64_contents", c.uint64_contents_size()}, {"fp32_contents", c.fp32_contents_size()},
          {"fp64_contents", c.fp64_contents_size()},     {"bytes_contents", c.bytes_contents_size()}};
}

// A view of `values` (a repeated field of the tensor's own element type) in place.
template <typename T>
StatusOr<vm::Ref<vm::Tensor>> ViewField(const google::protobuf::RepeatedField<T>& values,
                                        std::span<const int64_t> shape, DataType dtype,
                                        std::shared_ptr<const void> owner, const std::string& what) {
  const std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(values.data()), values.size() * sizeof(T));
  return TensorFromBinary(bytes, shape, dtype, std::move(owner), what);
}

// A new tensor of the narrower `Element` from `values`, each checked against its range.
template <typename Element, typename T>
StatusOr<vm::Ref<vm::Tensor>> NarrowField(const google::protobuf::RepeatedField<T>& values,
                                          std::span<const int64_t> shape, DataType dtype, const char* field,
                                          const std::string& what) {
  STRATA_ASSIGN_OR_RETURN(vm::Ref<vm::Tensor> tensor, vm::Tensor::Empty(shape, dtype));
  Element* out = static_cast<Element*>(tensor->data());
  for (int i = 0; i < values.size(); ++i) {
    const T v = values.Get(i);
    if (!std::in_range<Element>(v)) {
      return Status(ErrorStatus() << what << ": element " << i << " of " << field << " (" << v
                                  << ") is out of the range of " << ProtocolDataType(dtype));
    }
    out[i] = static_cast<Element>(v);
  }
  return tensor;
}

}  // namespace

grpc::StatusCode GrpcCodeOf(int http_status) {
  switch (http_status) {
    case 400: return grpc::StatusCode::INVALID_ARGUMENT;
    case 403: return grpc::StatusCode::FAILED_PRECONDITION;
    case 404: return grpc::StatusCode::NOT_FOUND;
    case 413: return grpc::StatusCode::RESOURCE_EXHAUSTED;
    case 503: return grpc::StatusCode::UNAVAILABLE;
    default: return grpc::StatusCode::INTERNAL;
  }
}

grpc::Status GrpcStatusOf(const ServiceError& error) {
  return grpc::Status(GrpcCodeOf(error.http_status), error.message);
}

std::optional<ServiceError> MessageFromJson(std::string_view json, google::protobuf::Message* out,
                                            std::string_view what) {
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;  // a field HTTP has and gRPC would drop is a bug to see
  const auto parsed = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(json.data(), json.size()), out, options);
  if (parsed.ok()) return std::nullopt;
  return ServiceError{500, "the " + std::string(what) + " does not convert to " + out->GetTypeName() + ": " +
                               std::string(parsed.message())};
}

std::optional<ServiceError> ModelConfigFromJson(std::string_view json, inference::ModelConfig* out) {
  // The HTTP document gives outputs a "format" too; Triton's ModelOutput has
  // none (only inputs have a layout), so it is dropped here.
  rapidjson::Document doc;
  doc.Parse(json.data(), json.size());
  if (doc.HasParseError() || !doc.IsObject()) return ServiceError{500, "the model configuration is not a JSON object"};
  if (doc.HasMember("output") && doc["output"].IsArray()) {
    for (rapidjson::Value& output : doc["output"].GetArray()) {
      if (output.IsObject()) output.RemoveMember("format");
    }
  }
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  doc.Accept(writer);
  return MessageFromJson(std::string_view(buffer.GetString(), buffer.GetSize()), out, "model configuration");
}

StatusOr<vm::Ref<vm::Tensor>> TensorFromContents(const InferTensorContents& contents, std::span<const int64_t> shape,
                                                 DataType dtype, std::shared_ptr<const void> owner,
                                                 const std::string& what) {
  const char* field = ContentsFieldOf(dtype);
  if (field == nullptr) {
    return Status(ErrorStatus() << what << ": " << ProtocolDataType(dtype)
                                << " has no contents field; send its bytes in raw_input_contents");
  }
  STRATA_ASSIGN_OR_RETURN(int64_t count, vm::NumElementsOf(shape));
  for (const auto& [name, size] : FieldSizes(contents)) {
    if (size == 0) continue;
    if (std::string_view(name) != field) {
      return Status(ErrorStatus() << what << ": datatype " << ProtocolDataType(dtype) << " takes its elements in "
                                  << field << ", the request sets " << name);
    }
    if (size != count) {
      return Status(ErrorStatus() << what << ": " << field << " has " << size << " elements, the shape "
                                  << vm::ShapeToString(shape) << " needs " << count);
    }
  }
  if (count == 0) return vm::Tensor::Empty(shape, dtype);
  const bool found = std::ranges::any_of(FieldSizes(contents), [](const auto& f) { return f.second > 0; });
  if (!found) {
    return Status(ErrorStatus() << what << ": " << field << " is empty, the shape " << vm::ShapeToString(shape)
                                << " needs " << count << " elements");
  }
  switch (dtype.code()) {
    case DataType::Code::kBool: return ViewField(contents.bool_contents(), shape, dtype, std::move(owner), what);
    case DataType::Code::kInt:
      switch (dtype.bits()) {
        case 8: return NarrowField<int8_t>(contents.int_contents(), shape, dtype, field, what);
        case 16: return NarrowField<int16_t>(contents.int_contents(), shape, dtype, field, what);
        case 32: return ViewField(contents.int_contents(), shape, dtype, std::move(owner), what);
        default: return ViewField(contents.int64_contents(), shape, dtype, std::move(owner), what);
      }
    case DataType::Code::kUInt:
      switch (dtype.bits()) {
        case 8: return NarrowField<uint8_t>(contents.uint_contents(), shape, dtype, field, what);
        case 16: return NarrowField<uint16_t>(contents.uint_contents(), shape, dtype, field, what);
        case 32: return ViewField(contents.uint_contents(), shape, dtype, std::move(owner), what);
        default: return ViewField(contents.uint64_contents(), shape, dtype, std::move(owner), what);
      }
    default:
      if (dtype.bits() == 32) return ViewField(contents.fp32_contents(), shape, dtype, std::move(owner), what);
      return ViewField(contents.fp64_contents(), shape, dtype, std::move(owner), what);
  }
}

std::optional<ServiceError> DecodeInferRequest(const inference::ModelInferRequest& request,
                                               std::shared_ptr<const void> owner, const ModelVersion& version,
                                               const InferenceService& service, GrpcInferRequest* out) {
  if (auto it = request.parameters().find("timeout"); it != request.parameters().end()) {
    const inference::InferParameter& p = it->second;
    int64_t us = -1;
    if (p.parameter_choice_case() == inference::InferParameter::kInt64Param) us = p.int64_param();
    if (p.parameter_choice_case() == inference::InferParameter::kUint64Param) {
      us = static_cast<int64_t>(std::min<uint64_t>(p.uint64_param(), INT64_MAX));
    }
    if (us < 0) return BadRequest("parameters[\"timeout\"] must be a non-negative int64_param (microseconds)");
    out->timeout_us = std::min<int64_t>(us, INT64_MAX / 1000);
  }
  const int raw_count = request.raw_input_contents_size();
  if (raw_count > 0 && raw_count != request.inputs_size()) {
    return BadRequest("raw_input_contents has " + std::to_string(raw_count) + " entries for " +
                      std::to_string(request.inputs_size()) + " inputs; when used, it needs one per input, in order");
  }
  std::vector<std::optional<vm::Value>> args(version.function().param_names.size());
  for (int i = 0; i < request.inputs_size(); ++i) {
    const inference::ModelInferRequest::InferInputTensor& input = request.inputs(i);
    const std::string what = "input '" + input.name() + "'";
    const std::vector<int64_t> shape(input.shape().begin(), input.shape().end());
    if (std::ranges::any_of(shape, [](int64_t d) { return d < 0; })) {
      return BadRequest(what + ": shape " + vm::ShapeToString(shape) + " has a negative dimension");
    }
    size_t index = 0;
    DataType dtype;
    if (auto e = service.MatchInput(version, input.name(), input.datatype(), shape, &index, &dtype)) return e;
    if (args[index]) return BadRequest(what + " is given twice");
    std::optional<StatusOr<vm::Ref<vm::Tensor>>> tensor;  // from raw_input_contents or from contents
    if (raw_count > 0) {
      if (input.has_contents() && input.contents().ByteSizeLong() > 0) {
        return BadRequest(what + " sets contents while the request uses raw_input_contents (one or the other)");
      }
      const std::string& raw = request.raw_input_contents(i);
      const StatusOr<int64_t> nbytes = vm::NumBytesOf(shape, dtype);
      if (!nbytes.ok()) return BadRequest(what + ": " + nbytes.status().message());
      if (static_cast<int64_t>(raw.size()) != *nbytes) {
        return BadRequest(what + ": raw_input_contents[" + std::to_string(i) + "] has " + std::to_string(raw.size()) +
                          " bytes, the shape " + vm::ShapeToString(shape) + " of " + ProtocolDataType(dtype) +
                          " needs " + std::to_string(*nbytes));
      }
      tensor.emplace(TensorFromBinary(std::span(reinterpret_cast<const uint8_t*>(raw.data()), raw.size()), shape, dtype,
                                      owner, what));
    } else {
      tensor.emplace(TensorFromContents(input.contents(), shape, dtype, owner, what));
    }
    if (!tensor->ok()) return BadRequest(tensor->status().message());
    args[index] = vm::Value::FromTensor(*std::move(*tensor));
  }
  if (auto e = service.CheckAllInputs(version, args)) return e;
  for (std::optional<vm::Value>& arg : args) out->args.push_back(*std::move(arg));
  for (const inference::ModelInferRequest::InferRequestedOutputTensor& output : request.outputs()) {
    out->outputs.push_back(output.name());
  }
  return std::nullopt;
}

void EncodeInferResponse(const ModelVersion& version, const std::string& id, std::span<const NamedOutput> outputs,
                         inference::ModelInferResponse* out) {
  out->set_model_name(version.model);
  out->set_model_version(std::to_string(version.version));
  out->set_id(id);
  for (const NamedOutput& o : outputs) {
    const vm::Tensor& t = *o.tensor;
    inference::ModelInferResponse::InferOutputTensor* tensor = out->add_outputs();
    tensor->set_name(o.name);
    tensor->set_datatype(ProtocolDataType(t.dtype()));
    for (int64_t d : t.shape()) tensor->add_shape(d);
    out->add_raw_output_contents()->assign(static_cast<const char*>(t.data()), static_cast<size_t>(t.num_bytes()));
  }
}

}  // namespace strata::server
