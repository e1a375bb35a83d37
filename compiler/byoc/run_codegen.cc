// RunCodegen: offloaded functions -> external calls (see run_codegen.h).
#include "compiler/byoc/run_codegen.h"

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "compiler/byoc/backend.h"
#include "compiler/byoc/fuse_ops_by_pattern.h"
#include "compiler/transform/normalize.h"
#include "compiler/transform/pass.h"

namespace strata::byoc {

using namespace graph;  // NOLINT: a graph-level pass

namespace {

const std::string* StringAttr(const ir::Attrs& attrs, const char* key) {
  auto it = attrs.find(key);
  return it == attrs.end() ? nullptr : std::get_if<std::string>(&it->second);
}

struct Generated {
  OffloadedFunction offloaded;
  CodegenResult result;
};

StatusOr<OffloadedFunction> Describe(const ir::IRModule& module, const std::string& name, const Function& func) {
  OffloadedFunction out{name, func, {}, &module};
  const auto* body = func->body.as<SeqExprNode>();
  for (const BindingBlock& block : body->blocks) {
    for (const Binding& binding : block.bindings) {
      const auto* call = binding.value.as<CallNode>();
      const auto* callee = call ? call->op.as<GlobalVarNode>() : nullptr;
      Function composite = callee ? module.GetGraphFunction(callee->name) : nullptr;
      const std::string* pattern = composite ? StringAttr(composite->attrs, kCompositeAttr) : nullptr;
      if (pattern == nullptr) {
        return Status(ErrorStatus() << "offloaded function '" << name << "': binding '" << binding.var->name
                                    << "' is not a call of a composite function");
      }
      out.composites.push_back(CompositeCall{callee->name, *pattern, composite, call});
    }
  }
  return out;
}

Status CheckResult(const Generated& g, const std::string& backend) {
  auto fail = [&](const std::string& what) {
    return Status(ErrorStatus() << "backend '" << backend << "' generated no code for offloaded function '"
                                << g.offloaded.name << "': " << what);
  };
  std::vector<std::string> used;
  if (g.result.function_call) {
    used.push_back(g.result.function_call->symbol);
  } else {
    for (const CompositeCall& c : g.offloaded.composites) {
      auto it = g.result.composite_calls.find(c.function_name);
      if (it == g.result.composite_calls.end())
        return fail("composite '" + c.function_name + "' (" + c.pattern_name + ") has no external function");
      used.push_back(it->second.symbol);
    }
  }
  for (const std::string& symbol : used) {
    if (symbol.empty()) return fail("an external function has an empty name");
    if (g.result.module.format == "elf-shared-object") {
      bool exported = false;
      for (const std::string& s : g.result.module.symbols) exported = exported || s == symbol;
      if (!exported) return fail("function '" + symbol + "' is not exported by the generated code");
    } else if (g.result.module.format != "library" && g.result.module.format != "device") {
      return fail("unknown external module format '" + g.result.module.format + "'");
    }
  }
  return Status::Ok();
}

// Replaces each call of an offloaded function by its external calls.
class ExternalCallRewriter : public Normalizer {
 public:
  ExternalCallRewriter(const ir::IRModule* module, const std::map<std::string, Generated>* generated)
      : Normalizer(module), generated_(generated) {}

 protected:
  void RewriteBinding(const Binding& binding) override {
    const auto* call = binding.value.as<CallNode>();
    const auto* callee = call ? call->op.as<GlobalVarNode>() : nullptr;
    auto it = callee ? generated_->find(callee->name) : generated_->end();
    if (it == generated_->end()) return Normalizer::RewriteBinding(binding);
    const Generated& g = it->second;

    std::vector<Expr> args;
    for (const Expr& arg : call->args) args.push_back(MutateExpr(arg));
    if (failed()) return;
    if (g.result.function_call) {
      Expr original = Annotate(CallNode::make(call->op, args, call->attrs));
      return EmitBinding(binding, ExternalCallOf(*g.result.function_call, args, original->struct_info));
    }

    // Inline the offloaded function: one external call per composite.
    std::map<const VarNode*, Expr> local;
    const Function& func = g.offloaded.function;
    for (size_t i = 0; i < func->params.size() && i < args.size(); ++i) local[func->params[i].get()] = args[i];
    auto map_expr = [&](const Expr& e) -> Expr {
      if (const auto* v = e.as<VarNode>()) {
        auto found = local.find(v);
        if (found != local.end()) return found->second;
      }
      return e;
    };
    const auto* body = func->body.as<SeqExprNode>();
    const Binding* last = nullptr;
    for (const BindingBlock& block : body->blocks) {
      for (const Binding& b : block.bindings) last = &b;
    }
    for (const BindingBlock& block : body->blocks) {
      for (const Binding& b : block.bindings) {
        const auto* composite_call = b.value.as<CallNode>();
        std::vector<Expr> composite_args;
        for (const Expr& a : composite_call->args) composite_args.push_back(map_expr(a));
        // The composite call as the caller would see it, for its result's struct info.
        Expr typed = Annotate(CallNode::make(composite_call->op, composite_args));
        if (failed()) return;
        const std::string& composite = composite_call->op.as<GlobalVarNode>()->name;
        Expr external = ExternalCallOf(g.result.composite_calls.at(composite), composite_args, typed->struct_info);
        if (failed()) return;
        if (&b == last && body->body.as<VarNode>() == b.var.get()) return EmitBinding(binding, external);
        local[b.var.get()] = Emit(b.var->name, external);
      }
    }
    Expr result = body->body;
    if (const auto* tuple = result.as<TupleNode>()) {
      std::vector<Expr> fields;
      for (const Expr& f : tuple->fields) fields.push_back(map_expr(f));
      result = TupleNode::make(std::move(fields));
    } else {
      result = map_expr(result);
    }
    EmitBinding(binding, MutateExpr(result));
  }

