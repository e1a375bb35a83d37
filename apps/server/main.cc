// strata-server: serves a model repository over the Open Inference Protocol
// (KServe v2 / Triton HTTP). Links only the runtime. docs/serving.md.
#include <cmath>
#include <cstdio>
#include <iostream>
#include <malloc.h>
#include <thread>

#include <boost/program_options.hpp>
#include <sys/resource.h>

#include "apps/server/grpc_server.h"
#include "apps/server/http_server.h"
#include "apps/server/inference_service.h"
#include "apps/server/log.h"
#include "apps/server/model_repository.h"
#include "vm/kernel_threads.h"

namespace po = boost::program_options;
using strata::server::Log;
using strata::server::LogLevel;

namespace {

int Fail(const std::string& message) {
  std::fprintf(stderr, "strata-server: %s\n", message.c_str());
  return 2;
}

// Raises the descriptor limit to its hard maximum (each connection is one) and
// returns it.
int64_t RaiseFileLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return 1024;
  if (limit.rlim_cur < limit.rlim_max) {
    rlimit raised = limit;
    raised.rlim_cur = limit.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
  }
  return limit.rlim_cur == RLIM_INFINITY ? int64_t{1} << 20 : static_cast<int64_t>(limit.rlim_cur);
}

}  // namespace

