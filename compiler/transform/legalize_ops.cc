// LegalizeOps: operator calls -> call_tir of generated kernels (see legalize_ops.h).
#include "compiler/transform/legalize_ops.h"

#include <utility>
#include <vector>

#include "compiler/ir/structural_equal.h"
#include "compiler/op/kernel_builder.h"
#include "compiler/transform/graph_util.h"
#include "compiler/transform/normalize.h"

namespace strata::transform {

using namespace graph;  // NOLINT: a graph-level pass

namespace {

class Legalizer : public Normalizer {
 public:
  Legalizer(ir::IRModule* module, const LegalizeOptions& options)
      : Normalizer(module), module_(module), options_(options) {
    for (const auto& [name, func] : module->functions()) kernel_names_.Reserve(name);
  }

 protected:
  void RewriteBinding(const Binding& binding) override {
    const auto* original = binding.value.as<CallNode>();
    const auto* op_node = original ? original->op.as<OpNode>() : nullptr;
    const op::OpDef* def = op_node ? op::FindOp(op_node->name) : nullptr;
    if (def == nullptr) return Normalizer::RewriteBinding(binding);

    Expr value = MutateExpr(binding.value);  // infers and checks the call
    if (failed()) return;
    const auto* call = value.as<CallNode>();
    op::LegalizeFn legalize = def->legalize;
    if (auto it = options_.overrides.find(def->name); it != options_.overrides.end()) legalize = it->second;
    if (!legalize) {
      Fail(def->name + ": no default tensor program; run a dispatch pass that lowers it before LegalizeOps");
      return;
    }
    op::OpCall op_call(*def, *call);
    op::KernelBuilder builder(def->name);
    StatusOr<tir::Stmt> body = legalize(op_call, builder);
    if (!body.ok()) {
      Fail(body.status().message());
      return;
    }
    tir::PrimFunc kernel = builder.Finish(std::move(body).value(), {{"op", def->name}});
    std::string kernel_name = Intern(def->name, kernel);

    std::vector<Expr> call_args = {GlobalVarNode::make(kernel_name), TupleNode::make(builder.call_args())};
    if (!builder.tir_var_args().empty()) call_args.push_back(ShapeExprNode::make(builder.tir_var_args()));
    Expr call_tir = CallNode::make(OpNode::Get(ops::kCallTIR), std::move(call_args), {}, {builder.OutputStructInfo()});
    EmitBinding(binding, MutateExpr(call_tir));
  }

 private:
  // The module's name for `kernel`: an identical kernel generated before, or a
  // new function named after the operator.
  std::string Intern(const std::string& op_name, const tir::PrimFunc& kernel) {
    for (const auto& [name, existing] : generated_) {
      if (ir::StructuralEqual(existing, kernel)) return name;
    }
    std::string name = kernel_names_.Fresh(op_name);
    module_->Add(name, kernel);
    generated_.emplace_back(name, kernel);
    return name;
  }

  ir::IRModule* module_;
  const LegalizeOptions& options_;
  NameSupply kernel_names_;
  std::vector<std::pair<std::string, tir::PrimFunc>> generated_;
};

}  // namespace

StatusOr<ir::IRModule> LegalizeOps(ir::IRModule module, const LegalizeOptions& options) {
  Legalizer legalizer(&module, options);
  STRATA_RETURN_IF_ERROR(RewriteGraphFunctions(legalizer, &module));
  return module;
}

}  // namespace strata::transform
