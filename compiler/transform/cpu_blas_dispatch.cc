// cpu-blas dispatch: large f32 matmul / dense -> OpenBLAS library calls (see cpu_blas_dispatch.h).
#include "compiler/transform/cpu_blas_dispatch.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "compiler/analysis/graph_util.h"
#include "compiler/analysis/struct_info_util.h"
#include "compiler/ir/arith/simplify.h"
#include "compiler/transform/normalize.h"
#include "compiler/transform/pass.h"

namespace strata::transform {

using namespace graph;  // NOLINT: a graph-level pass

namespace {

const TensorStructInfoNode* KnownF32(const Expr& e) {
  const auto* t = e->struct_info ? e->struct_info.as<TensorStructInfoNode>() : nullptr;
  return t != nullptr && t->shape && t->dtype == DataType::F32() ? t : nullptr;
}

// The product of the constant dims; symbolic dims count as 1.
int64_t ConstProduct(const std::vector<PrimExpr>& dims) {
  int64_t product = 1;
  for (const PrimExpr& d : dims) {
    if (std::optional<int64_t> c = arith::AsConstant(d)) product *= *c;
  }
  return product;
}

class CpuBlasDispatcher : public Normalizer {
 public:
  CpuBlasDispatcher(const ir::IRModule* module, const CpuBlasOptions& options)
      : Normalizer(module), options_(options) {}

 protected:
  void RewriteBinding(const Binding& binding) override {
    const auto* original = binding.value.as<CallNode>();
    const auto* op = original ? original->op.as<OpNode>() : nullptr;
    if (op == nullptr || (op->name != "matmul" && op->name != "dense")) return Normalizer::RewriteBinding(binding);
    Expr value = MutateExpr(binding.value);
    if (failed()) return;
    const auto* call = value.as<CallNode>();
    std::optional<std::string> library = op->name == "matmul" ? MatmulLibrary(*call) : DenseLibrary(*call);
    const auto* out = call->struct_info.as<TensorStructInfoNode>();
    if (!library || out == nullptr || !out->shape) return EmitBinding(binding, value);
    Expr dps = CallNode::make(OpNode::Get(ops::kCallDPSPacked),
                              {ExternFuncNode::make(*library), TupleNode::make(call->args)}, {}, {call->struct_info});
    EmitBinding(binding, MutateExpr(dps));
  }

 private:
  std::optional<std::string> MatmulLibrary(const CallNode& call) const {
    if (call.args.size() != 2) return std::nullopt;
    const auto* x = KnownF32(call.args[0]);
    const auto* w = KnownF32(call.args[1]);
    if (x == nullptr || w == nullptr || x->shape->size() < 2 || w->shape->size() < 2) return std::nullopt;
    const std::vector<PrimExpr>& xs = *x->shape;
    const std::vector<PrimExpr>& ws = *w->shape;
    if (ws.size() > 2) {
      if (ws.size() != xs.size()) return std::nullopt;
      for (size_t d = 0; d + 2 < xs.size(); ++d) {
        if (!analysis::ProveDimEqual(xs[d], ws[d])) return std::nullopt;
      }
    }
    // M * N * K of one GEMM (a 2-D w folds x's leading dims into M).
    std::vector<PrimExpr> dims(xs.begin(), xs.end());
    dims.push_back(ws.back());
    if (ws.size() > 2) dims.erase(dims.begin(), dims.begin() + static_cast<long>(xs.size() - 2));
    if (ConstProduct(dims) < options_.min_macs) return std::nullopt;
    return std::string("strata.blas.matmul");
  }

  std::optional<std::string> DenseLibrary(const CallNode& call) const {
    if (call.args.size() < 2 || call.args.size() > 3) return std::nullopt;
    const auto* x = KnownF32(call.args[0]);
    const auto* w = KnownF32(call.args[1]);
    if (x == nullptr || w == nullptr || x->shape->empty() || w->shape->size() != 2) return std::nullopt;
    if (call.args.size() == 3) {
      const auto* b = KnownF32(call.args[2]);
      if (b == nullptr || b->shape->size() != 1) return std::nullopt;
    }
    std::vector<PrimExpr> dims(x->shape->begin(), x->shape->end());
    dims.push_back((*w->shape)[0]);
    if (ConstProduct(dims) < options_.min_macs) return std::nullopt;
    return std::string(call.args.size() == 3 ? "strata.blas.dense_bias" : "strata.blas.dense");
  }

  const CpuBlasOptions& options_;
};

}  // namespace

StatusOr<ir::IRModule> CpuBlasDispatch(ir::IRModule module, const CpuBlasOptions& options) {
  CpuBlasDispatcher dispatcher(&module, options);
  STRATA_RETURN_IF_ERROR(RewriteGraphFunctions(dispatcher, &module));
  return module;
}

STRATA_REGISTER_NAMED_PASS(CpuBlas, "cpu-blas", [](ir::IRModule m) { return CpuBlasDispatch(std::move(m)); })

}  // namespace strata::transform
