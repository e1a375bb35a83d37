// The global library-function table.
#include "vm/registry.h"

#include <algorithm>
#include <cstdio>
#include <deque>
#include <map>
#include <mutex>
#include <shared_mutex>

namespace strata::vm {

namespace {

struct Registry {
  std::shared_mutex mutex;
  std::map<std::string, LibraryFunction, std::less<>> functions;
  std::deque<LibraryStdFunction> std_functions;  // stable addresses, never freed
};

Registry& GlobalRegistry() {
  static Registry* registry = new Registry();  // never destroyed: used until exit
  return *registry;
}

Status StdFunctionTrampoline(void* context, const Value* const* args, int32_t num_args, Value* out_result) {
  auto* fn = static_cast<LibraryStdFunction*>(context);
  return (*fn)(std::span<const Value* const>(args, static_cast<size_t>(num_args)), out_result);
}

}  // namespace

Status RegisterLibraryFunction(std::string_view name, LibraryFn fn, void* context, bool allow_override) {
  if (name.empty()) return Status(ErrorStatus() << "cannot register a library function with an empty name");
  if (fn == nullptr) return Status(ErrorStatus() << "cannot register a null library function as '" << name << "'");
  Registry& registry = GlobalRegistry();
  std::unique_lock lock(registry.mutex);
  auto it = registry.functions.find(name);
  if (it != registry.functions.end()) {
    if (!allow_override) return Status(ErrorStatus() << "library function '" << name << "' is already registered");
    it->second = LibraryFunction{fn, context};
    return Status::Ok();
  }
  registry.functions.emplace(std::string(name), LibraryFunction{fn, context});
  return Status::Ok();
}

Status RegisterLibraryFunction(std::string_view name, LibraryStdFunction fn, bool allow_override) {
  if (!fn) return Status(ErrorStatus() << "cannot register an empty std::function as '" << name << "'");
  Registry& registry = GlobalRegistry();
  LibraryStdFunction* stored;
  {
    std::unique_lock lock(registry.mutex);
    registry.std_functions.push_back(std::move(fn));
    stored = &registry.std_functions.back();
  }
  return RegisterLibraryFunction(name, &StdFunctionTrampoline, stored, allow_override);
}

std::optional<LibraryFunction> LookupLibraryFunction(std::string_view name) {
  Registry& registry = GlobalRegistry();
  std::shared_lock lock(registry.mutex);
  auto it = registry.functions.find(name);
  if (it == registry.functions.end()) return std::nullopt;
  return it->second;
}

std::vector<std::string> ListLibraryFunctions() {
  Registry& registry = GlobalRegistry();
  std::shared_lock lock(registry.mutex);
  std::vector<std::string> names;
  names.reserve(registry.functions.size());
  for (const auto& [name, fn] : registry.functions) names.push_back(name);
  return names;
}

Status CheckArgCount(std::string_view fn, int32_t num_args, int32_t expected, std::string_view params) {
  if (num_args == expected) return Status::Ok();
  return ErrorStatus() << fn << " expects " << expected << " argument" << (expected == 1 ? "" : "s") << " (" << params
                       << "), got " << num_args;
}

namespace internal {
bool RegisterAtStartup(const char* name, LibraryFn fn) {
  Status status = RegisterLibraryFunction(name, fn);
  if (!status.ok()) std::fprintf(stderr, "strata: %s\n", status.message().c_str());
  return status.ok();
}
}  // namespace internal

}  // namespace strata::vm
