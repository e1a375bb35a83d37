// InferenceService; see inference_service.h.
#include "apps/server/inference_service.h"

#include <algorithm>
#include <cstdlib>

#include "apps/server/log.h"
#include "apps/server/tensor_codec.h"

namespace strata::server {
namespace {

std::string JoinNames(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

std::string ShapeText(std::span<const int64_t> shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

}  // namespace

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

ServiceError BadRequest(std::string message) { return ServiceError{400, std::move(message)}; }
ServiceError NotFound(std::string message) { return ServiceError{404, std::move(message)}; }

const std::vector<std::string>& InputNames(const vm::VMFunction& f) { return f.input_names; }

std::vector<std::string> OutputNames(const vm::VMFunction& f) {
  if (!f.output_names.empty()) return f.output_names;
  // A file without a signature (older than format 1.4): one output until the result says otherwise.
  return vm::DefaultOutputNames(std::max<size_t>(OutputSignatures(f).size(), 1));
}

std::optional<std::vector<int64_t>> ProtocolShape(const vm::ValueSignature& s) {
  if (s.ndim < 0) return std::nullopt;
  std::vector<int64_t> shape;
  const bool known = s.dims.size() == static_cast<size_t>(s.ndim);
  for (int32_t i = 0; i < s.ndim; ++i) {
    int64_t d = -1;
    if (known) {
      const std::string& text = s.dims[static_cast<size_t>(i)];
      char* end = nullptr;
      const long long n = std::strtoll(text.c_str(), &end, 10);
      if (end != text.c_str() && *end == '\0') d = n;
    }
    shape.push_back(d);
  }
  return shape;
}

InferenceService::InferenceService(ModelRepository* repository, bool strict_readiness)
    : repository_(repository), strict_readiness_(strict_readiness) {}

std::string InferenceService::NotReadyReason() const {
  if (shutting_down_) return "the server is shutting down";
  return strict_readiness_ ? repository_->NotReadyReason() : "";
}

std::optional<ServiceError> InferenceService::Resolve(const std::string& name, const std::string* version_text,
                                                      Route* out) const {
  out->model = repository_->Find(name);
  if (!out->model) return NotFound("unknown model '" + name + "'");
  if (!out->model->reason.empty()) return BadRequest("model '" + name + "' is not ready: " + out->model->reason);
  if (version_text == nullptr) {
    out->version = out->model->Latest();
    if (out->version) return std::nullopt;
    std::string reasons;
    for (const auto& [n, v] : out->model->versions) reasons += "; version " + std::to_string(n) + ": " + v->reason;
    return BadRequest("model '" + name + "' has no ready version" + reasons);
  }
  char* end = nullptr;
  const long long v = std::strtoll(version_text->c_str(), &end, 10);
  auto it = !version_text->empty() && *end == '\0' ? out->model->versions.find(v) : out->model->versions.end();
  if (it == out->model->versions.end()) {
    return NotFound("model '" + name + "' has no version '" + *version_text + "'");
  }
  out->version = it->second;
  if (!out->version->ready) {
    return BadRequest("model '" + name + "' version " + *version_text + " is not ready: " + out->version->reason);
  }
  return std::nullopt;
}

std::optional<ServiceError> InferenceService::MatchInput(const ModelVersion& version, std::string_view name,
                                                         std::string_view datatype, std::span<const int64_t> shape,
                                                         size_t* out_index, DataType* out_dtype) const {
  const vm::VMFunction& f = version.function();
  const std::vector<std::string>& names = InputNames(f);
  auto it = std::find(names.begin(), names.end(), name);
  size_t index = static_cast<size_t>(it - names.begin());
  if (it == names.end()) {
    auto param = std::find(f.param_names.begin(), f.param_names.end(), name);
    if (param == f.param_names.end()) {
      return BadRequest("unknown input '" + std::string(name) + "'; model '" + version.model +
                        "' takes: " + JoinNames(names));
    }
    index = static_cast<size_t>(param - f.param_names.begin());
  }
  const std::string what = "input '" + std::string(name) + "'";
  const std::optional<DataType> dtype = DataTypeFromProtocol(datatype);
  if (!dtype) {
    return BadRequest(what + ": datatype '" + std::string(datatype) +
                      "' is not supported (BOOL, UINT8..64, INT8..64, FP16, FP32, FP64)");
  }
  *out_index = index;
  *out_dtype = *dtype;
  if (!f.has_signature) return std::nullopt;  // an executable older than format 1.4: the VM checks
  const vm::ValueSignature& s = f.param_signatures[index];
  if (s.kind != "tensor") {
    return BadRequest(what + ": the model's parameter is " + s.text + ", which the protocol cannot carry");
  }
  const std::optional<DataType> expected = DataType::Parse(s.dtype);
  if (expected && *expected != *dtype) {
    return BadRequest(what + ": datatype " + std::string(datatype) + " does not match the model's " +
                      ProtocolDataType(*expected));
  }
  const std::optional<std::vector<int64_t>> model_shape = ProtocolShape(s);
  if (!model_shape) return std::nullopt;
  if (model_shape->size() != shape.size()) {
    return BadRequest(what + ": shape " + ShapeText(shape) + " has " + std::to_string(shape.size()) +
                      " dimensions, the model's " + ShapeText(*model_shape) + " has " +
                      std::to_string(model_shape->size()));
  }
  for (size_t d = 0; d < shape.size(); ++d) {
    if ((*model_shape)[d] >= 0 && (*model_shape)[d] != shape[d]) {
      return BadRequest(what + ": dimension " + std::to_string(d) + " is " + std::to_string(shape[d]) +
                        ", the model's shape " + ShapeText(*model_shape) + " needs " +
                        std::to_string((*model_shape)[d]));
    }
  }
  return std::nullopt;
}

std::optional<ServiceError> InferenceService::CheckAllInputs(const ModelVersion& version,
                                                             std::span<const std::optional<vm::Value>> args) const {
  const std::vector<std::string>& names = InputNames(version.function());
  for (size_t i = 0; i < args.size(); ++i) {
    if (!args[i]) return BadRequest("missing input '" + names[i] + "'");
  }
  return std::nullopt;
}

void InferenceService::Submit(const Route& route, std::vector<vm::Value> args, std::optional<int64_t> timeout_us,
                              std::function<void(InferOutcome)> done) {
  std::shared_ptr<ModelVersion> version = route.version;
  std::chrono::microseconds timeout = std::chrono::milliseconds(version->config.timeout_ms);
  if (timeout_us) timeout = std::min(timeout, std::chrono::microseconds(*timeout_us));
  Job job;
  job.args = std::move(args);
  job.deadline = std::chrono::steady_clock::now() + timeout;
  auto shared_done = std::make_shared<std::function<void(InferOutcome)>>(std::move(done));
  job.done = [shared_done](StatusOr<vm::Value> result, const JobTimes& times) {
    InferOutcome outcome;
    outcome.times = times;
    if (result.ok()) {
      outcome.result = *std::move(result);
    } else {
      const Status& s = result.status();
      const int status = times.timed_out ? 503 : s.is_signature_mismatch() ? 400 : 500;
      outcome.error = ServiceError{status, s.message()};
    }
    (*shared_done)(std::move(outcome));
  };
  if (!version->scheduler->Submit(std::move(job))) {
    InferOutcome outcome;
    outcome.error = ServiceError{503, "model '" + version->model + "' version " + std::to_string(version->version) +
                                          " has " + std::to_string(version->config.max_queue_size) +
                                          " requests waiting (max_queue_size); try again later"};
    (*shared_done)(std::move(outcome));
  }
}

std::optional<ServiceError> InferenceService::SelectOutputs(const ModelVersion& version, const vm::Value& result,
                                                            std::span<const std::string> wanted,
                                                            std::vector<NamedOutput>* out) const {
  std::vector<const vm::Tensor*> tensors;
  if (result.is_tuple()) {
    for (const vm::Value& field : result.tuple()->fields()) {
      if (!field.is_tensor()) return ServiceError{500, "model '" + version.model + "' returned a non-tensor output"};
      tensors.push_back(field.tensor());
    }
  } else if (result.is_tensor()) {
    tensors.push_back(result.tensor());
  } else {
    return ServiceError{500,
                        "model '" + version.model + "' returned " + result.Describe() + "; only tensors can be sent"};
  }
  std::vector<std::string> names = OutputNames(version.function());
  if (names.size() != tensors.size()) names = vm::DefaultOutputNames(tensors.size());  // no signature
  for (const vm::Tensor* t : tensors) {
    if (t->device().device_type != kDLCPU)
      return ServiceError{500, "an output of '" + version.model + "' stayed on a device"};
  }
  out->clear();
  if (wanted.empty()) {
    for (size_t i = 0; i < tensors.size(); ++i) out->push_back({names[i], tensors[i]});
    return std::nullopt;
  }
  for (const std::string& name : wanted) {
    auto it = std::find(names.begin(), names.end(), name);
    if (it == names.end()) {
      return BadRequest("unknown output '" + name + "'; model '" + version.model + "' has: " + JoinNames(names));
    }
    out->push_back({name, tensors[static_cast<size_t>(it - names.begin())]});
  }
  return std::nullopt;
}

void InferenceService::Record(const Route& route, int http_status, const RequestTimes& times, const JobTimes& job,
                              std::string_view error) {
  const ModelVersion& v = *route.version;
  metrics_.RecordRequest(v.model, v.version, http_status, job.queue, job.compute, job.batch_size, times.ran);
  route.version->stats.Record(times);
  if (http_status != 200) {
    LogV(1, "request_failed", {{"model", v.model}, {"version", v.version}, {"status", http_status}, {"reason", error}});
  } else {
    LogV(2, "request",
         {{"model", v.model},
          {"version", v.version},
          {"status", http_status},
          {"us", static_cast<int64_t>(times.total.count() / 1000)}});
  }
}

std::optional<ServiceError> InferenceService::Load(const std::string& model) {
  const Status s = repository_->Load(model);
  if (s.ok()) return std::nullopt;
  Log(LogLevel::kWarning, "load_refused", {{"model", model}, {"reason", s.message()}});
  switch (s.code()) {
    case StatusCode::kFailedPrecondition: return ServiceError{403, s.message()};
    case StatusCode::kNotFound: return NotFound(s.message());
    case StatusCode::kInvalidArgument: return BadRequest(s.message());
    default: return ServiceError{500, s.message()};
  }
}

std::optional<ServiceError> InferenceService::Unload(const std::string& model) {
  const Status s = repository_->Unload(model);
  if (s.ok()) return std::nullopt;
  Log(LogLevel::kWarning, "unload_refused", {{"model", model}, {"reason", s.message()}});
  if (s.code() == StatusCode::kFailedPrecondition) return ServiceError{403, s.message()};
  if (s.code() == StatusCode::kNotFound) return NotFound(s.message());
  return ServiceError{500, s.message()};
}

}  // namespace strata::server
