// HttpRoutes; see http_routes.h.
#include "apps/server/http_routes.h"

#include <boost/asio.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "apps/server/inference_protocol.h"
#include "apps/server/json_util.h"
#include "apps/server/log.h"
#include "apps/server/thread_priority.h"

namespace strata::server {

namespace asio = boost::asio;
namespace http = boost::beast::http;

namespace {

constexpr const char* kServerName = "strata-server";

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

}  // namespace

HttpResponse JsonResponse(http::status status, std::string body, const HttpRequest& req) {
  HttpResponse res(status, req.version());
  res.set(http::field::server, kServerName);
  res.set(http::field::content_type, "application/json");
  res.keep_alive(req.keep_alive());
  res.body() = std::move(body);
  res.prepare_payload();
  return res;
}

HttpResponse ErrorResponse(int status, const std::string& message, const HttpRequest& req) {
  return JsonResponse(static_cast<http::status>(status), ErrorJson(message), req);
}

void HttpRoutes::PendingCallbacks::Add() {
  std::lock_guard<std::mutex> lock(mutex_);
  ++count_;
}

void HttpRoutes::PendingCallbacks::Remove() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (--count_ == 0) none_.notify_all();
}

void HttpRoutes::PendingCallbacks::WaitForNone() {
  std::unique_lock<std::mutex> lock(mutex_);
  none_.wait(lock, [this] { return count_ == 0; });
}

void HttpRoutes::WaitForSchedulerCallbacks() { pending_callbacks_.WaitForNone(); }

asio::awaitable<void> HttpRoutes::OnCodecPool(std::function<void()> fn) {
  // co_spawn onto the pool and await it: asio resumes this coroutine on its own executor.
  co_await asio::co_spawn(
      codec_pool_->get_executor(),
      [&fn]() -> asio::awaitable<void> {
        LowerThisThreadsPriority();
        fn();
        co_return;
      },
      asio::use_awaitable);
}

asio::awaitable<HttpResponse> HttpRoutes::Handle(HttpRequest& req) {
  const auto arrived = std::chrono::steady_clock::now();
  const std::string target(req.target());
  const std::vector<std::string> path = PathSegments(target);
  const bool get = req.method() == http::verb::get;
  const bool post = req.method() == http::verb::post;
  auto unknown = [&] {
    return ErrorResponse(404, "unknown path '" + target + "' for " + std::string(req.method_string()), req);
  };
  if (path.size() == 1 && path[0] == "metrics" && get) {
    HttpResponse res = JsonResponse(http::status::ok, service_->metrics().Text(), req);
    res.set(http::field::content_type, "text/plain; version=0.0.4");
    co_return res;
  }
  if (path.empty() || path[0] != "v2") co_return unknown();
  if (path.size() == 1 && get) co_return JsonResponse(http::status::ok, ServerMetadataJson(), req);
  if (path.size() == 3 && path[1] == "health" && get) {
    if (path[2] == "live") co_return JsonResponse(http::status::ok, "", req);
    if (path[2] == "ready") {
      const std::string reason = service_->NotReadyReason();
      if (reason.empty()) co_return JsonResponse(http::status::ok, "", req);
      co_return ErrorResponse(503, "not ready: " + reason, req);
    }
  }
  if (path.size() == 3 && path[1] == "models" && path[2] == "stats" && get) {
    co_return Statistics(nullptr, nullptr, req);
  }
  if (path.size() >= 3 && path[1] == "models") {
    // models/{name}[/versions/{v}][/ready|/infer|/config|/stats]
    const std::string& name = path[2];
    size_t next = 3;
    const std::string* version = nullptr;
    if (path.size() >= 5 && path[3] == "versions") {
      version = &path[4];
      next = 5;
    }
    const std::string action = path.size() > next ? path[next] : "";
    if (path.size() > next + 1) co_return unknown();
    if (action == "stats" && get) co_return Statistics(&name, version, req);
    Route route;
    const bool known = (action.empty() || action == "ready" || action == "config") ? get : action == "infer" && post;
    if (!known) co_return unknown();
    if (auto error = service_->Resolve(name, version, &route))
      co_return ErrorResponse(error->http_status, error->message, req);
    if (action.empty()) co_return JsonResponse(http::status::ok, ModelMetadataJson(*route.model, *route.version), req);
    if (action == "ready") co_return JsonResponse(http::status::ok, "", req);
    if (action == "config")
      co_return JsonResponse(http::status::ok, ModelConfigJson(*route.model, *route.version), req);
    co_return co_await Infer(req, route, arrived);
  }
  if (path.size() == 3 && path[1] == "repository" && path[2] == "index" && post) {
    bool ready_only = false;
    if (!req.body().empty()) {
      rapidjson::Document doc;
      std::string error;
      if (!ParseJson(req.body(), &doc, &error)) co_return ErrorResponse(400, error + " (the index request)", req);
      if (doc.IsObject() && doc.HasMember("ready") && doc["ready"].IsBool()) ready_only = doc["ready"].GetBool();
    }
    co_return JsonResponse(http::status::ok, RepositoryIndexJson(*service_->repository(), ready_only), req);
  }
  if (path.size() == 5 && path[1] == "repository" && path[2] == "models" && post &&
      (path[4] == "load" || path[4] == "unload")) {
    const bool load = path[4] == "load";
    // Loading reads and verifies files: off the I/O threads.
    std::optional<ServiceError> error;
    co_await OnCodecPool([&] { error = load ? service_->Load(path[3]) : service_->Unload(path[3]); });
    if (error) co_return ErrorResponse(error->http_status, error->message, req);
    co_return JsonResponse(http::status::ok, "", req);
  }
  co_return unknown();
}

