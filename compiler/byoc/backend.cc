// The BYOC backend registry (see backend.h).
#include "compiler/byoc/backend.h"

#include <cstdio>
#include <mutex>

#include "compiler/byoc/builtin_backends.h"
#include "compiler/byoc/fuse_ops_by_pattern.h"
#include "compiler/transform/pass.h"
#include "support/suggest.h"

namespace strata::byoc {
namespace {

std::mutex& RegistryMutex() {
  static std::mutex mutex;
  return mutex;
}
std::map<std::string, Backend>& Registry() {
  static std::map<std::string, Backend> backends;
  return backends;
}

}  // namespace

Status RegisterBackend(Backend backend) {
  if (backend.name.empty() || backend.name.find('.') != std::string::npos) {
    return Status(ErrorStatus() << "BYOC backend name '" << backend.name << "' must be non-empty and have no '.'");
  }
  if (!backend.codegen) return Status(ErrorStatus() << "BYOC backend '" << backend.name << "' has no codegen");
  for (const pattern::FusionPattern& p : backend.patterns) {
    if (pattern::BackendOf(p.name) != backend.name || p.name.size() <= backend.name.size() + 1) {
      return Status(ErrorStatus() << "BYOC backend '" << backend.name << "': pattern '" << p.name << "' must be named '"
                                  << backend.name << ".<pattern>'");
    }
    if (p.pattern.get() == nullptr)
      return Status(ErrorStatus() << "BYOC backend '" << backend.name << "': pattern '" << p.name << "' is empty");
  }
  std::lock_guard<std::mutex> lock(RegistryMutex());
  if (Registry().count(backend.name) != 0) {
    return Status(ErrorStatus() << "BYOC backend '" << backend.name << "' is already registered");
  }
  std::string name = backend.name;
  std::vector<pattern::FusionPattern> patterns = backend.patterns;
  Registry().emplace(name, std::move(backend));
  // FuseOpsByPattern with this backend's patterns, by name for pipelines and tests.
  return transform::RegisterPass(transform::Pass{
      FusePassName(name), [patterns](ir::IRModule m) { return FuseOpsByPattern(std::move(m), patterns); }});
}

StatusOr<Backend> GetBackend(const std::string& name) {
  RegisterBuiltinBackends();
  std::lock_guard<std::mutex> lock(RegistryMutex());
  auto it = Registry().find(name);
  if (it != Registry().end()) return it->second;
  std::vector<std::string> known;
  for (const auto& [n, b] : Registry()) known.push_back(n);
  return Status(ErrorStatus(StatusCode::kNotFound)
                << "unknown BYOC backend '" << name << "' (registered: " << (known.empty() ? "none" : JoinNames(known))
                << ")" << DidYouMean(name, known));
}

std::vector<std::string> RegisteredBackendNames() {
  RegisterBuiltinBackends();
  std::lock_guard<std::mutex> lock(RegistryMutex());
  std::vector<std::string> names;
  for (const auto& [n, b] : Registry()) names.push_back(n);
  return names;
}

void RegisterBuiltinBackends() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (Backend backend : {DnnlBackend(), CCodegenBackend(), SimNpuBackend()}) {
      Status status = RegisterBackend(std::move(backend));
      if (!status.ok()) std::fprintf(stderr, "strata: %s\n", status.message().c_str());
    }
  });
}

std::string FusePassName(const std::string& backend) { return "FuseOpsByPattern[" + backend + "]"; }

const graph::CallNode* FindOpCall(const graph::Function& composite, const std::string& op) {
  const auto* body = composite->body.as<graph::SeqExprNode>();
  if (body == nullptr) return nullptr;
  for (const graph::BindingBlock& block : body->blocks) {
    for (const graph::Binding& binding : block.bindings) {
      const auto* call = binding.value.as<graph::CallNode>();
      const auto* callee = call ? call->op.as<graph::OpNode>() : nullptr;
      if (callee != nullptr && callee->name == op) return call;
    }
  }
  return nullptr;
}

std::vector<int64_t> IntsAttr(const graph::CallNode& call, const char* key, std::vector<int64_t> fallback) {
  auto it = call.attrs.find(key);
  if (it == call.attrs.end()) return fallback;
  if (const auto* list = std::get_if<std::vector<int64_t>>(&it->second)) return *list;
  if (const auto* i = std::get_if<int64_t>(&it->second)) return {*i};
  return fallback;
}

}  // namespace strata::byoc
