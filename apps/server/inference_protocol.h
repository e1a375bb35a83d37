// The Open Inference Protocol's (KServe v2) JSON documents for one model:
// metadata, inference requests and responses, with the binary tensor data
// extension.
//
// Inputs are matched to the served function's parameters by name; outputs are
// named output0, output1, ... (the fields of a tuple result, or output0 for a
// single tensor). An input with parameters.binary_data_size takes that many
// bytes from the binary part of the body, in input order, viewed in place. An
// output is returned as binary data when it asks (parameters.binary_data), or
// when the request asks for all (parameters.binary_data_output).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "apps/server/model_repository.h"
#include "support/status.h"
#include "vm/value.h"

namespace strata::server {

struct RequestedOutput {
  std::string name;
  bool binary = false;
};

struct InferRequest {
  std::string id;
  std::vector<vm::Value> args;           // in the function's parameter order
  std::vector<RequestedOutput> outputs;  // empty: every output
  bool binary_outputs = false;           // parameters.binary_data_output
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

// The model's metadata: {"name", "versions", "platform", "inputs", "outputs"},
// symbolic dimensions as -1.
std::string ModelMetadataJson(const Model& model, const ModelVersion& version);

// Parses a request `body` whose first `json_length` bytes are the JSON (the
// whole body when json_length < 0). Errors are the client's (400).
StatusOr<InferRequest> ParseInferRequest(std::shared_ptr<const std::string> body, int64_t json_length,
                                         const ModelVersion& version);

// The response to `request` for the function's `result`.
StatusOr<InferResponse> BuildInferResponse(const ModelVersion& version, const InferRequest& request,
                                           const vm::Value& result);

// {"error": "..."}.
std::string ErrorJson(const std::string& message);

}  // namespace strata::server
