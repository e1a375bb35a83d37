// CallTIRRewrite: call_tir / call_dps_packed -> explicit allocation plus a
// destination-passing call (see call_tir_rewrite.h).
#include "compiler/transform/call_tir_rewrite.h"

#include <utility>
#include <vector>

#include "compiler/analysis/graph_util.h"
#include "compiler/analysis/struct_info_util.h"
#include "compiler/transform/normalize.h"
#include "compiler/transform/pass.h"

namespace strata::transform {

using namespace graph;  // NOLINT: a graph-level pass

namespace {

class CallTIRMutator : public Normalizer {
 public:
  using Normalizer::Normalizer;

 protected:
  void RewriteBinding(const Binding& binding) override {
    const auto* original = binding.value.as<CallNode>();
    bool call_tir = analysis::IsOpCall(original, ops::kCallTIR);
    if (!call_tir && !analysis::IsOpCall(original, ops::kCallDPSPacked)) return Normalizer::RewriteBinding(binding);

    // Normalizing first validates the call and gives the arguments struct info.
    Expr value = MutateExpr(binding.value);
    if (failed()) return;
    const auto* call = value.as<CallNode>();
    const char* what = call_tir ? "call_tir" : "call_dps_packed";
    std::vector<Expr> args;
    if (!analysis::CallArguments(call, &args) || call->sinfo_args.size() != 1) {
      Fail(std::string(what) + " takes (callee, (args...), OUT_SI)");
      return;
    }

    const StructInfo& out = call->sinfo_args[0];
    std::vector<StructInfo> outputs;
    bool tuple_output = out.as<TupleStructInfoNode>() != nullptr;
    if (tuple_output) {
      outputs = out.as<TupleStructInfoNode>()->fields;
    } else {
      outputs.push_back(out);
    }
    std::vector<Expr> allocs;
    for (const StructInfo& o : outputs) {
      const auto* tensor = o.as<TensorStructInfoNode>();
      if (!tensor || !tensor->shape || tensor->dtype.is_void()) {
        Fail(std::string(what) + " output " + analysis::StructInfoText(o) +
             " needs a known shape and dtype to be allocated");
        return;
      }
      Expr alloc = CallNode::make(OpNode::Get(ops::kAllocTensor),
                                  {ShapeExprNode::make(*tensor->shape), DataTypeImmNode::make(tensor->dtype)});
      allocs.push_back(Emit("out", alloc));
    }

    std::vector<Expr> dps_args = std::move(args);
    dps_args.insert(dps_args.end(), allocs.begin(), allocs.end());
    Expr dps;
    if (call_tir) {
      if (call->args.size() == 3) dps_args.push_back(call->args[2]);
      dps = CallNode::make(call->args[0], std::move(dps_args));
    } else {
      dps = analysis::MakeCallPacked(*analysis::LibraryName(call->args[0]), std::move(dps_args),
                                     TupleStructInfoNode::make({}));
    }
    Emit("_", dps);
    if (failed()) return;

    Expr result = tuple_output ? Annotate(TupleNode::make(allocs)) : allocs[0];
    EmitBinding(binding, result);
  }
};

}  // namespace

StatusOr<ir::IRModule> CallTIRRewrite(ir::IRModule module) {
  CallTIRMutator mutator(&module);
  STRATA_RETURN_IF_ERROR(RewriteGraphFunctions(mutator, &module));
  return module;
}

STRATA_REGISTER_PASS(CallTIRRewrite, CallTIRRewrite)

}  // namespace strata::transform