int main(int argc, char** argv) {
  po::options_description options("strata-server options");
  // clang-format off
  options.add_options()
      ("help,h", "show this help")
      ("model-repository", po::value<std::string>()->required(),
       "the model repository: DIR/<model>/<version>/model.stx and an optional DIR/<model>/config.json")
      ("model-control-mode", po::value<std::string>()->default_value("none"),
       "none: load every model at start, refuse the load/unload API; explicit: load the --load-model models, then "
       "as the API asks; poll: load every model, rescan the repository every --repository-poll-secs")
      ("load-model", po::value<std::vector<std::string>>()->composing(),
       "with --model-control-mode explicit: a model to load at start (repeatable; '*' for all)")
      ("repository-poll-secs", po::value<double>()->default_value(15), "with poll: seconds between rescans")
      ("model-file-access", po::value<std::string>()->default_value("copy"),
       "copy: read each model file into memory, so later writes to it cannot affect the server; map: memory-map it "
       "(less memory; only safe when files are replaced by rename, never rewritten in place)")
      ("strict-readiness", po::value<bool>()->default_value(true),
       "/v2/health/ready answers 200 only while every model that should be loaded is ready")
      ("http-port", po::value<int>()->default_value(8000), "the HTTP port (0: any free port, printed at start)")
      ("grpc-port", po::value<int>()->default_value(8001),
       "the gRPC port (KServe v2 / Triton GRPCInferenceService; 0: any free port, printed at start; -1: no gRPC)")
      ("grpc-max-message-bytes", po::value<int64_t>(),
       "the largest gRPC request message (default: --max-body-bytes, at most 2 GiB - 1); larger ones get "
       "RESOURCE_EXHAUSTED")
      ("address", po::value<std::string>()->default_value("0.0.0.0"), "the address to listen on")
      ("threads", po::value<int>(), "threads for the kernels' parallel loops (default: the CPUs available)")
      ("io-threads", po::value<int>()->default_value(2), "threads reading and writing connections")
      ("codec-threads", po::value<int>()->default_value(2), "threads decoding requests and encoding responses")
      ("max-body-bytes", po::value<int64_t>()->default_value(int64_t{64} << 20),
       "the largest request body accepted (binary tensor data included); larger ones get 413")
      ("max-json-body-bytes", po::value<int64_t>()->default_value(int64_t{16} << 20),
       "the largest JSON body, or JSON part of a binary request; larger ones get 413")
      ("http-max-header-bytes", po::value<int64_t>()->default_value(int64_t{16} << 10),
       "the largest request line and headers; larger ones get 431")
      ("http-max-url-bytes", po::value<int64_t>()->default_value(int64_t{8} << 10),
       "the longest request target; longer ones get 414")
      ("http-header-timeout-secs", po::value<double>()->default_value(10),
       "seconds from a request's first byte to the end of its headers")
      ("http-body-timeout-secs", po::value<double>()->default_value(60),
       "seconds from the end of a request's headers to the end of its body")
      ("http-idle-timeout-secs", po::value<double>()->default_value(60),
       "seconds a keep-alive connection may wait for its next request")
      ("http-write-timeout-secs", po::value<double>()->default_value(60), "seconds to write a response")
      ("http-max-connections", po::value<int64_t>(),
       "open connections at most (default: the file descriptor limit less 64); past it, the longest-idle "
       "connection is closed, or the new one gets 503")
      ("exit-timeout-secs", po::value<double>()->default_value(30),
       "after SIGTERM, seconds to wait for requests in flight before exiting anyway")
      ("log-verbose", po::value<int>()->default_value(0),
       "0: loads, unloads and failures; 1: also every failed request and refused connection; 2: every request")
      ("log-format", po::value<std::string>()->default_value("text"), "text or json (one JSON object per line)");
  // clang-format on
  po::variables_map vm;
  try {
    po::store(po::parse_command_line(argc, argv, options), vm);
    if (vm.count("help")) {
      std::cout << "usage: strata-server --model-repository DIR [options]\n" << options;
      return 0;
    }
    po::notify(vm);
  } catch (const po::error& e) {
    return Fail(e.what());
  }
  const std::string log_format = vm["log-format"].as<std::string>();
  if (log_format != "text" && log_format != "json")
    return Fail("--log-format must be text or json, got '" + log_format + "'");
  const int verbose = vm["log-verbose"].as<int>();
  if (verbose < 0 || verbose > 2) return Fail("--log-verbose must be 0, 1 or 2, got " + std::to_string(verbose));
  strata::server::SetLogOptions(
      log_format == "json" ? strata::server::LogFormat::kJson : strata::server::LogFormat::kText, verbose);

  const int port = vm["http-port"].as<int>();
  if (port < 0 || port > 65535) return Fail("--http-port must be 0 to 65535, got " + std::to_string(port));
  auto count = [&](const char* flag, int lo, int hi, int* out) -> bool {
    const int n = vm[flag].as<int>();
    if (n < lo || n > hi) {
      Fail(std::string("--") + flag + " must be " + std::to_string(lo) + " to " + std::to_string(hi) + ", got " +
           std::to_string(n));
      return false;
    }
    *out = n;
    return true;
  };
  strata::server::HttpOptions http;
  if (!count("io-threads", 1, 256, &http.io_threads) || !count("codec-threads", 1, 256, &http.codec_threads)) return 2;
  auto bytes = [&](const char* flag, int64_t lo, int64_t* out) -> bool {
    const int64_t n = vm[flag].as<int64_t>();
    if (n < lo) {
      Fail(std::string("--") + flag + " must be at least " + std::to_string(lo) + ", got " + std::to_string(n));
      return false;
    }
    *out = n;
    return true;
  };
  if (!bytes("max-body-bytes", 1, &http.max_body_bytes) || !bytes("max-json-body-bytes", 1, &http.max_json_bytes) ||
      !bytes("http-max-header-bytes", 1024, &http.max_header_bytes) ||
      !bytes("http-max-url-bytes", 64, &http.max_url_bytes)) {
    return 2;
  }
  auto seconds = [&](const char* flag, std::chrono::milliseconds* out) -> bool {
    const double s = vm[flag].as<double>();
    if (!(s > 0) || s > 86400 * 7) {
      Fail(std::string("--") + flag + " must be more than 0 and at most a week, got " + std::to_string(s));
      return false;
    }
    *out = std::chrono::milliseconds(static_cast<int64_t>(std::ceil(s * 1000)));
    return true;
  };
  std::chrono::milliseconds poll_interval;
  if (!seconds("http-header-timeout-secs", &http.header_timeout) ||
      !seconds("http-body-timeout-secs", &http.body_timeout) ||
      !seconds("http-idle-timeout-secs", &http.idle_timeout) ||
      !seconds("http-write-timeout-secs", &http.write_timeout) || !seconds("exit-timeout-secs", &http.exit_timeout) ||
      !seconds("repository-poll-secs", &poll_interval)) {
    return 2;
  }
  const int grpc_port = vm["grpc-port"].as<int>();
  if (grpc_port < -1 || grpc_port > 65535) {
    return Fail("--grpc-port must be -1 (no gRPC) or 0 to 65535, got " + std::to_string(grpc_port));
  }
  strata::server::GrpcOptions grpc_options;
  grpc_options.max_message_bytes = std::min<int64_t>(http.max_body_bytes, INT32_MAX);
  if (vm.count("grpc-max-message-bytes")) {
    if (!bytes("grpc-max-message-bytes", 1, &grpc_options.max_message_bytes)) return 2;
    if (grpc_options.max_message_bytes > INT32_MAX) {
      return Fail("--grpc-max-message-bytes must be at most 2147483647 (gRPC's limit), got " +
                  std::to_string(grpc_options.max_message_bytes));
    }
  }
  const int64_t file_limit = RaiseFileLimit();
  http.max_connections = std::max<int64_t>(file_limit - 64, 8);
  if (vm.count("http-max-connections")) {
    const int64_t n = vm["http-max-connections"].as<int64_t>();
    if (n < 1) return Fail("--http-max-connections must be at least 1, got " + std::to_string(n));
    http.max_connections = n;
  }
  if (vm.count("threads")) {
    const strata::Status set = strata::vm::SetKernelThreadCount(vm["threads"].as<int>());
    if (!set.ok()) return Fail("--threads: " + set.message());
  }

  strata::server::RepositoryOptions repository_options;
  const std::optional<strata::server::ModelControlMode> mode =
      strata::server::ParseModelControlMode(vm["model-control-mode"].as<std::string>());
  if (!mode) {
    return Fail("--model-control-mode must be none, explicit or poll, got '" +
                vm["model-control-mode"].as<std::string>() + "'");
  }
  repository_options.control_mode = *mode;
  repository_options.poll_interval = poll_interval;
  if (vm.count("load-model")) {
    if (*mode != strata::server::ModelControlMode::kExplicit) {
      return Fail("--load-model needs --model-control-mode explicit (the other modes load every model)");
    }
    repository_options.startup_models = vm["load-model"].as<std::vector<std::string>>();
  }
  const std::string access = vm["model-file-access"].as<std::string>();
  if (access != "copy" && access != "map") return Fail("--model-file-access must be copy or map, got '" + access + "'");
  repository_options.file_access =
      access == "map" ? strata::server::ModelFileAccess::kMap : strata::server::ModelFileAccess::kCopy;

  // Buffers of 256 KiB and up (request bodies, tensors) come from mmap and go back
  // to the system when freed, so memory returns to its baseline after a burst.
  mallopt(M_MMAP_THRESHOLD, 256 << 10);

  strata::server::ModelRepository repository(vm["model-repository"].as<std::string>(), repository_options);
  if (const strata::Status started = repository.Start(); !started.ok()) {
    std::fprintf(stderr, "strata-server: %s\n", started.message().c_str());
    return 1;
  }
  strata::server::InferenceService service(&repository, vm["strict-readiness"].as<bool>());
  http.address = vm["address"].as<std::string>();
  http.port = static_cast<uint16_t>(port);
  // SIGTERM stops gRPC alongside HTTP: its calls in flight drain for up to
  // exit_timeout on a thread of their own while HTTP drains its requests.
  std::unique_ptr<strata::server::GrpcServer> grpc;
  std::thread grpc_stopper;
  bool grpc_drained = true;
  http.on_shutdown = [&] {
    if (grpc) grpc_stopper = std::thread([&] { grpc_drained = grpc->Shutdown(http.exit_timeout); });
  };
  strata::server::HttpServer server(&service, http);
  if (const strata::Status listening = server.Listen(); !listening.ok()) {
    std::fprintf(stderr, "strata-server: %s\n", listening.message().c_str());
    return 1;
  }
  std::string grpc_at = "off";
  if (grpc_port >= 0) {
    grpc_options.address = http.address;
    grpc_options.port = static_cast<uint16_t>(grpc_port);
    grpc = std::make_unique<strata::server::GrpcServer>(&service, grpc_options);
    if (const strata::Status started = grpc->Start(); !started.ok()) {
      std::fprintf(stderr, "strata-server: %s\n", started.message().c_str());
      return 1;
    }
    grpc_at = http.address + ":" + std::to_string(grpc->bound_port());
  }
  Log(LogLevel::kInfo, "listening",
      {{"http", http.address + ":" + std::to_string(server.bound_port())},
       {"grpc", grpc_at},
       {"model_control_mode", strata::server::ModelControlModeName(*mode)},
       {"max_connections", http.max_connections}});
  // The line scripts and tests wait for, whatever the log format.
  std::fprintf(stderr, "strata-server: listening on %s:%u, gRPC %s\n", http.address.c_str(), server.bound_port(),
               grpc_port >= 0 ? ("on " + grpc_at).c_str() : "off");
  std::fflush(stderr);
  bool drained = server.Run();  // until SIGTERM or SIGINT, then every request in flight is answered
  if (grpc_stopper.joinable()) grpc_stopper.join();
  drained = drained && grpc_drained;
  Log(LogLevel::kInfo, "stopped", {{"drained", drained}});
  if (!drained) {
    // exit_timeout passed with requests still running: their model versions'
    // workers would be joined by the destructors, for as long as they run.
    std::fflush(stderr);
    std::_Exit(0);
  }
  return 0;
}
