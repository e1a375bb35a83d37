// Passes, the pass registry and pipelines.
//
// A pass is a named IRModule -> IRModule function that may read the compile's
// PassContext (pass_context.h: the target, pass options). A pass registers
// itself in the file that defines it:
//
//   STRATA_REGISTER_PASS(PlanMemory, PlanMemory)
//   STRATA_REGISTER_NAMED_PASS(CpuBlas, "cpu-blas", [](ir::IRModule m) { ... })
//
// so adding a pass touches its own file and, if it runs by default, the
// pipeline's order list (driver/pipeline.cc). The build collects those lines per
// library into a generated list (cmake/StrataPasses.cmake), so no pass is lost
// to a static archive dropping a file nothing else references. This layer's
// passes are in the registry from its first use; the layers above add theirs
// when driver::RegisterCompilerPasses runs; targets, integrations and tests add
// their own with RegisterPass. A Pipeline is an ordered list of passes that can
// be extended at named points, runs them in order with one context, times each
// one and reports every step to an optional callback (how --dump-ir prints the
// IR after each pass that changed it).
//
// Thread-safety: the registry may be used from any thread. A Pipeline is a plain
// value; one Pipeline must not Run on two threads at once.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ir/module.h"
#include "compiler/transform/pass_context.h"
#include "support/status.h"

namespace strata::transform {

struct Pass {
  using Function = std::function<StatusOr<ir::IRModule>(ir::IRModule, const PassContext&)>;
  // A pass that needs nothing of the context.
  using ContextFreeFunction = std::function<StatusOr<ir::IRModule>(ir::IRModule)>;

  Pass() = default;
  Pass(std::string pass_name, Function function) : name(std::move(pass_name)), run(std::move(function)) {}
  Pass(std::string pass_name, ContextFreeFunction function);

  std::string name;
  Function run;
};

// See the top of this file. `id` names the registration (unique in the
// library); STRATA_REGISTER_PASS registers the pass under the id itself.
#define STRATA_REGISTER_NAMED_PASS(id, pass_name, ...)                                        \
  extern "C" void strata_register_pass_##id(std::vector<::strata::transform::Pass>* passes);  \
  extern "C" void strata_register_pass_##id(std::vector<::strata::transform::Pass>* passes) { \
    passes->emplace_back(pass_name, __VA_ARGS__);                                             \
  }
#define STRATA_REGISTER_PASS(id, ...) STRATA_REGISTER_NAMED_PASS(id, #id, __VA_ARGS__)

// Adds `pass` to the registry; an error if a pass of that name exists.
Status RegisterPass(Pass pass);
// The registered pass `name`, or an error listing the registered names.
StatusOr<Pass> GetPass(const std::string& name);
// All registered pass names, sorted.
std::vector<std::string> RegisteredPassNames();

struct PassTiming {
  std::string name;
  double milliseconds = 0;
};

// Called after pass `index` (0-based position in the pipeline) named `name`
// produced `module`. `changed` is whether the module differs from the pass's
// input (compared by printing, so only when a callback is installed).
using AfterPassCallback =
    std::function<void(size_t index, const std::string& name, const ir::IRModule& module, bool changed)>;

class Pipeline {
 public:
  Pipeline() = default;
  explicit Pipeline(std::vector<Pass> passes) : passes_(std::move(passes)) {}
  // A pipeline of registered passes, e.g. {"Normalize", "CallTIRRewrite"}.
  static StatusOr<Pipeline> FromNames(const std::vector<std::string>& names);

  void Append(Pass pass) { passes_.push_back(std::move(pass)); }
  // Inserts `pass` before / after the first pass named `anchor`; an error naming
  // the pipeline's passes when there is none.
  Status InsertBefore(const std::string& anchor, Pass pass);
  Status InsertAfter(const std::string& anchor, Pass pass);

  const std::vector<Pass>& passes() const { return passes_; }
  std::vector<std::string> names() const;

  void SetAfterPassCallback(AfterPassCallback callback) { after_pass_ = std::move(callback); }

  // Runs every pass in order, each with `context`. An error is prefixed with the
  // failing pass's name.
  StatusOr<ir::IRModule> Run(ir::IRModule module, const PassContext& context = {});
  // Per-pass wall time of the last Run, in pipeline order.
  const std::vector<PassTiming>& timings() const { return timings_; }

 private:
  size_t Find(const std::string& anchor) const;

  std::vector<Pass> passes_;
  AfterPassCallback after_pass_;
  std::vector<PassTiming> timings_;
};

}  // namespace strata::transform