 private:
  Expr ExternalCallOf(const ExternalCall& external, std::vector<Expr> args, const StructInfo& result) {
    for (const Expr& extra : external.extra_args) args.push_back(MutateExpr(extra));
    Expr dps = CallNode::make(OpNode::Get(ops::kCallDPSPacked),
                              {ExternFuncNode::make(external.symbol), TupleNode::make(std::move(args))}, {}, {result});
    return MutateExpr(dps);
  }

  const std::map<std::string, Generated>* generated_;
};

}  // namespace

StatusOr<ir::IRModule> RunCodegen(ir::IRModule module) {
  std::map<std::string, Generated> generated;
  std::set<std::string> composites;
  for (const auto& [name, func] : module.functions()) {
    const auto* graph_func = std::get_if<Function>(&func);
    const std::string* backend_name = graph_func ? StringAttr((*graph_func)->attrs, kCodegenAttr) : nullptr;
    if (backend_name == nullptr) continue;
    STRATA_ASSIGN_OR_RETURN(Backend backend, GetBackend(*backend_name));
    STRATA_ASSIGN_OR_RETURN(OffloadedFunction offloaded, Describe(module, name, *graph_func));
    StatusOr<CodegenResult> result = backend.codegen(offloaded);
    if (!result.ok()) {
      return Status(ErrorStatus() << "backend '" << backend.name << "' failed to generate code for offloaded function '"
                                  << name << "': " << result.status().message());
    }
    Generated g{std::move(offloaded), std::move(result).value()};
    g.result.module.backend = backend.name;
    STRATA_RETURN_IF_ERROR(CheckResult(g, backend.name));
    for (const CompositeCall& c : g.offloaded.composites) composites.insert(c.function_name);
    generated.emplace(name, std::move(g));
  }
  if (generated.empty()) return module;

  ExternalCallRewriter rewriter(&module, &generated);
  STRATA_RETURN_IF_ERROR(transform::RewriteGraphFunctions(rewriter, &module));

  // The external code; a backend's library functions are listed once.
  for (auto& [name, g] : generated) {
    ir::ExternalModule& m = g.result.module;
    // Library functions and device kernels carry no code: one list per backend.
    if (m.format == "library" || m.format == "device") {
      std::set<std::string> symbols(m.symbols.begin(), m.symbols.end());
      if (g.result.function_call) symbols.insert(g.result.function_call->symbol);
      for (const auto& [composite, call] : g.result.composite_calls) symbols.insert(call.symbol);
      ir::ExternalModule* existing = nullptr;
      for (ir::ExternalModule& e : module.external_modules()) {
        if (e.format == m.format && e.backend == m.backend) existing = &e;
      }
      if (existing == nullptr) {
        module.external_modules().push_back(ir::ExternalModule{m.backend, m.format, {}, {}, {}, {}});
        existing = &module.external_modules().back();
      }
      symbols.insert(existing->symbols.begin(), existing->symbols.end());
      existing->symbols.assign(symbols.begin(), symbols.end());
    } else {
      module.external_modules().push_back(std::move(m));
    }
  }
  for (const auto& [name, g] : generated) module.Remove(name);
  for (const std::string& name : composites) module.Remove(name);
  return module;
}

STRATA_REGISTER_PASS(RunCodegen, RunCodegen)

}  // namespace strata::byoc
