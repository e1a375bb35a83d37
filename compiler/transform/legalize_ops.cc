// LegalizeOps: operator calls -> call_tir of generated kernels (see legalize_ops.h).
#include "compiler/transform/legalize_ops.h"

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "compiler/analysis/graph_util.h"
#include "compiler/ir/structural_equal.h"
#include "compiler/op/kernel_builder.h"
#include "compiler/transform/convert_to_nchwc.h"
#include "compiler/transform/decompose_conv_transpose.h"
#include "compiler/transform/normalize.h"
#include "compiler/transform/pack_weights.h"
#include "compiler/transform/pass.h"

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
    value = BindUnknownDims(value);
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
    tir::PrimFunc kernel = builder.Finish(
        std::move(body).value(), {{"op", def->name}, {"op_pattern", std::string(op::OpPatternName(def->pattern))}});
    std::string kernel_name = Intern(def->name, kernel);

    std::vector<Expr> call_args = {GlobalVarNode::make(kernel_name), TupleNode::make(builder.call_args())};
    if (!builder.tir_var_args().empty()) call_args.push_back(ShapeExprNode::make(builder.tir_var_args()));
    Expr call_tir = CallNode::make(OpNode::Get(ops::kCallTIR), std::move(call_args), {}, {builder.OutputStructInfo()});
    EmitBinding(binding, MutateExpr(call_tir));
  }

 private:
  // A kernel needs every input's dims as variables. An argument of known rank
  // and dtype whose dims are unknown (Tensor[ndim=2, f32]) gets them from a
  // match_cast emitted before the call, binding fresh variables at run time;
  // the call is then inferred again with the shapes.
  Expr BindUnknownDims(const Expr& call_expr) {
    const auto* call = call_expr.as<CallNode>();
    bool changed = false;
    std::vector<Expr> args;
    for (const Expr& arg : call->args) args.push_back(BindArg(arg, &changed));
    if (!changed) return call_expr;
    return MutateExpr(CallNode::make(call->op, std::move(args), call->attrs, call->sinfo_args));
  }

  Expr BindArg(const Expr& arg, bool* changed) {
    if (const auto* tuple = arg.as<TupleNode>()) {
      std::vector<Expr> fields;
      for (const Expr& field : tuple->fields) fields.push_back(BindArg(field, changed));
      return TupleNode::make(std::move(fields));
    }
    const auto* t = arg->struct_info ? arg->struct_info.as<TensorStructInfoNode>() : nullptr;
    if (t == nullptr || t->shape || t->ndim < 0 || t->dtype.is_void()) return arg;
    const auto* var = arg.as<VarNode>();
    const std::string base = var ? var->name : "arg";
    std::vector<PrimExpr> dims;
    for (int d = 0; d < t->ndim; ++d) dims.push_back(tir::Var(FreshName(base + "_d" + std::to_string(d))));
    StructInfo pattern = TensorStructInfoNode::make(std::move(dims), t->dtype);
    Binding cast{BindingKind::kMatchCast, Var(FreshName(base + "_shaped"), pattern, in_dataflow_block()), arg, pattern,
                 binding_location()};
    EmitBinding(cast, arg);
    *changed = true;
    return MutateExpr(cast.var);
  }

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
  analysis::NameSupply kernel_names_;
  std::vector<std::pair<std::string, tir::PrimFunc>> generated_;
};

}  // namespace

StatusOr<ir::IRModule> LegalizeOps(ir::IRModule module, const LegalizeOptions& options) {
  std::set<std::string> overridden;
  for (const auto& [name, fn] : options.overrides) overridden.insert(name);
  STRATA_ASSIGN_OR_RETURN(module, DecomposeConvTranspose(std::move(module), overridden));
  if (options.nchwc_layout) {
    STRATA_ASSIGN_OR_RETURN(module, ConvertToNchwc(std::move(module), options.nchwc, overridden));
  }
  if (options.pack_weights) {
    STRATA_ASSIGN_OR_RETURN(module, PackWeights(std::move(module), overridden));
  }
  Legalizer legalizer(&module, options);
  STRATA_RETURN_IF_ERROR(RewriteGraphFunctions(legalizer, &module));
  return module;
}

STRATA_REGISTER_PASS(LegalizeOps, [](ir::IRModule m, const PassContext& context) {
  LegalizeOptions options;
  options.nchwc_layout = context.nchwc_layout;
  options.nchwc = NchwcOptionsFor(context.target);
  return LegalizeOps(std::move(m), options);
})

}  // namespace strata::transform
