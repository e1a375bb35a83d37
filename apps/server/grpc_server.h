// GrpcServer: the Open Inference Protocol over gRPC (KServe v2 / Triton's
// inference.GRPCInferenceService, apps/server/proto/grpc_service.proto), on the
// same InferenceService as the HTTP transport: the same models, limits,
// errors, metrics and statistics.
//
// Every RPC uses gRPC's callback API. ModelInfer never blocks a gRPC thread
// while the model runs: it is completed from InferenceService::Submit's
// callback on the model's worker. Raw inputs (raw_input_contents) are viewed
// in place, the request message kept alive as the tensors' owner.
//
// Limits (docs/serving.md#grpc): a message larger than max_message_bytes gets
// RESOURCE_EXHAUSTED; at most max_concurrent_streams calls per connection; a
// connection without calls closes after max_connection_idle; keepalive pings
// every keepalive_time, and a connection whose peer does not answer one within
// keepalive_timeout closes (a vanished peer does not hold its streams; one that
// answers pings but stalls mid-message holds its stream until it goes on).
//
// Errors: ServiceError's HTTP status maps to a gRPC code (GrpcCodeOf in
// grpc_codec.h): 400 INVALID_ARGUMENT, 403 FAILED_PRECONDITION, 404
// NOT_FOUND, 413 RESOURCE_EXHAUSTED, 503 UNAVAILABLE, others INTERNAL.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "apps/server/inference_service.h"
#include "support/status.h"

namespace strata::server {

struct GrpcOptions {
  std::string address = "0.0.0.0";
  uint16_t port = 8001;  // 0: any free port (bound_port() says which)
  // The largest request message (raw input bytes included); the same default
  // as HTTP's --max-body-bytes. Responses are not limited.
  int64_t max_message_bytes = int64_t{64} << 20;
  // Concurrent calls (HTTP/2 streams) on one connection.
  int64_t max_concurrent_streams = 1000;
  // A connection with no call in progress closes after this long.
  std::chrono::milliseconds max_connection_idle{std::chrono::seconds(60)};
  // Ping each connection after this long without traffic; close it when the
  // peer has not acknowledged within keepalive_timeout.
  std::chrono::milliseconds keepalive_time{std::chrono::seconds(60)};
  std::chrono::milliseconds keepalive_timeout{std::chrono::seconds(20)};
};

class GrpcServer {
 public:
  GrpcServer(InferenceService* service, GrpcOptions options);
  // Shuts down (with no deadline: cancels what is in flight) if still serving.
  ~GrpcServer();

  // Binds and starts serving; the error names the address and port. The port
  // in use (when 0 was asked: one the OS chose) is bound_port().
  Status Start();
  uint16_t bound_port() const;

  // Stops accepting calls, lets those in flight finish for up to `deadline`,
  // then cancels the rest (an inference still running answers CANCELLED). Blocks
  // until done; callable from any thread, more than once (later calls wait for
  // the first). True when every call finished before the deadline.
  bool Shutdown(std::chrono::milliseconds deadline);
  // Returns once Shutdown() has completed.
  void Wait();

  class Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata::server
