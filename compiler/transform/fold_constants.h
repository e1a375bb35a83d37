// FoldConstants: operator calls that depend only on constants (weights) are
// computed at compile time and replaced by their values.
//
// An imported model transposes, reshapes, scales and casts its weights in the
// graph; evaluated once here, that work leaves every call. The foldable
// bindings of each graph function become one function without parameters that
// returns them as a tuple, and a ConstantEvaluator computes it. The driver's
// evaluator compiles it with the same pipeline and kernels as the program itself
// and runs it once in the VM, so folded values are exactly what the program would
// compute; this pass only decides what to fold and puts the values in place (it
// cannot compile: code generation is a layer above it). A value is only folded
// when it is not much larger than the constants it is computed from (a broadcast
// of a scalar stays a call), so executables do not balloon.
//
// Before:  %wt = transpose(const(W)); %y = matmul(%x, %wt)
// After:   %y = matmul(%x, const(W^T))
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "compiler/ir/module.h"
#include "support/status.h"

namespace strata::transform {

// Computes the function `function` of `module` (no parameters, returns a tuple
// of tensors) and returns its fields as host tensors, in order.
using ConstantEvaluator = std::function<StatusOr<std::vector<std::shared_ptr<const graph::HostTensor>>>(
    ir::IRModule module, const std::string& function)>;

// Every graph function with its constant-only operator calls replaced by their
// values; the result is normalized.
StatusOr<ir::IRModule> FoldConstants(ir::IRModule module, const ConstantEvaluator& evaluate);

// The evaluator of the registered "FoldConstants" pass. Evaluating needs the
// layers above (it compiles and runs the folded calls), so the driver registers
// it (driver::RegisterCompilerPasses: EvaluateConstants, which runs the VM);
// until then the pass is an error saying so.
void SetConstantEvaluator(ConstantEvaluator evaluate);
ConstantEvaluator RegisteredConstantEvaluator();  // null until set

}  // namespace strata::transform
