// Protocol documents; see inference_protocol.h.
#include "apps/server/inference_protocol.h"

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "apps/server/tensor_codec.h"

namespace strata::server {
namespace {

using JsonWriter = rapidjson::Writer<rapidjson::StringBuffer>;

// A signature's dims as the protocol's shape: -1 for a symbolic dimension;
// [-1] * ndim when only the rank is known; nothing when not even that.
void WriteShape(const vm::ValueSignature& s, JsonWriter& out) {
  out.StartArray();
  if (s.dims.size() == static_cast<size_t>(std::max(s.ndim, 0))) {
    for (const std::string& d : s.dims) {
      char* end = nullptr;
      const long long n = std::strtoll(d.c_str(), &end, 10);
      out.Int64(end != d.c_str() && *end == '\0' ? n : -1);
    }
  } else {
    for (int32_t i = 0; i < s.ndim; ++i) out.Int64(-1);
  }
  out.EndArray();
}

void WriteTensorMetadata(const std::string& name, const vm::ValueSignature* s, JsonWriter& out) {
  out.StartObject();
  out.Key("name");
  out.String(name.c_str());
  out.Key("datatype");
  const std::optional<DataType> dtype = s ? DataType::Parse(s->dtype) : std::nullopt;
  out.String(dtype ? ProtocolDataType(*dtype).c_str() : "UNKNOWN");
  out.Key("shape");
  if (s) {
    WriteShape(*s, out);
  } else {
    out.StartArray();
    out.EndArray();
  }
  out.EndObject();
}

// The result's tensors with their names: output0.. for a tuple's fields.
std::vector<const vm::ValueSignature*> OutputSignatures(const vm::VMFunction& f) {
  std::vector<const vm::ValueSignature*> out;
  if (!f.has_signature) return out;
  if (f.result_signature.kind == "tuple") {
    for (const vm::ValueSignature& field : f.result_signature.fields) out.push_back(&field);
  } else {
    out.push_back(&f.result_signature);
  }
  return out;
}

std::string OutputName(size_t i) { return "output" + std::to_string(i); }

Status BadRequest(const std::string& message) { return Status(ErrorStatus() << message); }

}  // namespace

std::string ErrorJson(const std::string& message) {
  rapidjson::StringBuffer buffer;
  JsonWriter out(buffer);
  out.StartObject();
  out.Key("error");
  out.String(message.c_str(), static_cast<rapidjson::SizeType>(message.size()));
  out.EndObject();
  return buffer.GetString();
}

std::string ModelMetadataJson(const Model& model, const ModelVersion& version) {
  const vm::VMFunction& f = version.executable->functions()[static_cast<size_t>(version.function_index)];
  rapidjson::StringBuffer buffer;
  JsonWriter out(buffer);
  out.StartObject();
  out.Key("name");
  out.String(model.name.c_str());
  out.Key("versions");
  out.StartArray();
  for (const auto& [number, v] : model.versions) out.String(std::to_string(number).c_str());
  out.EndArray();
  out.Key("platform");
  out.String("strata_executable");
  out.Key("inputs");
  out.StartArray();
  for (size_t i = 0; i < f.param_names.size(); ++i) {
    WriteTensorMetadata(f.param_names[i], f.has_signature ? &f.param_signatures[i] : nullptr, out);
  }
  out.EndArray();
  out.Key("outputs");
  out.StartArray();
  const std::vector<const vm::ValueSignature*> outputs = OutputSignatures(f);
  for (size_t i = 0; i < outputs.size(); ++i) WriteTensorMetadata(OutputName(i), outputs[i], out);
  out.EndArray();
  out.EndObject();
  return buffer.GetString();
}

StatusOr<InferRequest> ParseInferRequest(std::shared_ptr<const std::string> body, int64_t json_length,
                                         const ModelVersion& version) {
  const size_t header = json_length < 0 ? body->size() : static_cast<size_t>(json_length);
  if (header > body->size()) {
    return BadRequest("Inference-Header-Content-Length is " + std::to_string(json_length) + " but the body has " +
                      std::to_string(body->size()) + " bytes");
  }
  rapidjson::Document doc;
  doc.Parse(body->data(), header);
  if (doc.HasParseError()) {
    return BadRequest("invalid JSON in the request at byte " + std::to_string(doc.GetErrorOffset()) + ": " +
                      rapidjson::GetParseError_En(doc.GetParseError()));
  }
  if (!doc.IsObject()) return BadRequest("the request must be a JSON object");
  InferRequest request;
  if (doc.HasMember("id")) {
    if (!doc["id"].IsString()) return BadRequest("'id' must be a string");
    request.id = doc["id"].GetString();
  }
  if (doc.HasMember("parameters") && doc["parameters"].IsObject()) {
    const rapidjson::Value& p = doc["parameters"];
    if (p.HasMember("binary_data_output") && p["binary_data_output"].IsBool()) {
      request.binary_outputs = p["binary_data_output"].GetBool();
    }
    if (p.HasMember("timeout")) {
      if (!p["timeout"].IsUint64()) return BadRequest("parameters.timeout must be a non-negative integer (us)");
      request.timeout_us = static_cast<int64_t>(std::min<uint64_t>(p["timeout"].GetUint64(), INT64_MAX / 1000));
    }
  }
  if (!doc.HasMember("inputs") || !doc["inputs"].IsArray()) return BadRequest("the request needs an 'inputs' array");

  const vm::VMFunction& f = version.executable->functions()[static_cast<size_t>(version.function_index)];
  std::vector<std::optional<vm::Value>> args(f.param_names.size());
  size_t binary_offset = header;
  for (const rapidjson::Value& input : doc["inputs"].GetArray()) {
    if (!input.IsObject() || !input.HasMember("name") || !input["name"].IsString()) {
      return BadRequest("every input needs a 'name'");
    }
    const std::string name = input["name"].GetString();
    const std::string what = "input '" + name + "'";
    auto param = std::find(f.param_names.begin(), f.param_names.end(), name);
    if (param == f.param_names.end()) {
      std::string names;
      for (const std::string& p : f.param_names) names += (names.empty() ? "" : ", ") + p;
      return BadRequest("unknown " + what + "; model '" + version.model + "' takes: " + names);
    }
    const size_t index = static_cast<size_t>(param - f.param_names.begin());
    if (args[index]) return BadRequest(what + " is given twice");
    if (!input.HasMember("datatype") || !input["datatype"].IsString()) return BadRequest(what + " needs a 'datatype'");
    const std::optional<DataType> dtype = DataTypeFromProtocol(input["datatype"].GetString());
    if (!dtype) {
      return BadRequest(what + ": datatype '" + std::string(input["datatype"].GetString()) +
                        "' is not supported (BOOL, UINT8..64, INT8..64, FP16, FP32, FP64)");
    }
    if (!input.HasMember("shape") || !input["shape"].IsArray()) return BadRequest(what + " needs a 'shape' array");
    std::vector<int64_t> shape;
    for (const rapidjson::Value& d : input["shape"].GetArray()) {
      if (!d.IsInt64() || d.GetInt64() < 0) return BadRequest(what + ": 'shape' must hold non-negative integers");
      shape.push_back(d.GetInt64());
    }
    const rapidjson::Value* params =
        input.HasMember("parameters") && input["parameters"].IsObject() ? &input["parameters"] : nullptr;
    std::optional<StatusOr<vm::Ref<vm::Tensor>>> tensor;  // from the binary part or from 'data'
    if (params && params->HasMember("binary_data_size")) {
      const rapidjson::Value& size = (*params)["binary_data_size"];
      if (!size.IsUint64()) return BadRequest(what + ": binary_data_size must be a non-negative integer");
      const uint64_t n = size.GetUint64();
      if (n > body->size() - binary_offset) {
        return BadRequest(what + ": binary_data_size " + std::to_string(n) + " runs past the end of the body (" +
                          std::to_string(body->size() - binary_offset) + " binary bytes left)");
      }
      const std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(body->data()) + binary_offset, n);
      binary_offset += n;
      tensor.emplace(TensorFromBinary(bytes, shape, *dtype, body, what));
    } else {
      if (!input.HasMember("data")) return BadRequest(what + " needs 'data' (or parameters.binary_data_size)");
      tensor.emplace(TensorFromJson(input["data"], shape, *dtype, what));
    }
    if (!tensor->ok()) return tensor->status();
    args[index] = vm::Value::FromTensor(*std::move(*tensor));
  }
  if (binary_offset != body->size()) {
    return BadRequest("the body has " + std::to_string(body->size() - binary_offset) +
                      " binary bytes that no input's binary_data_size claims");
  }
  for (size_t i = 0; i < args.size(); ++i) {
    if (!args[i]) return BadRequest("missing input '" + f.param_names[i] + "'");
    request.args.push_back(*std::move(args[i]));
  }
  if (doc.HasMember("outputs")) {
    if (!doc["outputs"].IsArray()) return BadRequest("'outputs' must be an array");
    for (const rapidjson::Value& output : doc["outputs"].GetArray()) {
      if (!output.IsObject() || !output.HasMember("name") || !output["name"].IsString()) {
        return BadRequest("every requested output needs a 'name'");
      }
      RequestedOutput r{output["name"].GetString(), request.binary_outputs};
      if (output.HasMember("parameters") && output["parameters"].IsObject() &&
          output["parameters"].HasMember("binary_data") && output["parameters"]["binary_data"].IsBool()) {
        r.binary = output["parameters"]["binary_data"].GetBool();
      }
      request.outputs.push_back(std::move(r));
    }
  }
  return request;
}

