// Protocol documents; see inference_protocol.h.
#include "apps/server/inference_protocol.h"

#include <rapidjson/document.h>

#include "apps/server/json_util.h"
#include "apps/server/tensor_codec.h"

namespace strata::server {
namespace {

constexpr const char* kServerName = "strata-server";
constexpr const char* kServerVersion = STRATA_VERSION;  // the project's version (CMakeLists.txt)

std::optional<DataType> SignatureDtype(const vm::ValueSignature* s) {
  return s ? DataType::Parse(s->dtype) : std::nullopt;
}

void WriteShape(JsonWriter& out, const vm::ValueSignature* s, size_t skip) {
  out.StartArray();
  if (s) {
    if (std::optional<std::vector<int64_t>> shape = ProtocolShape(*s)) {
      for (size_t i = skip; i < shape->size(); ++i) out.Int64((*shape)[i]);
    }
  }
  out.EndArray();
}

void WriteTensorMetadata(JsonWriter& out, const std::string& name, const vm::ValueSignature* s) {
  out.StartObject();
  out.Key("name");
  WriteString(out, name);
  out.Key("datatype");
  const std::optional<DataType> dtype = SignatureDtype(s);
  out.String(dtype ? ProtocolDataType(*dtype).c_str() : "UNKNOWN");
  out.Key("shape");
  WriteShape(out, s, 0);
  out.EndObject();
}

// Triton's model-config tensor: {"name", "data_type": "TYPE_FP32", "dims"}; with
// batching, the batch dimension is implied by max_batch_size and left out.
void WriteConfigTensor(JsonWriter& out, const std::string& name, const vm::ValueSignature* s, bool batched,
                       bool input) {
  out.StartObject();
  out.Key("name");
  WriteString(out, name);
  out.Key("data_type");
  const std::optional<DataType> dtype = SignatureDtype(s);
  out.String(dtype ? ("TYPE_" + ProtocolDataType(*dtype)).c_str() : "TYPE_INVALID");
  if (input) {  // Triton's ModelInput has a format, its ModelOutput none
    out.Key("format");
    out.String("FORMAT_NONE");
  }
  out.Key("dims");
  WriteShape(out, s, batched ? 1 : 0);
  out.EndObject();
}

void WriteDuration(JsonWriter& out, const char* key, const StatDuration& d) {
  out.Key(key);
  out.StartObject();
  out.Key("count");
  out.Int64(d.count);
  out.Key("ns");
  out.Int64(d.ns);
  out.EndObject();
}

}  // namespace

std::string ErrorJson(const std::string& message) {
  rapidjson::StringBuffer buffer;
  JsonWriter out(buffer);
  out.StartObject();
  out.Key("error");
  WriteString(out, message);
  out.EndObject();
  return buffer.GetString();
}

std::string ServerMetadataJson() {
  rapidjson::StringBuffer buffer;
  JsonWriter out(buffer);
  out.StartObject();
  out.Key("name");
  out.String(kServerName);
  out.Key("version");
  out.String(kServerVersion);
  out.Key("extensions");
  out.StartArray();
  for (const char* e : {"binary_tensor_data", "model_repository", "model_configuration", "statistics"}) out.String(e);
  out.EndArray();
  out.EndObject();
  return buffer.GetString();
}

std::string ModelMetadataJson(const Model& model, const ModelVersion& version) {
  const vm::VMFunction& f = version.function();
  rapidjson::StringBuffer buffer;
  JsonWriter out(buffer);
  out.StartObject();
  out.Key("name");
  WriteString(out, model.name);
  out.Key("versions");
  out.StartArray();
  for (const auto& [number, v] : model.versions) out.String(std::to_string(number).c_str());
  out.EndArray();
  out.Key("platform");
  out.String("strata_executable");
  out.Key("inputs");
  out.StartArray();
  const std::vector<std::string>& inputs = InputNames(f);
  for (size_t i = 0; i < inputs.size(); ++i) {
    WriteTensorMetadata(out, inputs[i], f.has_signature ? &f.param_signatures[i] : nullptr);
  }
  out.EndArray();
  out.Key("outputs");
  out.StartArray();
  const std::vector<const vm::ValueSignature*> signatures = OutputSignatures(f);
  const std::vector<std::string> outputs = OutputNames(f);
  for (size_t i = 0; i < outputs.size(); ++i) {
    WriteTensorMetadata(out, outputs[i], i < signatures.size() ? signatures[i] : nullptr);
  }
  out.EndArray();
  out.EndObject();
  return buffer.GetString();
}

std::string ModelConfigJson(const Model& model, const ModelVersion& version) {
  const vm::VMFunction& f = version.function();
  const ModelConfig& config = version.config;
  const bool batched = config.dynamic_batching.has_value();
  rapidjson::StringBuffer buffer;
  JsonWriter out(buffer);
  out.StartObject();
  out.Key("name");
  WriteString(out, model.name);
  out.Key("platform");
  out.String("strata_executable");
  out.Key("backend");
  out.String("strata");
  out.Key("version_policy");
  out.StartObject();
  out.Key("all");
  out.StartObject();
  out.EndObject();
  out.EndObject();
  out.Key("max_batch_size");
  out.Int64(batched ? config.dynamic_batching->max_batch_size : 0);
  out.Key("input");
  out.StartArray();
  const std::vector<std::string>& inputs = InputNames(f);
  for (size_t i = 0; i < inputs.size(); ++i) {
    WriteConfigTensor(out, inputs[i], f.has_signature ? &f.param_signatures[i] : nullptr, batched, true);
  }
  out.EndArray();
  out.Key("output");
  out.StartArray();
  const std::vector<const vm::ValueSignature*> signatures = OutputSignatures(f);
  const std::vector<std::string> outputs = OutputNames(f);
  for (size_t i = 0; i < outputs.size(); ++i) {
    WriteConfigTensor(out, outputs[i], i < signatures.size() ? signatures[i] : nullptr, batched, false);
  }
  out.EndArray();
  out.Key("instance_group");
  out.StartArray();
  out.StartObject();
  out.Key("name");
  WriteString(out, model.name);
  out.Key("kind");
  out.String("KIND_CPU");
  out.Key("count");
  out.Int64(config.instance_count);
  out.EndObject();
  out.EndArray();
  if (batched) {
    out.Key("dynamic_batching");
    out.StartObject();
    out.Key("max_queue_delay_microseconds");
    out.Int64(config.dynamic_batching->max_queue_delay_us);
    out.Key("default_queue_policy");
    out.StartObject();
    out.Key("max_queue_size");
    out.Int64(config.max_queue_size);
    out.Key("default_timeout_microseconds");
    out.Int64(config.timeout_ms * 1000);
    out.EndObject();
    out.EndObject();
  }
  // Strata's own settings, as Triton's string parameters.
  out.Key("parameters");
  out.StartObject();
  auto parameter = [&](const char* key, const std::string& value) {
    out.Key(key);
    out.StartObject();
    out.Key("string_value");
    WriteString(out, value);
    out.EndObject();
  };
  parameter("function", config.function);
  parameter("max_queue_size", std::to_string(config.max_queue_size));
  parameter("timeout_ms", std::to_string(config.timeout_ms));
  for (const auto& [device, options] : config.device_options) parameter(("device_options." + device).c_str(), options);
  out.EndObject();
  out.EndObject();
  return buffer.GetString();
}

std::string StatisticsJson(const std::vector<std::shared_ptr<ModelVersion>>& versions) {
  rapidjson::StringBuffer buffer;
  JsonWriter out(buffer);
  out.StartObject();
  out.Key("model_stats");
  out.StartArray();
  for (const std::shared_ptr<ModelVersion>& v : versions) {
    const StatisticsSnapshot s = v->stats.Snapshot();
    out.StartObject();
    out.Key("name");
    WriteString(out, v->model);
    out.Key("version");
    out.String(std::to_string(v->version).c_str());
    out.Key("last_inference");
    out.Int64(s.last_inference_ms);
    out.Key("inference_count");
    out.Int64(s.inference_count);
    out.Key("execution_count");
    out.Int64(s.execution_count);
    out.Key("inference_stats");
    out.StartObject();
    WriteDuration(out, "success", s.success);
    WriteDuration(out, "fail", s.fail);
    WriteDuration(out, "queue", s.queue);
    WriteDuration(out, "compute_input", s.compute_input);
    WriteDuration(out, "compute_infer", s.compute_infer);
    WriteDuration(out, "compute_output", s.compute_output);
    WriteDuration(out, "cache_hit", {});
    WriteDuration(out, "cache_miss", {});
    out.EndObject();
    out.Key("batch_stats");
    out.StartArray();
    for (const auto& [size, b] : s.batches) {
      out.StartObject();
      out.Key("batch_size");
      out.Int64(size);
      WriteDuration(out, "compute_input", b.compute_input);
      WriteDuration(out, "compute_infer", b.compute_infer);
      WriteDuration(out, "compute_output", b.compute_output);
      out.EndObject();
    }
    out.EndArray();
    out.EndObject();
  }
  out.EndArray();
  out.EndObject();
  return buffer.GetString();
}

std::string RepositoryIndexJson(const ModelRepository& repository, bool ready_only) {
  rapidjson::StringBuffer buffer;
  JsonWriter out(buffer);
  out.StartArray();
  auto entry = [&](const std::string& name, const std::string& version, const char* state, const std::string& reason) {
    if (ready_only && std::string_view(state) != "READY") return;
    out.StartObject();
    out.Key("name");
    WriteString(out, name);
    if (!version.empty()) {
      out.Key("version");
      out.String(version.c_str());
    }
    out.Key("state");
    out.String(state);
    out.Key("reason");
    WriteString(out, reason);
    out.EndObject();
  };
  for (const std::string& name : repository.FolderNames()) {
    std::shared_ptr<const Model> model = repository.Find(name);
    if (!model) {
      entry(name, "", "UNAVAILABLE", "unloaded");
    } else if (!model->reason.empty()) {
      entry(name, "", "UNAVAILABLE", model->reason);
    } else {
      for (const auto& [n, v] : model->versions) {
        entry(name, std::to_string(n), v->ready ? "READY" : "UNAVAILABLE", v->reason);
      }
    }
  }
  out.EndArray();
  return buffer.GetString();
}

std::optional<ServiceError> ParseInferRequest(std::shared_ptr<const std::string> body, int64_t json_length,
                                              const ModelVersion& version, const InferenceService& service,
                                              InferRequest* out) {
  const size_t header = json_length < 0 ? body->size() : static_cast<size_t>(json_length);
  if (header > body->size()) {
    return BadRequest("Inference-Header-Content-Length is " + std::to_string(json_length) + " but the body has " +
                      std::to_string(body->size()) + " bytes");
  }
  rapidjson::Document doc;
  std::string error;
  if (!ParseJson(std::string_view(body->data(), header), &doc, &error)) return BadRequest(error + " (the request)");
  if (!doc.IsObject()) return BadRequest("the request must be a JSON object");
  InferRequest& request = *out;
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

  const vm::VMFunction& f = version.function();
  std::vector<std::optional<vm::Value>> args(f.param_names.size());
  size_t binary_offset = header;
  for (const rapidjson::Value& input : doc["inputs"].GetArray()) {
    if (!input.IsObject() || !input.HasMember("name") || !input["name"].IsString()) {
      return BadRequest("every input needs a 'name'");
    }
    const std::string name = input["name"].GetString();
    const std::string what = "input '" + name + "'";
    if (!input.HasMember("datatype") || !input["datatype"].IsString()) return BadRequest(what + " needs a 'datatype'");
    if (!input.HasMember("shape") || !input["shape"].IsArray()) return BadRequest(what + " needs a 'shape' array");
    std::vector<int64_t> shape;
    for (const rapidjson::Value& d : input["shape"].GetArray()) {
      if (!d.IsInt64() || d.GetInt64() < 0) return BadRequest(what + ": 'shape' must hold non-negative integers");
      shape.push_back(d.GetInt64());
    }
    size_t index = 0;
    DataType dtype;
    if (auto e = service.MatchInput(version, name, input["datatype"].GetString(), shape, &index, &dtype)) return e;
    if (args[index]) return BadRequest(what + " is given twice");
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
      tensor.emplace(TensorFromBinary(bytes, shape, dtype, body, what));
    } else {
      if (!input.HasMember("data")) return BadRequest(what + " needs 'data' (or parameters.binary_data_size)");
      tensor.emplace(TensorFromJson(input["data"], shape, dtype, what));
    }
    if (!tensor->ok()) return BadRequest(tensor->status().message());
    args[index] = vm::Value::FromTensor(*std::move(*tensor));
  }
  if (binary_offset != body->size()) {
    return BadRequest("the body has " + std::to_string(body->size() - binary_offset) +
                      " binary bytes that no input's binary_data_size claims");
  }
  if (auto e = service.CheckAllInputs(version, args)) return e;
  for (std::optional<vm::Value>& arg : args) request.args.push_back(*std::move(arg));
  if (doc.HasMember("outputs")) {
    if (!doc["outputs"].IsArray()) return BadRequest("'outputs' must be an array");
    for (const rapidjson::Value& output : doc["outputs"].GetArray()) {
      if (!output.IsObject() || !output.HasMember("name") || !output["name"].IsString()) {
        return BadRequest("every requested output needs a 'name'");
      }
      bool binary = request.binary_outputs;
      if (output.HasMember("parameters") && output["parameters"].IsObject() &&
          output["parameters"].HasMember("binary_data") && output["parameters"]["binary_data"].IsBool()) {
        binary = output["parameters"]["binary_data"].GetBool();
      }
      request.outputs.push_back(output["name"].GetString());
      request.binary.push_back(binary);
    }
  }
  return std::nullopt;
}

InferResponse BuildInferResponse(const ModelVersion& version, const InferRequest& request,
                                 const std::vector<NamedOutput>& outputs) {
  rapidjson::StringBuffer buffer;
  JsonWriter out(buffer);
  out.StartObject();
  out.Key("model_name");
  WriteString(out, version.model);
  out.Key("model_version");
  out.String(std::to_string(version.version).c_str());
  if (!request.id.empty()) {
    out.Key("id");
    WriteString(out, request.id);
  }
  out.Key("outputs");
  out.StartArray();
  std::string binary;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const vm::Tensor& t = *outputs[i].tensor;
    const bool as_binary = request.outputs.empty() ? request.binary_outputs : request.binary[i];
    out.StartObject();
    out.Key("name");
    WriteString(out, outputs[i].name);
    out.Key("datatype");
    out.String(ProtocolDataType(t.dtype()).c_str());
    out.Key("shape");
    out.StartArray();
    for (int64_t d : t.shape()) out.Int64(d);
    out.EndArray();
    if (as_binary) {
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
