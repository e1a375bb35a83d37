// FoldConstants: operator calls that depend only on constants (weights) are
// computed at compile time and replaced by their values.
//
// An imported model transposes, reshapes, scales and casts its weights in the
// graph; evaluated once here, that work leaves every call. The foldable
// bindings of each graph function are compiled together into one temporary
// executable (the same pipeline and kernels as the program itself, so folded
// values are exactly what the program would compute) and run once in the VM.
// A value is only folded when it is not much larger than the constants it is
// computed from (a broadcast of a scalar stays a call), so executables do not
// balloon.
#pragma once

#include "compiler/ir/module.h"
#include "support/status.h"

namespace strata::driver {

StatusOr<ir::IRModule> FoldConstants(ir::IRModule module);

}  // namespace strata::driver