HttpResponse HttpRoutes::Statistics(const std::string* model, const std::string* version, const HttpRequest& req) {
  std::vector<std::shared_ptr<ModelVersion>> versions;
  if (model == nullptr) {
    for (const std::shared_ptr<const Model>& m : service_->repository()->Models()) {
      for (const auto& [n, v] : m->versions) {
        if (v->ready) versions.push_back(v);
      }
    }
  } else {
    std::shared_ptr<const Model> m = service_->repository()->Find(*model);
    if (!m) return ErrorResponse(404, "unknown model '" + *model + "'", req);
    for (const auto& [n, v] : m->versions) {
      if (version == nullptr ? v->ready : std::to_string(n) == *version) versions.push_back(v);
    }
    if (version != nullptr && versions.empty()) {
      return ErrorResponse(404, "model '" + *model + "' has no version '" + *version + "'", req);
    }
  }
  return JsonResponse(http::status::ok, StatisticsJson(versions), req);
}

asio::awaitable<HttpResponse> HttpRoutes::Infer(HttpRequest& req, const Route& route,
                                                std::chrono::steady_clock::time_point arrived) {
  RequestTimes times;
  JobTimes job;
  auto fail = [&](const ServiceError& e) {
    times.total = std::chrono::steady_clock::now() - arrived;
    service_->Record(route, e.http_status, times, job, e.message);
    return ErrorResponse(e.http_status, e.message, req);
  };
  int64_t json_length = -1;
  if (auto it = req.find("Inference-Header-Content-Length"); it != req.end()) {
    const std::string text(it->value());
    char* end = nullptr;
    json_length = std::strtoll(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || json_length < 0) {
      co_return fail(BadRequest("Inference-Header-Content-Length '" + text + "' is not a non-negative integer"));
    }
  }
  auto body = std::make_shared<const std::string>(std::move(req.body()));
  InferRequest parsed;
  std::optional<ServiceError> error;
  auto decode_start = std::chrono::steady_clock::now();
  co_await OnCodecPool([&] { error = ParseInferRequest(body, json_length, *route.version, *service_, &parsed); });
  times.decode = std::chrono::steady_clock::now() - decode_start;
  body.reset();  // binary inputs keep their bytes alive themselves
  if (error) co_return fail(*error);

  // The scheduler answers on a worker thread: it posts the outcome to this
  // coroutine's strand and cancels a timer the coroutine waits on.
  struct Waiter {
    explicit Waiter(asio::any_io_executor executor) : wake(std::move(executor)) {}
    asio::steady_timer wake;
    bool done = false;
    InferOutcome outcome;
  };
  // What the scheduler's callback holds, counted until it is destroyed (WaitForSchedulerCallbacks).
  struct Completion {
    Completion(PendingCallbacks* pending, std::shared_ptr<Waiter> waiter, asio::any_io_executor executor)
        : pending(pending), waiter(std::move(waiter)), executor(std::move(executor)) {
      pending->Add();
    }
    ~Completion() {
      waiter.reset();
      executor = asio::any_io_executor();
      pending->Remove();  // last: the io_context may go once the count is 0
    }
    PendingCallbacks* pending;
    std::shared_ptr<Waiter> waiter;
    asio::any_io_executor executor;
  };
  auto executor = co_await asio::this_coro::executor;
  auto waiter = std::make_shared<Waiter>(executor);
  waiter->wake.expires_at(asio::steady_timer::time_point::max());
  // Made in the capture, so that this coroutine's frame never holds one.
  service_->Submit(route, std::move(parsed.args), parsed.timeout_us,
                   [completion = std::make_shared<Completion>(&pending_callbacks_, waiter, executor)](InferOutcome o) {
                     asio::post(completion->executor, [waiter = completion->waiter, o = std::move(o)]() mutable {
                       waiter->outcome = std::move(o);
                       waiter->done = true;
                       waiter->wake.cancel();
                     });
                   });
  boost::system::error_code ignored;
  while (!waiter->done) co_await waiter->wake.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
  InferOutcome outcome = std::move(waiter->outcome);
  job = outcome.times;
  times.ran = !outcome.times.timed_out && outcome.times.compute.count() > 0;
  times.queue = job.queue;
  times.compute = job.compute;
  times.batch_size = job.batch_size;
  times.counts_execution = job.counts_execution;
  if (outcome.error) co_return fail(*outcome.error);
  std::vector<NamedOutput> outputs;
  if (auto e = service_->SelectOutputs(*route.version, outcome.result, parsed.outputs, &outputs)) co_return fail(*e);
  InferResponse response;
  auto encode_start = std::chrono::steady_clock::now();
  co_await OnCodecPool([&] { response = BuildInferResponse(*route.version, parsed, outputs); });
  times.encode = std::chrono::steady_clock::now() - encode_start;
  outputs.clear();
  outcome.result = vm::Value();
  HttpResponse res(http::status::ok, req.version());
  res.set(http::field::server, kServerName);
  res.keep_alive(req.keep_alive());
  if (response.json_length >= 0) {
    res.set(http::field::content_type, "application/octet-stream");
    res.set("Inference-Header-Content-Length", std::to_string(response.json_length));
  } else {
    res.set(http::field::content_type, "application/json");
  }
  res.body() = std::move(response.body);
  res.prepare_payload();
  times.ok = true;
  times.total = std::chrono::steady_clock::now() - arrived;
  service_->Record(route, 200, times, job);
  co_return res;
}

}  // namespace strata::server