StatusOr<InferResponse> BuildInferResponse(const ModelVersion& version, const InferRequest& request,
                                           const vm::Value& result) {
  std::vector<const vm::Tensor*> tensors;
  if (result.is_tuple()) {
    for (const vm::Value& field : result.tuple()->fields()) {
      if (!field.is_tensor()) return Status(ErrorStatus(StatusCode::kUnimplemented) << "an output is not a tensor");
      tensors.push_back(field.tensor());
    }
  } else if (result.is_tensor()) {
    tensors.push_back(result.tensor());
  } else {
    return Status(ErrorStatus(StatusCode::kUnimplemented)
                  << "the model returned " << result.Describe() << "; only tensors can be sent");
  }
  std::vector<RequestedOutput> wanted = request.outputs;
  if (wanted.empty()) {
    for (size_t i = 0; i < tensors.size(); ++i) wanted.push_back({OutputName(i), request.binary_outputs});
  }
  rapidjson::StringBuffer buffer;
  JsonWriter out(buffer);
  out.StartObject();
  out.Key("model_name");
  out.String(version.model.c_str());
  out.Key("model_version");
  out.String(std::to_string(version.version).c_str());
  if (!request.id.empty()) {
    out.Key("id");
    out.String(request.id.c_str());
  }
  out.Key("outputs");
  out.StartArray();
  std::string binary;
  for (const RequestedOutput& r : wanted) {
    size_t index = tensors.size();
    if (r.name.rfind("output", 0) == 0) {
      const std::string digits = r.name.substr(6);
      if (!digits.empty() && digits.size() < 6 && std::all_of(digits.begin(), digits.end(), ::isdigit)) {
        index = std::stoul(digits);
      }
    }
    if (index >= tensors.size()) {
      return Status(ErrorStatus() << "unknown output '" << r.name << "'; the model has output0"
                                  << (tensors.size() > 1 ? "..output" + std::to_string(tensors.size() - 1) : ""));
    }
    const vm::Tensor& t = *tensors[index];
    if (t.device().device_type != kDLCPU) {
      return Status(ErrorStatus(StatusCode::kInternal) << "output '" << r.name << "' stayed on a device");
    }
    out.StartObject();
    out.Key("name");
    out.String(r.name.c_str());
    out.Key("datatype");
    out.String(ProtocolDataType(t.dtype()).c_str());
    out.Key("shape");
    out.StartArray();
    for (int64_t d : t.shape()) out.Int64(d);
    out.EndArray();
    if (r.binary) {
      out.Key("parameters");
      out.StartObject();
      out.Key("binary_data_size");
      out.Int64(t.num_bytes());
      out.EndObject();
      binary.append(static_cast<const char*>(t.data()), static_cast<size_t>(t.num_bytes()));
    } else {
      out.Key("data");
      WriteJsonData(t, out);
    }
    out.EndObject();
  }
  out.EndArray();
  out.EndObject();
  InferResponse response;
  response.body = buffer.GetString();
  if (!binary.empty()) {
    response.json_length = static_cast<int64_t>(response.body.size());
    response.body += binary;
  }
  return response;
}

}  // namespace strata::server
