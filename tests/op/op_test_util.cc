// Operator test helpers; see op_test_util.h.
#include "tests/op/op_test_util.h"

#include "compiler/driver/compile.h"
#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"
#include "compiler/transform/normalize.h"

namespace strata::op::testing {
namespace {

// Finds the binding of `var` anywhere in the blocks of `func`'s body.
const graph::Binding* FindBinding(const graph::FunctionNode& func, const std::string& var) {
  const auto* seq = func.body.as<graph::SeqExprNode>();
  if (seq == nullptr) return nullptr;
  for (const graph::BindingBlock& block : seq->blocks) {
    for (const graph::Binding& binding : block.bindings) {
      if (binding.var->name == var) return &binding;
    }
  }
  return nullptr;
}

}  // namespace

std::string InferredStructInfo(const std::string& program, const std::string& var) {
  StatusOr<ir::IRModule> module = ir::ParseModule(program, "test.sir");
  if (!module.ok()) return "parse error: " + module.status().message();
  StatusOr<ir::IRModule> normalized = transform::Normalize(std::move(module).value());
  if (!normalized.ok()) return "error: " + normalized.status().message();
  graph::Function main = normalized->GetGraphFunction("main");
  if (!main) return "no @main";
  const graph::Binding* binding = FindBinding(*main, var);
  if (binding == nullptr) return "no binding '" + var + "' in @main";
  return ir::PrintStructInfo(binding->var->struct_info);
}

std::string CompileError(const std::string& program) {
  StatusOr<ir::IRModule> module = ir::ParseModule(program, "test.sir");
  if (!module.ok()) return "parse error: " + module.status().message();
  StatusOr<std::vector<uint8_t>> compiled = driver::Compile(std::move(module).value(), {});
  return compiled.ok() ? "" : compiled.status().message();
}

std::string OneCallProgram(const std::string& params, const std::string& call) {
  return "func @main(" + params + ") {\n  y = " + call + "\n  return y\n}\n";
}

}  // namespace strata::op::testing
