// HttpRoutes: the endpoints of the Open Inference Protocol over HTTP, each a
// coroutine from a request that was read whole to its response. Connection
// handling (framing, limits, timeouts) is http_server.cc's.
//
//   GET  /v2/health/live | /v2/health/ready              health (ready is strict: inference_service.h)
//   GET  /v2                                             server metadata
//   GET  /v2/models/{m}[/versions/{v}]                   model metadata
//   GET  /v2/models/{m}[/versions/{v}]/ready             model readiness
//   GET  /v2/models/{m}[/versions/{v}]/config            Triton's model configuration
//   GET  /v2/models[/{m}[/versions/{v}]]/stats           Triton's statistics
//   POST /v2/models/{m}[/versions/{v}]/infer             inference
//   POST /v2/repository/index                            the repository's models and states
//   POST /v2/repository/models/{m}/load | /unload        repository control (--model-control-mode explicit)
//   GET  /metrics                                        Prometheus
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <utility>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/beast/http.hpp>

#include "apps/server/inference_service.h"

namespace strata::server {

using HttpRequest = boost::beast::http::request<boost::beast::http::string_body>;
using HttpResponse = boost::beast::http::response<boost::beast::http::string_body>;

HttpResponse JsonResponse(boost::beast::http::status status, std::string body, const HttpRequest& req);
HttpResponse ErrorResponse(int status, const std::string& message, const HttpRequest& req);

class HttpRoutes {
 public:
  // Decoding and encoding run on `codec_pool`.
  HttpRoutes(InferenceService* service, boost::asio::thread_pool* codec_pool)
      : service_(service), codec_pool_(codec_pool) {}

  // `req`'s body may be moved from.
  boost::asio::awaitable<HttpResponse> Handle(HttpRequest& req);

  // Blocks until the scheduler has let go of every callback an inference
  // handed it. A callback holds its connection's strand and a timer, which the
  // io_context must outlive, and a worker destroys it a moment after calling
  // it, which can be after the answer was written and the server stopped:
  // HttpServer waits here before it destroys its io_context.
  void WaitForSchedulerCallbacks();

 private:
  // Callbacks the scheduler still holds.
  class PendingCallbacks {
   public:
    void Add();
    void Remove();
    void WaitForNone();

   private:
    std::mutex mutex_;
    std::condition_variable none_;
    int64_t count_ = 0;
  };

  boost::asio::awaitable<HttpResponse> Infer(HttpRequest& req, const Route& route,
                                             std::chrono::steady_clock::time_point arrived);
  // Runs `fn` on the codec pool; the coroutine resumes on its own executor.
  boost::asio::awaitable<void> OnCodecPool(std::function<void()> fn);
  HttpResponse Statistics(const std::string* model, const std::string* version, const HttpRequest& req);

  InferenceService* service_;
  boost::asio::thread_pool* codec_pool_;
  PendingCallbacks pending_callbacks_;
};

}  // namespace strata::server
