// The Open Inference Protocol's (KServe v2) JSON documents, with Triton's
// extensions: server and model metadata, inference requests and responses
// (with the binary tensor data extension), the repository index, the model
// configuration and the statistics extensions.
//
// Inputs are matched by the model's input names (the ONNX graph's, recorded in
// the executable), or by the parameter names; outputs are named by the model's
// output names. An input with parameters.binary_data_size takes that many bytes
// from the binary part of the body, in input order, viewed in place. An output
// is returned as binary data when it asks (parameters.binary_data), or when the
// request asks for all (parameters.binary_data_output).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "apps/server/inference_service.h"
#include "apps/server/model_repository.h"
#include "vm/value.h"

namespace strata::server {

struct InferRequest {
  std::string id;
  std::vector<vm::Value> args;       // in the function's parameter order
  std::vector<std::string> outputs;  // by name; empty: every output
  std::vector<bool> binary;          // per entry of `outputs`: as binary data
  bool binary_outputs = false;       // parameters.binary_data_output
  // parameters.timeout (microseconds, as Triton's clients send it): how long
  // the request may wait for an instance, when shorter than the model's timeout_ms.
  std::optional<int64_t> timeout_us;
};

struct InferResponse {
  std::string body;
  // The length of the JSON part when binary data follows it (the
  // Inference-Header-Content-Length header), else -1.
  int64_t json_length = -1;
};

std::string ServerMetadataJson();
// {"name", "versions", "platform", "inputs", "outputs"}; symbolic dimensions as -1.
std::string ModelMetadataJson(const Model& model, const ModelVersion& version);
// Triton's model configuration ({"name", "platform", "max_batch_size", "input",
// "output", "instance_group", "dynamic_batching", "parameters", ...}).
std::string ModelConfigJson(const Model& model, const ModelVersion& version);
// Triton's statistics document for the given versions.
std::string StatisticsJson(const std::vector<std::shared_ptr<ModelVersion>>& versions);
// [{"name", "version", "state", "reason"}] for every model folder.
std::string RepositoryIndexJson(const ModelRepository& repository, bool ready_only);

// Parses a request `body` whose first `json_length` bytes are the JSON (the
// whole body when json_length < 0), checking each input against the version's
// signature. Errors are the client's (400).
std::optional<ServiceError> ParseInferRequest(std::shared_ptr<const std::string> body, int64_t json_length,
                                              const ModelVersion& version, const InferenceService& service,
                                              InferRequest* out);

// The response to `request` with its selected `outputs`.
InferResponse BuildInferResponse(const ModelVersion& version, const InferRequest& request,
                                 const std::vector<NamedOutput>& outputs);

// {"error": "..."}, valid UTF-8 whatever the message holds.
std::string ErrorJson(const std::string& message);

}  // namespace strata::server
