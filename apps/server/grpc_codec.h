// The gRPC transport's translations (grpc_server.h), apart from any server so
// that they can be tested alone: a ServiceError's HTTP status as a gRPC code,
// the protocol documents of inference_protocol.h as messages, ModelInfer's
// inputs as tensors and its outputs as raw contents.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <grpcpp/support/status.h>

#include "apps/server/inference_service.h"
#include "apps/server/proto/grpc_service.pb.h"
#include "support/status.h"
#include "vm/tensor.h"

namespace strata::server {

// 400 INVALID_ARGUMENT, 403 FAILED_PRECONDITION (the control mode refuses),
// 404 NOT_FOUND, 413 RESOURCE_EXHAUSTED, 503 UNAVAILABLE (a full queue, a
// timeout, shutting down); anything else INTERNAL.
grpc::StatusCode GrpcCodeOf(int http_status);
grpc::Status GrpcStatusOf(const ServiceError& error);

// Fills `out` from one of inference_protocol.h's JSON documents, so that a gRPC
// answer holds what the HTTP one does, field for field. An error (500) when
// the document has a field the message lacks: `what` names the document.
std::optional<ServiceError> MessageFromJson(std::string_view json, google::protobuf::Message* out,
                                            std::string_view what);
// The model configuration (ModelConfigJson) as Triton's ModelConfig.
std::optional<ServiceError> ModelConfigFromJson(std::string_view json, inference::ModelConfig* out);

// A ModelInfer request checked against the version's signature and decoded.
struct GrpcInferRequest {
  std::vector<vm::Value> args;       // in the function's parameter order
  std::vector<std::string> outputs;  // by name; empty: every output
  // parameters["timeout"] (microseconds, as tritonclient sends it), like
  // HTTP's parameters.timeout.
  std::optional<int64_t> timeout_us;
};

// Decodes `request`, which `owner` keeps alive: raw_input_contents and the
// contents whose field holds the datatype's own elements (fp32_contents for
// FP32, ...) are viewed in place, the tensors holding `owner`; the others
// (int_contents for INT8, ...) are converted. Errors are the client's (400).
std::optional<ServiceError> DecodeInferRequest(const inference::ModelInferRequest& request,
                                               std::shared_ptr<const void> owner, const ModelVersion& version,
                                               const InferenceService& service, GrpcInferRequest* out);

// One input's typed contents as a tensor of `shape` / `dtype`; `what` names the
// input in errors.
StatusOr<vm::Ref<vm::Tensor>> TensorFromContents(const inference::InferTensorContents& contents,
                                                 std::span<const int64_t> shape, DataType dtype,
                                                 std::shared_ptr<const void> owner, const std::string& what);

// The response: each output's name, datatype and shape, its elements in
// raw_output_contents (what tritonclient reads by default); `id` echoed.
void EncodeInferResponse(const ModelVersion& version, const std::string& id, std::span<const NamedOutput> outputs,
                         inference::ModelInferResponse* out);

}  // namespace strata::server
