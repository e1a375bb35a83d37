// HttpServer: the Open Inference Protocol over HTTP/1.1 (Boost.Beast), with
// keep-alive, a body size limit (413), and graceful shutdown.
//
// I/O runs on `io_threads` threads of one io_context, one coroutine per
// connection; an inference runs on its model's Scheduler and its answer is
// written back on the connection's coroutine. Shutdown() (or SIGTERM, SIGINT)
// stops accepting, lets every request already read be answered, then returns
// from Run(); idle keep-alive connections close with the process.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "apps/server/model_repository.h"

namespace strata::server {

struct HttpOptions {
  std::string address = "0.0.0.0";
  uint16_t port = 8000;
  int io_threads = 2;
  int64_t max_body_bytes = int64_t{64} << 20;
};

class HttpServer {
 public:
  HttpServer(ModelRepository* repository, HttpOptions options);
  ~HttpServer();

  // Binds and listens; the error names the address and port. The port in use
  // (when 0 was asked: one the OS chose) is bound_port().
  Status Listen();
  uint16_t bound_port() const;
  // Serves until Shutdown() (from any thread or a signal handler's thread).
  void Run();
  void Shutdown();

  class Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata::server
