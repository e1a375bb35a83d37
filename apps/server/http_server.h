// HttpServer: the Open Inference Protocol over HTTP/1.1 (Boost.Beast).
//
// I/O runs on `io_threads` threads of one io_context, one coroutine per
// connection on its own strand. Decoding a request's JSON and encoding a
// response's run on a separate pool of `codec_threads`, and inferences on
// their model's Scheduler, so the I/O threads only move bytes: health, ready
// and metrics answer promptly however large or many the requests are.
//
// Limits (docs/serving.md): a request line and headers of at most
// max_header_bytes (431) with a target of at most max_url_bytes (414); a body
// of at most max_body_bytes (413), of which the JSON part is at most
// max_json_bytes (413); a declared Content-Length past its limit is refused
// before any of the body is read, and Expect: 100-continue is answered only
// when it fits. Malformed framing (a bad or repeated Content-Length,
// Transfer-Encoding with Content-Length) gets 400 and the connection closes.
//
// Timeouts: a connection waiting for a request closes after idle_timeout; a
// request's headers must arrive within header_timeout of its first byte, its
// body within body_timeout after the headers; a response must be written within
// write_timeout. At max_connections, a new connection closes the connection
// that has waited longest without a request in progress; when none has, it gets
// 503. Accept errors (out of file descriptors) back off instead of spinning.
//
// Shutdown() (or SIGTERM, SIGINT) stops accepting, lets every request already
// read be answered, then returns from Run(); after exit_timeout it returns
// anyway (Run() then reports that it was forced).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "apps/server/inference_service.h"

namespace strata::server {

struct HttpOptions {
  std::string address = "0.0.0.0";
  uint16_t port = 8000;
  int io_threads = 2;
  int codec_threads = 2;
  int64_t max_body_bytes = int64_t{64} << 20;
  int64_t max_json_bytes = int64_t{16} << 20;
  int64_t max_header_bytes = int64_t{16} << 10;
  int64_t max_url_bytes = int64_t{8} << 10;
  std::chrono::milliseconds header_timeout{std::chrono::seconds(10)};
  std::chrono::milliseconds body_timeout{std::chrono::seconds(60)};
  std::chrono::milliseconds idle_timeout{std::chrono::seconds(60)};
  std::chrono::milliseconds write_timeout{std::chrono::seconds(60)};
  int64_t max_connections = 1000;
  std::chrono::milliseconds exit_timeout{std::chrono::seconds(30)};
  // Called once when a shutdown starts (a signal or Shutdown()), on an I/O thread:
  // how main stops the other transports.
  std::function<void()> on_shutdown;
};

class HttpServer {
 public:
  HttpServer(InferenceService* service, HttpOptions options);
  ~HttpServer();

  // Binds and listens; the error names the address and port. The port in use
  // (when 0 was asked: one the OS chose) is bound_port().
  Status Listen();
  uint16_t bound_port() const;
  // Serves until Shutdown() (from any thread or a signal handler's thread).
  // True when every request was answered; false when exit_timeout cut it short.
  bool Run();
  void Shutdown();

  class Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata::server
