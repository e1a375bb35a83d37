// strata-server: serves a model repository over the Open Inference Protocol
// (KServe v2 / Triton HTTP). Links only the runtime. docs/serving.md.
#include <cstdio>
#include <iostream>

#include <boost/program_options.hpp>

#include "apps/server/http_server.h"
#include "apps/server/model_repository.h"
#include "vm/kernel_runtime.h"

namespace po = boost::program_options;

int main(int argc, char** argv) {
  po::options_description options("strata-server options");
  options.add_options()("help,h", "show this help")(
      "model-repository", po::value<std::string>()->required(),
      "the model repository: DIR/<model>/<version>/model.stx and an optional DIR/<model>/config.json")(
      "http-port", po::value<int>()->default_value(8000), "the HTTP port (0: any free port, printed at start)")(
      "address", po::value<std::string>()->default_value("0.0.0.0"), "the address to listen on")(
      "threads", po::value<int>(), "threads for the kernels' parallel loops (default: the CPUs available)")(
      "io-threads", po::value<int>()->default_value(2), "threads reading and writing connections")(
      "max-body-bytes", po::value<int64_t>()->default_value(int64_t{64} << 20),
      "the largest request body accepted; larger ones get 413");
  po::variables_map vm;
  try {
    po::store(po::parse_command_line(argc, argv, options), vm);
    if (vm.count("help")) {
      std::cout << "usage: strata-server --model-repository DIR [options]\n" << options;
      return 0;
    }
    po::notify(vm);
  } catch (const po::error& e) {
    std::fprintf(stderr, "strata-server: %s\n", e.what());
    return 2;
  }
  const int port = vm["http-port"].as<int>();
  const int io_threads = vm["io-threads"].as<int>();
  if (port < 0 || port > 65535) {
    std::fprintf(stderr, "strata-server: --http-port must be 0 to 65535, got %d\n", port);
    return 2;
  }
  if (io_threads < 1 || io_threads > 256) {
    std::fprintf(stderr, "strata-server: --io-threads must be 1 to 256, got %d\n", io_threads);
    return 2;
  }
  if (vm.count("threads")) {
    const strata::Status set = strata::vm::SetKernelThreadCount(vm["threads"].as<int>());
    if (!set.ok()) {
      std::fprintf(stderr, "strata-server: --threads: %s\n", set.message().c_str());
      return 2;
    }
  }

  strata::server::ModelRepository repository(vm["model-repository"].as<std::string>());
  if (const strata::Status loaded = repository.LoadAll(); !loaded.ok()) {
    std::fprintf(stderr, "strata-server: %s\n", loaded.message().c_str());
    return 1;
  }
  for (const auto& model : repository.Models()) {
    if (!model->reason.empty())
      std::fprintf(stderr, "model '%s' not ready: %s\n", model->name.c_str(), model->reason.c_str());
    for (const auto& [number, version] : model->versions) {
      if (version->ready) {
        std::fprintf(stderr, "model '%s' version %lld ready\n", model->name.c_str(), static_cast<long long>(number));
      } else {
        std::fprintf(stderr, "model '%s' version %lld not ready: %s\n", model->name.c_str(),
                     static_cast<long long>(number), version->reason.c_str());
      }
    }
  }
  strata::server::HttpOptions http;
  http.address = vm["address"].as<std::string>();
  http.port = static_cast<uint16_t>(port);
  http.io_threads = io_threads;
  http.max_body_bytes = vm["max-body-bytes"].as<int64_t>();
  strata::server::HttpServer server(&repository, http);
  if (const strata::Status listening = server.Listen(); !listening.ok()) {
    std::fprintf(stderr, "strata-server: %s\n", listening.message().c_str());
    return 1;
  }
  std::fprintf(stderr, "strata-server: listening on %s:%u\n", http.address.c_str(), server.bound_port());
  std::fflush(stderr);
  server.Run();  // until SIGTERM or SIGINT, then every request in flight is answered
  std::fprintf(stderr, "strata-server: stopped\n");
  return 0;
}
