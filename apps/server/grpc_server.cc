// GrpcServer; see grpc_server.h.
#include "apps/server/grpc_server.h"

#include <climits>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include <absl/synchronization/mutex.h>
#include <grpc/grpc.h>
#include <grpc/support/log.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/support/message_allocator.h>

#include "apps/server/grpc_codec.h"
#include "apps/server/inference_protocol.h"
#include "apps/server/log.h"
#include "apps/server/proto/grpc_service.grpc.pb.h"

namespace strata::server {
namespace {

using inference::ModelInferRequest;
using inference::ModelInferResponse;
using Clock = std::chrono::steady_clock;

// While Start binds: the OS errors gRPC logs (it returns none), for Start's error.
std::mutex bind_errors_mutex;
std::string* bind_errors = nullptr;

// gRPC's own log lines (a port it cannot bind, a transport error) in the
// server's log format, so that --log-format json stays one object a line.
void LogFromGrpc(gpr_log_func_args* args) {
  // DEBUG lines come only with GRPC_VERBOSITY=DEBUG, which asks for them.
  const LogLevel level = args->severity == GPR_LOG_SEVERITY_ERROR  ? LogLevel::kError
                         : args->severity == GPR_LOG_SEVERITY_INFO ? LogLevel::kInfo
                                                                   : LogLevel::kVerbose;
  Log(level, "grpc", {{"message", args->message}, {"source", args->file}, {"line", args->line}});
  std::lock_guard<std::mutex> lock(bind_errors_mutex);
  if (bind_errors == nullptr) return;
  // ... os_error:"Address already in use" ...
  const std::string_view message(args->message);
  constexpr std::string_view kKey = "os_error:\"";
  const size_t at = message.find(kKey);
  if (at == std::string_view::npos) return;
  const size_t start = at + kKey.size();
  const std::string error(message.substr(start, message.find('"', start) - start));
  if (bind_errors->find(error) == std::string::npos) *bind_errors += (bind_errors->empty() ? "" : "; ") + error;
}

// "host:port" as gRPC parses it: an IPv6 address in brackets.
std::string ListenTarget(const std::string& address, uint16_t port) {
  const bool ipv6 = address.find(':') != std::string::npos && address.front() != '[';
  return (ipv6 ? "[" + address + "]" : address) + ":" + std::to_string(port);
}

// ModelInfer's messages, allocated by the server (InferAllocator) rather than
// by gRPC, so that the request can outlive the call: the input tensors that
// view its raw_input_contents in place hold it.
struct InferMessages {
  ModelInferRequest request;
  ModelInferResponse response;
};

class InferHolder final : public grpc::MessageHolder<ModelInferRequest, ModelInferResponse> {
 public:
  InferHolder() : messages_(std::make_shared<InferMessages>()) {
    set_request(&messages_->request);
    set_response(&messages_->response);
  }
  void Release() override { delete this; }  // gRPC is done with them; the tensors may not be
  const std::shared_ptr<InferMessages>& messages() const { return messages_; }

 private:
  std::shared_ptr<InferMessages> messages_;
};

class InferAllocator final : public grpc::MessageAllocator<ModelInferRequest, ModelInferResponse> {
 public:
  grpc::MessageHolder<ModelInferRequest, ModelInferResponse>* AllocateMessages() override { return new InferHolder; }
};

// Drops a route on a thread of its own. The last reference to a model version
// (one unloaded while its request ran) must not go on the version's own worker:
// its scheduler would join the thread it runs on.
void ReleaseOffWorker(Route route) {
  std::thread([route = std::move(route)]() mutable { route = Route(); }).detach();
}

// Set while a job's completion runs (on the model's worker): should gRPC run
// OnDone inline from the completion's Finish, the route still leaves the worker.
thread_local bool in_completion = false;

// One ModelInfer, shared by its reactor (gRPC's side) and the job's completion
// (the model's worker). Whichever comes first answers: the result, or a
// cancellation (the client's, its deadline, or Shutdown's past its deadline);
// the other then leaves the reactor alone. The route must be released off the
// worker: OnDone takes it when the completion has finished with it, else the
// completion does (ReleaseOffWorker).
struct InferState {
  InferenceService* service = nullptr;
  std::shared_ptr<InferMessages> messages;
  Clock::time_point arrived;
  RequestTimes times;
  std::mutex mutex;  // guards the fields below
  Route route;
  grpc::ServerUnaryReactor* reactor = nullptr;  // valid until reactor_done
  bool answered = false;                        // Finish was called
  bool submitted = false;                       // a job holds the state
  bool job_done = false;                        // the job's completion is finished with `route`
  bool reactor_done = false;                    // OnDone ran
};

class InferReactor final : public grpc::ServerUnaryReactor {
 public:
  explicit InferReactor(std::shared_ptr<InferState> state) : state_(std::move(state)) {}

