// The pass registry and Pipeline (see pass.h).
#include "compiler/transform/pass.h"

#include <cassert>
#include <chrono>
#include <map>
#include <mutex>
#include <utility>

#include "compiler/analysis/well_formed.h"
#include "compiler/ir/printer.h"
#include "support/suggest.h"

namespace strata::generated {
std::vector<transform::Pass> TransformPasses();
}  // namespace strata::generated

namespace strata::transform {

namespace {

// This layer's passes, as its sources register them (STRATA_REGISTER_PASS); the
// build generates the function (cmake/StrataPasses.cmake).
struct Registry {
  std::mutex mutex;
  std::map<std::string, Pass> passes;

  Registry() {
    for (Pass& pass : generated::TransformPasses()) {
      const bool added = passes.emplace(pass.name, pass).second;
      assert(added && "two passes of strata_transform share a name");
      (void)added;
    }
  }
};

Registry& GetRegistry() {
  static Registry* registry = new Registry;  // leaked: passes may run during static destruction
  return *registry;
}

// Same functions, by handle: a pass that returned its input changed nothing.
bool SameFunctions(const ir::IRModule& a, const ir::IRModule& b) {
  if (a.functions().size() != b.functions().size()) return false;
  for (size_t i = 0; i < a.functions().size(); ++i) {
    const auto& [name_a, func_a] = a.functions()[i];
    const auto& [name_b, func_b] = b.functions()[i];
    if (name_a != name_b || func_a.index() != func_b.index()) return false;
    bool same = std::visit(
        [&](const auto& fa) {
          using T = std::decay_t<decltype(fa)>;
          return fa == std::get<T>(func_b);
        },
        func_a);
    if (!same) return false;
  }
  return true;
}

}  // namespace

Pass::Pass(std::string pass_name, ContextFreeFunction function) : name(std::move(pass_name)) {
  if (function)
    run = [function = std::move(function)](ir::IRModule m, const PassContext&) { return function(std::move(m)); };
}

Status RegisterPass(Pass pass) {
  if (pass.name.empty() || !pass.run) return Status::Error("RegisterPass: a pass needs a name and a function");
  Registry& registry = GetRegistry();
  std::lock_guard<std::mutex> lock(registry.mutex);
  std::string name = pass.name;
  if (!registry.passes.emplace(name, std::move(pass)).second) {
    return Status::Error("RegisterPass: a pass named '" + name + "' is already registered");
  }
  return Status::Ok();
}

StatusOr<Pass> GetPass(const std::string& name) {
  Registry& registry = GetRegistry();
  {
    std::lock_guard<std::mutex> lock(registry.mutex);
    auto it = registry.passes.find(name);
    if (it != registry.passes.end()) return it->second;
  }
  const std::vector<std::string> known = RegisteredPassNames();
  return Status::Error(StatusCode::kNotFound,
                       "unknown pass '" + name + "' (registered: " + JoinNames(known) + ")" + DidYouMean(name, known));
}

std::vector<std::string> RegisteredPassNames() {
  Registry& registry = GetRegistry();
  std::lock_guard<std::mutex> lock(registry.mutex);
  std::vector<std::string> names;
  for (const auto& entry : registry.passes) names.push_back(entry.first);
  return names;
}

StatusOr<Pipeline> Pipeline::FromNames(const std::vector<std::string>& names) {
  Pipeline pipeline;
  for (const std::string& name : names) {
    STRATA_ASSIGN_OR_RETURN(Pass pass, GetPass(name));
    pipeline.Append(std::move(pass));
  }
  return pipeline;
}

std::vector<std::string> Pipeline::names() const {
  std::vector<std::string> names;
  for (const Pass& p : passes_) names.push_back(p.name);
  return names;
}

size_t Pipeline::Find(const std::string& anchor) const {
  for (size_t i = 0; i < passes_.size(); ++i) {
    if (passes_[i].name == anchor) return i;
  }
  return passes_.size();
}

Status Pipeline::InsertBefore(const std::string& anchor, Pass pass) {
  size_t at = Find(anchor);
  if (at == passes_.size()) {
    return Status::Error("no pass '" + anchor + "' in the pipeline (" + JoinNames(names()) + ")");
  }
  passes_.insert(passes_.begin() + static_cast<std::ptrdiff_t>(at), std::move(pass));
  return Status::Ok();
}

Status Pipeline::InsertAfter(const std::string& anchor, Pass pass) {
  size_t at = Find(anchor);
  if (at == passes_.size()) {
    return Status::Error("no pass '" + anchor + "' in the pipeline (" + JoinNames(names()) + ")");
  }
  passes_.insert(passes_.begin() + static_cast<std::ptrdiff_t>(at + 1), std::move(pass));
  return Status::Ok();
}

StatusOr<ir::IRModule> Pipeline::Run(ir::IRModule module, const PassContext& context) {
  timings_.clear();
  // The printed input of the next pass, kept so each module is printed once.
  std::string before_text;
  if (after_pass_) before_text = ir::PrintModule(module);
  for (size_t i = 0; i < passes_.size(); ++i) {
    const Pass& pass = passes_[i];
    ir::IRModule input;
    if (after_pass_) input = module;
    auto start = std::chrono::steady_clock::now();
    StatusOr<ir::IRModule> result = pass.run(std::move(module), context);
    auto end = std::chrono::steady_clock::now();
    timings_.push_back({pass.name, std::chrono::duration<double, std::milli>(end - start).count()});
    if (!result.ok()) return Status(result.status()).WithContext(pass.name + ": ");
    module = std::move(result).value();
    if (!after_pass_) continue;
    bool changed = false;
    if (!SameFunctions(input, module)) {
      std::string after_text = ir::PrintModule(module);
      changed = after_text != before_text;
      before_text = std::move(after_text);
    }
    after_pass_(i, pass.name, module, changed);
  }
  return module;
}

STRATA_REGISTER_PASS(WellFormed, analysis::WellFormed)

}  // namespace strata::transform
