// EvaluateConstants: the driver's transform::ConstantEvaluator.
//
// FoldConstants decides what to fold; this computes it: the module is compiled
// with the default pipeline (without FoldConstants itself) and the same kernels
// as any program, loaded into a VM and its function called once, so a folded
// value is bit for bit what the program would have computed at run time.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "compiler/ir/module.h"
#include "support/status.h"

namespace strata::driver {

StatusOr<std::vector<std::shared_ptr<const graph::HostTensor>>> EvaluateConstants(ir::IRModule module,
                                                                                  const std::string& function);

}  // namespace strata::driver
