// HttpServer; see http_server.h.
#include "apps/server/http_server.h"

#include <csignal>
#include <cstdio>
#include <thread>
#include <vector>

#include <boost/asio.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "apps/server/inference_protocol.h"
#include "apps/server/metrics.h"

namespace strata::server {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Request = http::request<http::string_body>;
using Response = http::response<http::string_body>;

namespace {

constexpr const char* kServerName = "strata-server";
constexpr const char* kServerVersion = "0.1.0";

Response JsonResponse(http::status status, std::string body, const Request& req) {
  Response res(status, req.version());
  res.set(http::field::server, kServerName);
  res.set(http::field::content_type, "application/json");
  res.keep_alive(req.keep_alive());
  res.body() = std::move(body);
  res.prepare_payload();
  return res;
}

Response ErrorResponse(http::status status, const std::string& message, const Request& req) {
  return JsonResponse(status, ErrorJson(message), req);
}

// "/v2/models/m/versions/2/infer" -> {"v2", "models", "m", "versions", "2", "infer"}.
std::vector<std::string> PathSegments(std::string_view target) {
  target = target.substr(0, target.find('?'));
  std::vector<std::string> out;
  size_t start = 0;
  while (start < target.size()) {
    size_t end = target.find('/', start);
    if (end == std::string_view::npos) end = target.size();
    if (end > start) out.emplace_back(target.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// What a job's completion hands back to the connection.
struct Outcome {
  bool accepted = false;
  StatusOr<vm::Value> result = vm::Value();  // set by the job
  JobTimes times;
};

}  // namespace

class HttpServer::Impl {
 public:
  Impl(ModelRepository* repository, HttpOptions options)
      : repository_(repository), options_(std::move(options)), acceptor_(ioc_), signals_(ioc_, SIGINT, SIGTERM) {}

  Status Listen() {
    boost::system::error_code ec;
    const auto address = asio::ip::make_address(options_.address, ec);
    if (ec) return Status(ErrorStatus() << "--address '" << options_.address << "': " << ec.message());
    const tcp::endpoint endpoint(address, options_.port);
    acceptor_.open(endpoint.protocol(), ec);
    if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) acceptor_.bind(endpoint, ec);
    if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) {
      return Status(ErrorStatus(StatusCode::kFailedPrecondition)
                    << "cannot listen on " << options_.address << ":" << options_.port << ": " << ec.message());
    }
    return Status::Ok();
  }

  uint16_t bound_port() const { return acceptor_.local_endpoint().port(); }

  void Run() {
    // SIGTERM / SIGINT start the graceful shutdown. asio's signal_set takes the
    // signal on whichever thread the kernel picks (library threads that exist
    // before main, OpenBLAS's, included) and hands it to the io_context.
    signals_.async_wait([this](const boost::system::error_code& ec, int signal) {
      if (ec) return;  // cancelled by a Shutdown() called directly
      std::fprintf(stderr, "strata-server: %s: finishing the requests in flight\n",
                   signal == SIGTERM ? "SIGTERM" : "SIGINT");
      Shutdown();
    });
    asio::co_spawn(ioc_, Accept(), asio::detached);
    std::vector<std::thread> threads;
    for (int i = 1; i < options_.io_threads; ++i) threads.emplace_back([this] { ioc_.run(); });
    ioc_.run();
    for (std::thread& t : threads) t.join();
  }

  void Shutdown() {
    asio::post(ioc_, [this] {
      std::lock_guard<std::mutex> lock(flight_mutex_);
      if (stopping_) return;
      stopping_ = true;
      boost::system::error_code ec;
      signals_.cancel(ec);
      acceptor_.close(ec);
      // Idle keep-alive connections hold no request: once the last request in
      // flight is answered, Run() returns and they close with the process.
      if (in_flight_ == 0) StopLocked();
    });
  }

 private:
  asio::awaitable<void> Accept() {
    for (;;) {
      boost::system::error_code ec;
      tcp::socket socket = co_await acceptor_.async_accept(asio::redirect_error(asio::use_awaitable, ec));
      if (ec) {
        if (stopping_ || ec == asio::error::operation_aborted) co_return;
        continue;  // a connection that failed before it was accepted
      }
      asio::co_spawn(ioc_, Session(std::move(socket)), asio::detached);
    }
  }

  // A request was read: it counts as in flight until its answer is written.
  // False when the server stopped meanwhile (it is dropped with its connection).
  bool BeginRequest() {
    std::lock_guard<std::mutex> lock(flight_mutex_);
    if (stopped_) return false;
    ++in_flight_;
    return true;
  }
  void EndRequest() {
    std::lock_guard<std::mutex> lock(flight_mutex_);
    if (--in_flight_ == 0 && stopping_) StopLocked();
  }
  void StopLocked() {
    stopped_ = true;
    ioc_.stop();
  }

  asio::awaitable<void> Session(tcp::socket socket) {
    beast::tcp_stream stream(std::move(socket));
    beast::flat_buffer buffer;
    for (;;) {
      http::request_parser<http::string_body> parser;
      parser.body_limit(static_cast<uint64_t>(options_.max_body_bytes));
      boost::system::error_code ec;
      if (stopping_) break;
      co_await http::async_read(stream, buffer, parser, asio::redirect_error(asio::use_awaitable, ec));
      if (ec == http::error::body_limit) {
        Request head;
        head.version(parser.get().version());
        Response res = ErrorResponse(http::status::payload_too_large,
                                     "the request body is larger than the limit of " +
                                         std::to_string(options_.max_body_bytes) + " bytes (--max-body-bytes)",
                                     head);
        res.keep_alive(false);
        co_await http::async_write(stream, res, asio::redirect_error(asio::use_awaitable, ec));
        break;
      }
      if (ec) break;  // the client closed, or sent something that is not HTTP
      if (!BeginRequest()) break;
      Request req = parser.release();
      Response res = co_await Handle(req);
      if (stopping_) res.keep_alive(false);
      co_await http::async_write(stream, res, asio::redirect_error(asio::use_awaitable, ec));
      EndRequest();
      if (ec || !res.keep_alive()) break;
    }
    boost::system::error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
  }

  // The model version a path names: {model, optional "versions"/N}.
  struct Route {
    std::shared_ptr<const Model> model;
    std::shared_ptr<ModelVersion> version;
  };
  std::optional<Response> FindVersion(const std::string& name, const std::string* version_text, const Request& req,
                                      Route* out) {
    out->model = repository_->Find(name);
    if (!out->model) return ErrorResponse(http::status::not_found, "unknown model '" + name + "'", req);
    if (!out->model->reason.empty()) {
      return ErrorResponse(http::status::bad_request, "model '" + name + "' is not ready: " + out->model->reason, req);
    }
    if (version_text != nullptr) {
      char* end = nullptr;
      const long long v = std::strtoll(version_text->c_str(), &end, 10);
      auto it = *end == '\0' ? out->model->versions.find(v) : out->model->versions.end();
      if (it == out->model->versions.end()) {
        return ErrorResponse(http::status::not_found, "model '" + name + "' has no version '" + *version_text + "'",
                             req);
      }
      out->version = it->second;
      if (!out->version->ready) {
        return ErrorResponse(http::status::bad_request,
                             "model '" + name + "' version " + *version_text + " is not ready: " + out->version->reason,
                             req);
      }
    } else {
      out->version = out->model->Latest();
      if (!out->version) {
        std::string reasons;
        for (const auto& [n, v] : out->model->versions) reasons += "; version " + std::to_string(n) + ": " + v->reason;
        return ErrorResponse(http::status::bad_request, "model '" + name + "' has no ready version" + reasons, req);
      }
    }
    return std::nullopt;
  }

  asio::awaitable<Response> Handle(const Request& req) {
    const std::vector<std::string> path = PathSegments(std::string_view(req.target().data(), req.target().size()));
    const bool get = req.method() == http::verb::get;
    const bool post = req.method() == http::verb::post;
    if (path.size() == 1 && path[0] == "metrics" && get) {
      Response res = JsonResponse(http::status::ok, metrics_.Text(), req);
      res.set(http::field::content_type, "text/plain; version=0.0.4");
      co_return res;
    }
    if (path.empty() || path[0] != "v2") {
      co_return ErrorResponse(http::status::not_found, "unknown path '" + std::string(req.target()) + "'", req);
    }
    if (path.size() == 1 && get) co_return JsonResponse(http::status::ok, ServerMetadata(), req);
    if (path.size() == 3 && path[1] == "health" && get) {
      if (path[2] == "live") co_return JsonResponse(http::status::ok, "", req);
      if (path[2] == "ready") {
        co_return JsonResponse(stopping_ ? http::status::service_unavailable : http::status::ok, "", req);
      }
    }
    if (path.size() >= 3 && path[1] == "models") {
      // models/{name}[/versions/{v}][/ready|/infer]
      const std::string& name = path[2];
      size_t next = 3;
      const std::string* version = nullptr;
      if (path.size() >= 5 && path[3] == "versions") {
        version = &path[4];
        next = 5;
      }
      const std::string action = path.size() > next ? path[next] : "";
      if (path.size() > next + 1) {
        co_return ErrorResponse(http::status::not_found, "unknown path '" + std::string(req.target()) + "'", req);
      }
      Route route;
      if (action.empty() && get) {
        if (auto error = FindVersion(name, version, req, &route)) co_return *error;
        co_return JsonResponse(http::status::ok, ModelMetadataJson(*route.model, *route.version), req);
      }
      if (action == "ready" && get) {
        if (auto error = FindVersion(name, version, req, &route)) co_return *error;
        co_return JsonResponse(http::status::ok, "", req);
      }
      if (action == "infer" && post) {
        if (auto error = FindVersion(name, version, req, &route)) co_return *error;
        JobTimes times;
        bool ran = false;
        Response res = co_await Infer(req, route, &times, &ran);
        metrics_.RecordRequest(route.version->model, route.version->version, res.result_int(), times.queue,
                               times.compute, times.batch_size, ran);
        co_return res;
      }
    }
    if (path.size() == 3 && path[1] == "repository" && path[2] == "index" && post) {
      co_return JsonResponse(http::status::ok, RepositoryIndex(), req);
    }
    if (path.size() == 5 && path[1] == "repository" && path[2] == "models" && post &&
        (path[4] == "load" || path[4] == "unload")) {
      const Status done = path[4] == "load" ? repository_->Load(path[3]) : repository_->Unload(path[3]);
      if (!done.ok()) co_return ErrorResponse(http::status::not_found, done.message(), req);
      co_return JsonResponse(http::status::ok, "", req);
    }
    co_return ErrorResponse(http::status::not_found,
                            "unknown path '" + std::string(req.target()) + "' for " + std::string(req.method_string()),
                            req);
  }

  // Runs one inference; *times and *ran tell the metrics what happened.
  asio::awaitable<Response> Infer(const Request& req, const Route& route, JobTimes* times, bool* ran) {
    int64_t json_length = -1;
    if (auto it = req.find("Inference-Header-Content-Length"); it != req.end()) {
      const std::string text(it->value());
      char* end = nullptr;
      json_length = std::strtoll(text.c_str(), &end, 10);
      if (text.empty() || *end != '\0' || json_length < 0) {
        co_return ErrorResponse(http::status::bad_request,
                                "Inference-Header-Content-Length '" + text + "' is not a non-negative integer", req);
      }
    }
    auto body = std::make_shared<const std::string>(req.body());
    StatusOr<InferRequest> parsed = ParseInferRequest(body, json_length, *route.version);
    if (!parsed.ok()) co_return ErrorResponse(http::status::bad_request, parsed.status().message(), req);
    std::shared_ptr<ModelVersion> version = route.version;
    std::chrono::microseconds timeout = std::chrono::milliseconds(version->config.timeout_ms);
    if (parsed->timeout_us) timeout = std::min(timeout, std::chrono::microseconds(*parsed->timeout_us));
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    std::vector<vm::Value> args = std::move(parsed->args);
    auto executor = co_await asio::this_coro::executor;
    std::shared_ptr<Outcome> outcome =
        co_await asio::async_initiate<decltype(asio::use_awaitable), void(std::shared_ptr<Outcome>)>(
            [&](auto handler) {
              // The handler is move-only and std::function copies: it lives in a
              // shared_ptr. The work guard keeps Run() from returning meanwhile.
              auto shared = std::make_shared<decltype(handler)>(std::move(handler));
              auto work = std::make_shared<asio::executor_work_guard<asio::any_io_executor>>(executor);
              Job job;
              job.args = std::move(args);
              job.deadline = deadline;
              job.done = [shared, work, executor](StatusOr<vm::Value> result, const JobTimes& times) {
                auto o = std::make_shared<Outcome>();
                o->accepted = true;
                o->result = std::move(result);
                o->times = times;
                asio::post(executor, [shared, work, o] { (*shared)(o); });
              };
              if (!version->scheduler->Submit(std::move(job))) {
                asio::post(executor, [shared, work] { (*shared)(std::make_shared<Outcome>()); });
              }
            },
            asio::use_awaitable);
    if (!outcome->accepted) {
      co_return ErrorResponse(http::status::service_unavailable,
                              "model '" + version->model + "' version " + std::to_string(version->version) + " has " +
                                  std::to_string(version->config.max_queue_size) +
                                  " requests waiting (max_queue_size); try again later",
                              req);
    }
    *times = outcome->times;
    *ran = !outcome->times.timed_out;
    if (!outcome->result.ok()) {
      const Status& s = outcome->result.status();
      const http::status status = outcome->times.timed_out    ? http::status::service_unavailable
                                  : s.is_signature_mismatch() ? http::status::bad_request
                                                              : http::status::internal_server_error;
      co_return ErrorResponse(status, s.message(), req);
    }
    StatusOr<InferResponse> response = BuildInferResponse(*version, *parsed, *outcome->result);
    if (!response.ok()) {
      co_return ErrorResponse(response.status().code() == StatusCode::kInvalidArgument
                                  ? http::status::bad_request
                                  : http::status::internal_server_error,
                              response.status().message(), req);
    }
    Response res(http::status::ok, req.version());
    res.set(http::field::server, kServerName);
    res.keep_alive(req.keep_alive());
    if (response->json_length >= 0) {
      res.set(http::field::content_type, "application/octet-stream");
      res.set("Inference-Header-Content-Length", std::to_string(response->json_length));
    } else {
      res.set(http::field::content_type, "application/json");
    }
    res.body() = std::move(response->body);
    res.prepare_payload();
    co_return res;
  }

  std::string ServerMetadata() const {
    rapidjson::StringBuffer buffer;
    rapidjson::Writer<rapidjson::StringBuffer> out(buffer);
    out.StartObject();
    out.Key("name");
    out.String(kServerName);
    out.Key("version");
    out.String(kServerVersion);
    out.Key("extensions");
    out.StartArray();
    out.String("binary_tensor_data");
    out.String("model_repository");
    out.EndArray();
    out.EndObject();
    return buffer.GetString();
  }

  std::string RepositoryIndex() const {
    rapidjson::StringBuffer buffer;
    rapidjson::Writer<rapidjson::StringBuffer> out(buffer);
    out.StartArray();
    for (const std::string& name : repository_->FolderNames()) {
      std::shared_ptr<const Model> model = repository_->Find(name);
      auto entry = [&](const std::string& version, const char* state, const std::string& reason) {
        out.StartObject();
        out.Key("name");
        out.String(name.c_str());
        if (!version.empty()) {
          out.Key("version");
          out.String(version.c_str());
        }
        out.Key("state");
        out.String(state);
        out.Key("reason");
        out.String(reason.c_str());
        out.EndObject();
      };
      if (!model) {
        entry("", "UNAVAILABLE", "unloaded");
      } else if (!model->reason.empty()) {
        entry("", "UNAVAILABLE", model->reason);
      } else {
        for (const auto& [n, v] : model->versions) {
          entry(std::to_string(n), v->ready ? "READY" : "UNAVAILABLE", v->reason);
        }
      }
    }
    out.EndArray();
    return buffer.GetString();
  }

  ModelRepository* repository_;
  HttpOptions options_;
  asio::io_context ioc_;
  tcp::acceptor acceptor_;
  asio::signal_set signals_;
  std::atomic<bool> stopping_{false};
  // Requests read and not yet answered; Run() returns when it is 0 after Shutdown().
  std::mutex flight_mutex_;
  int64_t in_flight_ = 0;
  bool stopped_ = false;
  Metrics metrics_;
};

HttpServer::HttpServer(ModelRepository* repository, HttpOptions options)
    : impl_(std::make_unique<Impl>(repository, std::move(options))) {}
HttpServer::~HttpServer() = default;
Status HttpServer::Listen() { return impl_->Listen(); }
uint16_t HttpServer::bound_port() const { return impl_->bound_port(); }
void HttpServer::Run() { impl_->Run(); }
void HttpServer::Shutdown() { impl_->Shutdown(); }

}  // namespace strata::server
