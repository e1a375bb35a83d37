// Operator test helpers; see op_test_util.h.
#include "tests/op/op_test_util.h"

#include <regex>

#include <gtest/gtest.h>

#include "compiler/driver/compile.h"
#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"
#include "compiler/transform/normalize.h"
#include "compiler/transform/pass.h"
#include "vm/executable.h"
#include "vm/tensor_io/npy.h"
#include "vm/virtual_machine.h"

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

std::string Infer(const std::string& params, const std::string& call) {
  return InferredStructInfo(OneCallProgram(params, call), "y");
}

std::string Kernel(const std::string& params, const std::string& call, const std::string& name) {
  StatusOr<ir::IRModule> module = ir::ParseModule(OneCallProgram(params, call), "test.sir");
  if (!module.ok()) return "parse error: " + module.status().message();
  StatusOr<transform::Pipeline> pipeline = transform::Pipeline::FromNames({"Normalize", "LegalizeOps"});
  if (!pipeline.ok()) return pipeline.status().message();
  StatusOr<ir::IRModule> legalized = pipeline->Run(std::move(module).value());
  if (!legalized.ok()) return "error: " + legalized.status().message();
  tir::PrimFunc func = legalized->GetPrimFunc(name);
  return func ? ir::PrintPrimFunc(name, func) : "no prim_func @" + name;
}

StatusOr<vm::Value> RunMain(const std::string& program, const std::vector<std::string>& inputs) {
  STRATA_ASSIGN_OR_RETURN(ir::IRModule module, ir::ParseModule(program, "t.sir"));
  STRATA_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, driver::Compile(std::move(module), {}));
  STRATA_ASSIGN_OR_RETURN(auto exe, vm::Executable::LoadFromBytes(bytes));
  vm::VirtualMachine machine(exe);
  std::vector<vm::Value> args;
  for (const std::string& text : inputs) {
    STRATA_ASSIGN_OR_RETURN(auto tensor, vm::ParseInlineTensor(text));
    args.push_back(vm::Value::FromTensor(tensor));
  }
  StatusOr<vm::Value> result = machine.Invoke("main", args);
  if (result.ok()) return result;
  // A run-time error names the function and the instruction that failed; these
  // tests read what the kernel or builtin said, once that context is checked.
  static const std::regex kContext(R"(^functions\[\d+\] 'main': instruction at word \d+ \(call\): )");
  const std::string& message = result.status().message();
  std::smatch context;
  if (!std::regex_search(message, context, kContext)) {
    ADD_FAILURE() << "a run-time error without the function and instruction: " << message;
    return result;
  }
  return Status::Error(result.status().code(), message.substr(context.length()));
}

std::string RunTensorOnce(const std::string& params, const std::string& call, const std::vector<std::string>& inputs) {
  StatusOr<vm::Value> result = RunMain(OneCallProgram(params, call), inputs);
  return result.ok() ? vm::FormatInlineTensor(*result->tensor()) : "error: " + result.status().message();
}

std::string InferError(const std::string& params, const std::string& call) {
  const std::string prefix = "error: function 'main', binding 'y': ";
  std::string text = Infer(params, call);
  return text.rfind(prefix, 0) == 0 ? text.substr(prefix.size()) : "no error: " + text;
}

std::string RunError(const std::string& params, const std::string& call, const std::vector<std::string>& inputs) {
  StatusOr<vm::Value> result = RunMain(OneCallProgram(params, call), inputs);
  return result.ok() ? "ok" : result.status().message();
}

}  // namespace strata::op::testing
