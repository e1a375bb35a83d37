// WellFormed: the invariants every pass may assume and must preserve.
//
//   - every variable is defined before it is used, and only once;
//   - a dataflow variable is used only inside its dataflow block, and only
//     dataflow blocks bind dataflow variables;
//   - every @name is a function of the module; a tensor program is reached only
//     through call_tir (before CallTIRRewrite) or a destination-passing call
//     (after), never as a value;
//   - every symbolic variable a value needs at run time (shape(...), prim(...),
//     the output shapes of call_tir / call_dps_packed) is bound before, by a
//     parameter's shape or a match_cast;
//   - with require_struct_info (the default, for use after Normalize): every
//     variable, call, if and sequence carries struct info.
//
// The check stops at the first problem and names the function and the binding.
#pragma once

#include "compiler/ir/module.h"
#include "support/status.h"

namespace strata::analysis {

struct WellFormedOptions {
  bool require_struct_info = true;
};

Status CheckWellFormed(const ir::IRModule& module, const WellFormedOptions& options = {});

// The WellFormed pass: the module unchanged, or the first problem found.
StatusOr<ir::IRModule> WellFormed(ir::IRModule module);

}  // namespace strata::analysis
