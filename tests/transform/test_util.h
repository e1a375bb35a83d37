// Helpers for the pass tests: parse text IR, run passes by name, find bindings.
#pragma once

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "compiler/analysis/graph_util.h"
#include "compiler/driver/pipeline.h"
#include "compiler/ir/graph.h"
#include "compiler/ir/module.h"
#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"
#include "compiler/transform/pass.h"

namespace strata::transform::testing {

// Parses `text`; a parse error fails the test (the returned module is then empty).
inline ir::IRModule Parse(const std::string& text) {
  StatusOr<ir::IRModule> module = ir::ParseModule(text, "test.sir");
  EXPECT_TRUE(module.ok()) << module.status().message();
  return module.ok() ? std::move(module).value() : ir::IRModule();
}

// Runs the registered passes `names` (of any layer) in order.
inline StatusOr<ir::IRModule> RunPasses(ir::IRModule module, const std::vector<std::string>& names) {
  driver::RegisterCompilerPasses();
  STRATA_ASSIGN_OR_RETURN(Pipeline pipeline, Pipeline::FromNames(names));
  return pipeline.Run(std::move(module));
}

// Every binding of `func` in program order, branches of ifs included.
inline void CollectBindings(const graph::Expr& expr, std::vector<graph::Binding>* out) {
  if (const auto* seq = expr.as<graph::SeqExprNode>()) {
    for (const graph::BindingBlock& block : seq->blocks) {
      for (const graph::Binding& b : block.bindings) {
        out->push_back(b);
        CollectBindings(b.value, out);
      }
    }
    return;
  }
  if (const auto* node = expr.as<graph::IfNode>()) {
    CollectBindings(node->then_branch, out);
    CollectBindings(node->else_branch, out);
  }
}

inline std::vector<graph::Binding> Bindings(const ir::IRModule& module, const std::string& func) {
  std::vector<graph::Binding> out;
  graph::Function f = module.GetGraphFunction(func);
  EXPECT_TRUE(f != nullptr) << "no graph function @" << func;
  if (f) CollectBindings(f->body, &out);
  return out;
}

// The binding of the variable named `var` in `func`; fails the test when absent.
inline graph::Binding FindBinding(const ir::IRModule& module, const std::string& func, const std::string& var) {
  for (const graph::Binding& b : Bindings(module, func)) {
    if (b.var->name == var) return b;
  }
  ADD_FAILURE() << "no binding '" << var << "' in @" << func;
  return {};
}

// The printed struct info of binding `var` ("<missing>" when absent).
inline std::string SInfoOf(const ir::IRModule& module, const std::string& func, const std::string& var) {
  graph::Binding b = FindBinding(module, func, var);
  if (!b.var.defined() || !b.var->struct_info.defined()) return "<missing>";
  return ir::PrintStructInfo(b.var->struct_info);
}

// The calls to library function `name` (call_packed) in `func`, in program order.
inline std::vector<analysis::PackedCall> PackedCalls(const ir::IRModule& module, const std::string& func,
                                                     const std::string& name) {
  std::vector<analysis::PackedCall> calls;
  for (const graph::Binding& b : Bindings(module, func)) {
    analysis::PackedCall call;
    if (analysis::MatchCallPacked(b.value.as<graph::CallNode>(), &call) && call.name == name) calls.push_back(call);
  }
  return calls;
}

// The value of a string argument, or "<not a string>".
inline std::string StringArg(const graph::Expr& expr) {
  const auto* s = expr.as<graph::StringImmNode>();
  return s ? s->value : "<not a string>";
}

}  // namespace strata::transform::testing
