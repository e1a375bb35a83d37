// libFuzzer target: strata-server's inference requests (the Open Inference
// Protocol's JSON, with the binary tensor data extension) for a model whose
// inputs cover the protocol's datatypes and a symbolic dimension shared by
// three inputs. The input's first two bytes give the JSON part's length
// (0xffff: the whole body is JSON), the rest is the body. A request that parses
// runs, as the server would run it, and its response is built.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "apps/server/inference_protocol.h"
#include "compiler/driver/compile.h"
#include "compiler/driver/pipeline.h"
#include "compiler/ir/parser.h"
#include "vm/virtual_machine.h"

namespace {

constexpr const char* kModel = R"(
func @main(x: Tensor[(batch, 4), f32], ids: Tensor[(batch,), i64], scale: Tensor[(1,), f16],
           keep: Tensor[(batch, 4), bool], raw: Tensor[(n,), u8]) -> Tensor[(batch, 4), f32] {
  y = relu(x)
  return y
}
)";

strata::server::ModelVersion* version = nullptr;
strata::vm::VirtualMachine* machine = nullptr;
// Parsing checks inputs against the version's signature through the service;
// its repository stays empty (the fuzzer routes nothing).
strata::server::ModelRepository* repository = nullptr;
strata::server::InferenceService* service = nullptr;

void Fail(const std::string& what) {
  std::fprintf(stderr, "infer_request_fuzzer: %s\n", what.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  using namespace strata;
  driver::RegisterCompilerPasses();
  StatusOr<ir::IRModule> module = ir::ParseModule(kModel, "fuzz_model.sir");
  if (!module.ok()) Fail(module.status().message());
  StatusOr<std::vector<uint8_t>> bytes = driver::Compile(std::move(module).value(), driver::CompileOptions{});
  if (!bytes.ok()) Fail(bytes.status().message());
  StatusOr<std::shared_ptr<const vm::Executable>> exe = vm::Executable::LoadFromBytes(*bytes);
  if (!exe.ok()) Fail(exe.status().message());
  version = new server::ModelVersion();
  version->model = "fuzz";
  version->version = 1;
  version->ready = true;
  version->executable = *exe;
  std::optional<int32_t> main = (*exe)->FindEntryPoint("main");
  if (!main) Fail("no main");
  version->function_index = *main;
  machine = new vm::VirtualMachine(*exe);
  repository = new server::ModelRepository("/nonexistent");
  service = new server::InferenceService(repository, /*strict_readiness=*/true);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace strata;
  if (size < 2) return 0;
  const int length_field = data[0] | (data[1] << 8);
  auto body = std::make_shared<const std::string>(reinterpret_cast<const char*>(data) + 2, size - 2);
  const int64_t json_length = length_field == 0xffff ? -1 : length_field;
  server::InferRequest request;
  if (server::ParseInferRequest(body, json_length, *version, *service, &request)) return 0;
  if (request.args.size() != 5) Fail("a parsed request must carry one argument per parameter");
  StatusOr<vm::Value> result = machine->InvokeFunction(version->function_index, request.args);
  if (!result.ok()) return 0;
  std::vector<server::NamedOutput> outputs;
  if (service->SelectOutputs(*version, *result, request.outputs, &outputs)) return 0;
  const server::InferResponse response = server::BuildInferResponse(*version, request, outputs);
  if (response.body.empty()) Fail("an empty response");
  return 0;
}
