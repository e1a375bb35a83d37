// Passes, the pass registry and pipelines.
//
// A pass is a named IRModule -> IRModule function. The registry maps names to
// passes: this layer's own (Normalize, WellFormed, Canonicalize, FoldBatchNorm,
// EliminateCommonSubexpr, DeadCodeElimination, DispatchTIR, LegalizeOps,
// CallTIRRewrite, PlanMemory, ...) are always there; the layers above register
// theirs (driver::RegisterCompilerPasses: BYOC, the VM backend, FoldConstants),
// and targets, integrations or tests add their own with RegisterPass. A Pipeline is an ordered list of passes that can
// be extended at named points, runs them in order, times each one and reports
// every step to an optional callback (how --dump-ir prints the IR after each
// pass that changed it).
//
// Thread-safety: the registry may be used from any thread. A Pipeline is a plain
// value; one Pipeline must not Run on two threads at once.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "compiler/ir/module.h"
#include "support/status.h"

namespace strata::transform {

struct Pass {
  std::string name;
  std::function<StatusOr<ir::IRModule>(ir::IRModule)> run;
};

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

  // Runs every pass in order. An error is prefixed with the failing pass's name.
  StatusOr<ir::IRModule> Run(ir::IRModule module);
  // Per-pass wall time of the last Run, in pipeline order.
  const std::vector<PassTiming>& timings() const { return timings_; }

 private:
  size_t Find(const std::string& anchor) const;

  std::vector<Pass> passes_;
  AfterPassCallback after_pass_;
  std::vector<PassTiming> timings_;
};

}  // namespace strata::transform
