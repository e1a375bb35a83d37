// Purity: which graph-level values may be removed when unused or computed once
// when repeated (DeadCodeElimination, EliminateCommonSubexpr).
//
// A value is pure when computing it has no effect besides its result and it
// reads nothing but its arguments: registered operators, call_tir (the tensor
// program writes only the outputs it is given), call_dps_packed (the library
// function writes only its destination; as in TVM's Relax, a library that does
// more must be called with call_packed), shape_of, tuples, and calls of graph
// functions whose bodies are pure. call_packed, kill, calls of a tensor program
// in destination-passing form, calls through a variable or of an extern
// function, and match_cast checks that could fail at run time are not.
// Operators whose arguments could violate a run-time check (a reshape of the
// wrong size) still count as pure, as in TVM and LLVM: an unused computation
// that would have failed is removed.
//
// Thread-safety: a PurityAnalysis is a plain value used by one pass on one thread.
#pragma once

#include <map>
#include <string>

#include "compiler/ir/module.h"

namespace strata::transform {

class PurityAnalysis {
 public:
  explicit PurityAnalysis(const ir::IRModule* module) : module_(module) {}

  // Whether `value` (a binding's value, any expression) is pure.
  bool IsPure(const graph::Expr& value);
  // Whether `binding` may be dropped when its variable is unused: a pure var
  // binding, or a match_cast that provably succeeds and binds no new symbolic
  // variable.
  bool IsRemovable(const graph::Binding& binding);

 private:
  bool IsPureFunction(const std::string& name);

  const ir::IRModule* module_;
  // Graph functions by name: true/false once known; absent while being analyzed
  // (a recursive call is treated as impure).
  std::map<std::string, bool> functions_;
};

}  // namespace strata::transform