  // Answers now (the first answer wins); the inference, if running, finishes
  // unobserved and is still recorded.
  void OnCancel() override {
    {
      std::lock_guard<std::mutex> lock(state_->mutex);
      if (state_->answered) return;
      state_->answered = true;
    }
    Finish(grpc::Status(grpc::StatusCode::CANCELLED, "the call was cancelled before its inference finished"));
  }

  void OnDone() override {
    Route route;  // released here, on a gRPC thread, when the job no longer needs it
    {
      std::lock_guard<std::mutex> lock(state_->mutex);
      state_->reactor_done = true;
      if (state_->job_done || !state_->submitted) route = std::move(state_->route);
    }
    if (in_completion && route.version) ReleaseOffWorker(std::move(route));
    delete this;
  }

  // Answers before any job was submitted.
  void Answer(const grpc::Status& status) {
    {
      std::lock_guard<std::mutex> lock(state_->mutex);
      if (state_->answered) return;
      state_->answered = true;
    }
    Finish(status);
  }

 private:
  std::shared_ptr<InferState> state_;
};

// The job's completion, on the model's worker (or inline, a full queue).
void CompleteInfer(const std::shared_ptr<InferState>& state, const std::vector<std::string>& wanted,
                   const std::string& id, InferOutcome outcome) {
  RequestTimes& times = state->times;
  const JobTimes& job = outcome.times;
  times.ran = !job.timed_out && job.compute.count() > 0;
  times.queue = job.queue;
  times.compute = job.compute;
  times.batch_size = job.batch_size;
  times.counts_execution = job.counts_execution;
  bool answering;
  {
    std::lock_guard<std::mutex> lock(state->mutex);
    answering = !state->answered;
  }
  const Route& route = state->route;  // kept by the state until job_done
  std::optional<ServiceError> error = outcome.error;
  if (!error) {
    std::vector<NamedOutput> outputs;
    error = state->service->SelectOutputs(*route.version, outcome.result, wanted, &outputs);
    if (!error && answering) {
      const Clock::time_point encode_start = Clock::now();
      EncodeInferResponse(*route.version, id, outputs, &state->messages->response);
      times.encode = Clock::now() - encode_start;
    }
  }
  outcome.result = vm::Value();
  times.ok = !error;
  times.total = Clock::now() - state->arrived;
  state->service->Record(route, error ? error->http_status : 200, times, job);

  grpc::ServerUnaryReactor* reactor = nullptr;
  Route release;
  {
    std::lock_guard<std::mutex> lock(state->mutex);
    state->job_done = true;
    if (!state->answered) {
      state->answered = true;
      reactor = state->reactor;  // not done: it has not finished yet
    } else if (state->reactor_done) {
      release = std::move(state->route);
    }
  }
  if (reactor) {
    in_completion = true;
    reactor->Finish(error ? GrpcStatusOf(*error) : grpc::Status::OK);
    in_completion = false;
  }
  if (release.version) ReleaseOffWorker(std::move(release));
}

// A single thread for repository loads and unloads, which read and verify
// files: kept off gRPC's threads.
class ControlThread {
 public:
  ControlThread() : thread_([this] { Loop(); }) {}
  ~ControlThread() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_one();
    thread_.join();
  }
  void Post(std::function<void()> task) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      tasks_.push_back(std::move(task));
    }
    wake_.notify_one();
  }

 private:
  void Loop() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (true) {
      wake_.wait(lock, [this] { return stop_ || !tasks_.empty(); });
      if (tasks_.empty()) return;  // stopping, with nothing left
      std::function<void()> task = std::move(tasks_.front());
      tasks_.pop_front();
      lock.unlock();
      task();
      lock.lock();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> tasks_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace

class GrpcServer::Impl final : public inference::GRPCInferenceService::CallbackService {
 public:
  Impl(InferenceService* service, GrpcOptions options) : service_(service), options_(std::move(options)) {
    SetMessageAllocatorFor_ModelInfer(&allocator_);
  }

  ~Impl() override { Shutdown(std::chrono::milliseconds(0)); }

  Status Start() {
    const std::string target = ListenTarget(options_.address, options_.port);
    if (options_.max_message_bytes < 1 || options_.max_message_bytes > INT_MAX) {
      return Status(ErrorStatus() << "gRPC on " << target << ": max_message_bytes must be 1 to " << INT_MAX << ", got "
                                  << options_.max_message_bytes);
    }
    static std::once_flag once;
    std::call_once(once, [] {
      gpr_set_log_function(LogFromGrpc);
      // Debian's Abseil is built with its mutexes' deadlock detection on: a
      // graph of lock orders updated on every lock gRPC takes (its cost, and
      // races ThreadSanitizer sees in the uninstrumented library). gRPC's
      // own builds turn it off.
      absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
    });
    auto ms = [](std::chrono::milliseconds d) { return static_cast<int>(std::min<int64_t>(d.count(), INT_MAX)); };
    grpc::ServerBuilder builder;
    builder.AddListeningPort(target, grpc::InsecureServerCredentials(), &bound_port_);
    builder.RegisterService(this);
    builder.SetMaxReceiveMessageSize(static_cast<int>(options_.max_message_bytes));
    // gRPC sets SO_REUSEPORT by default, which would let a second server share
    // a port in use instead of failing to start.
    builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
    builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS,
                               static_cast<int>(std::min<int64_t>(options_.max_concurrent_streams, INT_MAX)));
    builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS, ms(options_.max_connection_idle));
    builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, ms(options_.keepalive_time));
    builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, ms(options_.keepalive_timeout));
    // Ping connections with no call as well: a peer gone silent is found and
    // closed even between its calls.
    builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
    std::string errors;
    {
      std::lock_guard<std::mutex> lock(bind_errors_mutex);
      bind_errors = &errors;
    }
    server_ = builder.BuildAndStart();
    {
      std::lock_guard<std::mutex> lock(bind_errors_mutex);
      bind_errors = nullptr;
    }
    if (!server_ || bound_port_ == 0) {
      server_.reset();
      return Status(
          ErrorStatus() << "cannot listen for gRPC on " << target << ": "
                        << (errors.empty() ? "gRPC could not bind it (its log line above says why)" : errors));
    }
    control_ = std::make_unique<ControlThread>();
    return Status::Ok();
  }

  uint16_t bound_port() const { return static_cast<uint16_t>(bound_port_); }

  bool Shutdown(std::chrono::milliseconds deadline) {
    std::unique_lock<std::mutex> lock(shutdown_mutex_);
    if (shutdown_started_) {
      shutdown_done_cv_.wait(lock, [this] { return shutdown_done_; });
      return drained_;
    }
    shutdown_started_ = true;
    lock.unlock();
    bool drained = true;
    if (server_) {
      const Clock::time_point until = Clock::now() + deadline;
      // Stops accepting calls, waits for those in flight until the deadline,
      // then cancels the rest (InferReactor::OnCancel answers at once).
      server_->Shutdown(std::chrono::system_clock::now() + deadline);
      drained = Clock::now() < until;
      // Connections without calls were only told to go away (GOAWAY); one its
      // client keeps open would stay, and gRPC's library shutdown at exit waits
      // (up to 10 s) for every connection to be gone. Close them now.
      grpc_server_cancel_all_calls(server_->c_server());
      if (!drained) {
        Log(LogLevel::kWarning, "grpc_exit_timeout", {{"deadline_ms", static_cast<int64_t>(deadline.count())}});
      }
      control_.reset();  // after the server: a load in flight answers first
    }
    lock.lock();
    drained_ = drained;
    shutdown_done_ = true;
    shutdown_done_cv_.notify_all();
    return drained;
  }

  void Wait() {
    std::unique_lock<std::mutex> lock(shutdown_mutex_);
    shutdown_done_cv_.wait(lock, [this] { return shutdown_done_; });
  }

  // --- Health and metadata -------------------------------------------------

  grpc::ServerUnaryReactor* ServerLive(grpc::CallbackServerContext* context, const inference::ServerLiveRequest*,
                                       inference::ServerLiveResponse* response) override {
    response->set_live(true);
    return Answer(context, grpc::Status::OK);
  }

  grpc::ServerUnaryReactor* ServerReady(grpc::CallbackServerContext* context, const inference::ServerReadyRequest*,
                                        inference::ServerReadyResponse* response) override {
    response->set_ready(service_->NotReadyReason().empty());
    return Answer(context, grpc::Status::OK);
  }

  // As Triton: not ready (rather than an error) for a model or version that
  // does not exist or failed; the HTTP endpoint answers 404 / 400 instead.
  grpc::ServerUnaryReactor* ModelReady(grpc::CallbackServerContext* context,
                                       const inference::ModelReadyRequest* request,
                                       inference::ModelReadyResponse* response) override {
    Route route;
    response->set_ready(!service_->Resolve(request->name(), VersionOf(request->version()), &route));
    return Answer(context, grpc::Status::OK);
  }

  grpc::ServerUnaryReactor* ServerMetadata(grpc::CallbackServerContext* context,
                                           const inference::ServerMetadataRequest*,
                                           inference::ServerMetadataResponse* response) override {
    return Answer(context, MessageFromJson(ServerMetadataJson(), response, "server metadata"));
  }

  grpc::ServerUnaryReactor* ModelMetadata(grpc::CallbackServerContext* context,
                                          const inference::ModelMetadataRequest* request,
                                          inference::ModelMetadataResponse* response) override {
    Route route;
    if (auto error = service_->Resolve(request->name(), VersionOf(request->version()), &route)) {
      return Answer(context, error);
    }
    return Answer(context, MessageFromJson(ModelMetadataJson(*route.model, *route.version), response,
                                           "metadata of model '" + request->name() + "'"));
  }

  grpc::ServerUnaryReactor* ModelConfig(grpc::CallbackServerContext* context,
                                        const inference::ModelConfigRequest* request,
                                        inference::ModelConfigResponse* response) override {
    Route route;
    if (auto error = service_->Resolve(request->name(), VersionOf(request->version()), &route)) {
      return Answer(context, error);
    }
    return Answer(context,
                  ModelConfigFromJson(ModelConfigJson(*route.model, *route.version), response->mutable_config()));
  }

  // Every ready version of every model (no name), a model's ready versions (no
  // version), or one version: as GET /v2/models[/{m}[/versions/{v}]]/stats.
  grpc::ServerUnaryReactor* ModelStatistics(grpc::CallbackServerContext* context,
                                            const inference::ModelStatisticsRequest* request,
                                            inference::ModelStatisticsResponse* response) override {
    std::vector<std::shared_ptr<ModelVersion>> versions;
    const std::string& name = request->name();
    const std::string& version = request->version();
    if (name.empty()) {
      for (const std::shared_ptr<const Model>& m : service_->repository()->Models()) {
        for (const auto& [n, v] : m->versions) {
          if (v->ready) versions.push_back(v);
        }
      }
    } else {
      std::shared_ptr<const Model> m = service_->repository()->Find(name);
      if (!m) return Answer(context, NotFound("unknown model '" + name + "'"));
      for (const auto& [n, v] : m->versions) {
        if (version.empty() ? v->ready : std::to_string(n) == version) versions.push_back(v);
      }
      if (!version.empty() && versions.empty()) {
        return Answer(context, NotFound("model '" + name + "' has no version '" + version + "'"));
      }
    }
    return Answer(context, MessageFromJson(StatisticsJson(versions), response, "statistics"));
  }

  // --- The model repository ------------------------------------------------

  grpc::ServerUnaryReactor* RepositoryIndex(grpc::CallbackServerContext* context,
                                            const inference::RepositoryIndexRequest* request,
                                            inference::RepositoryIndexResponse* response) override {
    const std::string json = "{\"models\":" + RepositoryIndexJson(*service_->repository(), request->ready()) + "}";
    return Answer(context, MessageFromJson(json, response, "repository index"));
  }

  grpc::ServerUnaryReactor* RepositoryModelLoad(grpc::CallbackServerContext* context,
                                                const inference::RepositoryModelLoadRequest* request,
                                                inference::RepositoryModelLoadResponse*) override {
    if (!request->parameters().empty()) {
      return Answer(context, BadRequest("model '" + request->model_name() +
                                        "': load parameters (a config or files "
                                        "to override the repository's, '" +
                                        request->parameters().begin()->first + "') are not supported"));
    }
    return Control(context, [this, name = request->model_name()] { return service_->Load(name); });
  }

  grpc::ServerUnaryReactor* RepositoryModelUnload(grpc::CallbackServerContext* context,
                                                  const inference::RepositoryModelUnloadRequest* request,
                                                  inference::RepositoryModelUnloadResponse*) override {
    return Control(context, [this, name = request->model_name()] { return service_->Unload(name); });
  }

  // --- Inference -----------------------------------------------------------

  grpc::ServerUnaryReactor* ModelInfer(grpc::CallbackServerContext* context, const ModelInferRequest* request,
                                       ModelInferResponse*) override {
    auto state = std::make_shared<InferState>();
    state->service = service_;
    state->arrived = Clock::now();
    state->messages = static_cast<InferHolder*>(context->GetRpcAllocatorState())->messages();
    auto* reactor = new InferReactor(state);
    Route route;
    if (auto error = service_->Resolve(request->model_name(), VersionOf(request->model_version()), &route)) {
      reactor->Answer(GrpcStatusOf(*error));  // no version to record it against (as HTTP)
      return reactor;
    }
    const Clock::time_point decode_start = Clock::now();
    GrpcInferRequest decoded;
    const std::optional<ServiceError> error =
        DecodeInferRequest(*request, state->messages, *route.version, *service_, &decoded);
    state->times.decode = Clock::now() - decode_start;
    {
      std::lock_guard<std::mutex> lock(state->mutex);
      state->reactor = reactor;
      state->route = route;
      state->submitted = !error;
    }
    if (error) {
      state->times.total = Clock::now() - state->arrived;
      service_->Record(route, error->http_status, state->times, JobTimes{});
      reactor->Answer(GrpcStatusOf(*error));
      return reactor;
    }
    // The call's deadline bounds the wait too: past it, the client has gone.
    std::optional<int64_t> timeout_us = decoded.timeout_us;
    const auto deadline = context->deadline();
    if (deadline != std::chrono::system_clock::time_point::max()) {
      const int64_t left = std::max<int64_t>(
          0,
          std::chrono::duration_cast<std::chrono::microseconds>(deadline - std::chrono::system_clock::now()).count());
      timeout_us = std::min(timeout_us.value_or(left), left);
    }
    service_->Submit(route, std::move(decoded.args), timeout_us,
                     [state, wanted = std::move(decoded.outputs), id = request->id()](InferOutcome outcome) {
                       CompleteInfer(state, wanted, id, std::move(outcome));
                     });
    return reactor;
  }

 private:
  static const std::string* VersionOf(const std::string& version) { return version.empty() ? nullptr : &version; }

  static grpc::ServerUnaryReactor* Answer(grpc::CallbackServerContext* context, const grpc::Status& status) {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(status);
    return reactor;
  }
  static grpc::ServerUnaryReactor* Answer(grpc::CallbackServerContext* context,
                                          const std::optional<ServiceError>& error) {
    return Answer(context, error ? GrpcStatusOf(*error) : grpc::Status::OK);
  }

  grpc::ServerUnaryReactor* Control(grpc::CallbackServerContext* context,
                                    std::function<std::optional<ServiceError>()> action) {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    control_->Post([reactor, action = std::move(action)] {
      const std::optional<ServiceError> error = action();
      reactor->Finish(error ? GrpcStatusOf(*error) : grpc::Status::OK);
    });
    return reactor;
  }

  InferenceService* service_;
  GrpcOptions options_;
  InferAllocator allocator_;
  std::unique_ptr<grpc::Server> server_;
  int bound_port_ = 0;
  std::unique_ptr<ControlThread> control_;
  std::mutex shutdown_mutex_;
  std::condition_variable shutdown_done_cv_;
  bool shutdown_started_ = false;
  bool shutdown_done_ = false;
  bool drained_ = true;
};

GrpcServer::GrpcServer(InferenceService* service, GrpcOptions options)
    : impl_(std::make_unique<Impl>(service, std::move(options))) {}
GrpcServer::~GrpcServer() = default;
Status GrpcServer::Start() { return impl_->Start(); }
uint16_t GrpcServer::bound_port() const { return impl_->bound_port(); }
bool GrpcServer::Shutdown(std::chrono::milliseconds deadline) { return impl_->Shutdown(deadline); }
void GrpcServer::Wait() { impl_->Wait(); }

}  // namespace strata::server
