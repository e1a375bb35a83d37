// InferenceService: what strata-server does for a request, whatever the
// transport (HTTP/REST in http_server.cc, gRPC in grpc_server.cc): finding the
// model version a request names, checking its inputs against the version's
// signature in the protocol's terms (FP32, not f32; shapes with -1), running it
// on the version's scheduler, picking the outputs it asked for by name,
// readiness, repository control, metrics and statistics. The transports only
// decode and encode.
//
// Errors carry the HTTP status the Open Inference Protocol gives them; the
// gRPC transport maps each to its code (GrpcCodeOf in grpc_server.cc).
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "apps/server/metrics.h"
#include "apps/server/model_repository.h"
#include "apps/server/statistics.h"
#include "support/data_type.h"
#include "vm/value.h"

namespace strata::server {

struct ServiceError {
  int http_status = 500;
  std::string message;
};
ServiceError BadRequest(std::string message);
ServiceError NotFound(std::string message);

// The model version a request is routed to: the model and the version hold
// while the request runs, even if the model is unloaded meanwhile.
struct Route {
  std::shared_ptr<const Model> model;
  std::shared_ptr<ModelVersion> version;
};

// The names clients use: the model's own input names (the ONNX graph's, as the
// executable records them) and its output names.
const std::vector<std::string>& InputNames(const vm::VMFunction& f);
// The outputs' signatures: a tuple's fields, else the one result; empty without a signature.
std::vector<const vm::ValueSignature*> OutputSignatures(const vm::VMFunction& f);
std::vector<std::string> OutputNames(const vm::VMFunction& f);

// A signature's shape as the protocol writes it: -1 for a symbolic dimension;
// nullopt when not even the rank is known.
std::optional<std::vector<int64_t>> ProtocolShape(const vm::ValueSignature& s);

struct NamedOutput {
  std::string name;
  const vm::Tensor* tensor = nullptr;
};

struct InferOutcome {
  std::optional<ServiceError> error;
  vm::Value result;
  JobTimes times;
};

class InferenceService {
 public:
  InferenceService(ModelRepository* repository, bool strict_readiness);

  // Live: always while the process serves. Ready: not shutting down and, with
  // strict readiness, every model that should be loaded is ready.
  bool Ready() const { return NotReadyReason().empty(); }
  std::string NotReadyReason() const;
  void SetShuttingDown() { shutting_down_ = true; }
  bool shutting_down() const { return shutting_down_; }

  // The version `model` / `version` (null: the newest ready) names.
  std::optional<ServiceError> Resolve(const std::string& model, const std::string* version, Route* out) const;

  // Checks one input against the version's signature before anything runs:
  // its name (the model's input name or the parameter's), datatype, rank and
  // fixed dimensions; sets its parameter index and dtype.
  std::optional<ServiceError> MatchInput(const ModelVersion& version, std::string_view name, std::string_view datatype,
                                         std::span<const int64_t> shape, size_t* out_index, DataType* out_dtype) const;
  // Every parameter has an argument.
  std::optional<ServiceError> CheckAllInputs(const ModelVersion& version,
                                             std::span<const std::optional<vm::Value>> args) const;

  // Queues a request; `done` is called exactly once, on a worker thread or
  // inline (a full queue).
  void Submit(const Route& route, std::vector<vm::Value> args, std::optional<int64_t> timeout_us,
              std::function<void(InferOutcome)> done);

  // The result's tensors named as the version's outputs, those `wanted` (in
  // that order) or all when `wanted` is empty.
  std::optional<ServiceError> SelectOutputs(const ModelVersion& version, const vm::Value& result,
                                            std::span<const std::string> wanted, std::vector<NamedOutput>* out) const;

  // Records an answered request in the metrics and the version's statistics.
  // `error` is the message a failed request got (logged with --log-verbose 1).
  void Record(const Route& route, int http_status, const RequestTimes& times, const JobTimes& job,
              std::string_view error = {});

  // Repository control (the load/unload API), with the control mode's refusals.
  std::optional<ServiceError> Load(const std::string& model);
  std::optional<ServiceError> Unload(const std::string& model);

  ModelRepository* repository() const { return repository_; }
  Metrics& metrics() { return metrics_; }

 private:
  ModelRepository* repository_;
  bool strict_readiness_;
  std::atomic<bool> shutting_down_{false};
  Metrics metrics_;
};

}  // namespace strata::server
