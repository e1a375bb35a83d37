// PackWeights: constant matmul / dense weights packed into GEMM panels (see pack_weights.h).
#include "compiler/transform/pack_weights.h"

#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>

#include "compiler/analysis/graph_util.h"
#include "compiler/op/gemm_panels.h"
#include "compiler/transform/dead_code_elimination.h"
#include "compiler/transform/normalize.h"
#include "compiler/transform/pass.h"

namespace strata::transform {
namespace {

using namespace graph;  // NOLINT: a graph-level pass

// The f32 matrix a weight argument denotes, if it is a constant.
const HostTensor* ConstantMatrix(const Expr& e, const analysis::BoundConstants& constants) {
  const HostTensor* t = constants.Of(e);
  if (t == nullptr || t->dtype != DataType::F32() || t->shape.size() != 2) return nullptr;
  if (t->bytes.size() != static_cast<size_t>(t->shape[0] * t->shape[1]) * sizeof(float)) return nullptr;
  return t;
}

// The panels of B (K x N), where B[k][n] is w[k * N + n] (matmul's y) or, with
// `transposed`, w[n * K + k] (dense's weight, N x K).
Expr PackPanels(const HostTensor& w, bool transposed) {
  const int64_t k_dim = transposed ? w.shape[1] : w.shape[0];
  const int64_t n_dim = transposed ? w.shape[0] : w.shape[1];
  constexpr int64_t kWidth = op::kGemmPanelWidth;
  const int64_t panels = (n_dim + kWidth - 1) / kWidth;
  auto packed = std::make_shared<HostTensor>();
  packed->dtype = DataType::F32();
  packed->shape = {panels, k_dim, kWidth};
  packed->bytes.assign(static_cast<size_t>(panels * k_dim * kWidth) * sizeof(float), 0);
  const auto* src = reinterpret_cast<const float*>(w.bytes.data());
  auto* dst = reinterpret_cast<float*>(packed->bytes.data());
  for (int64_t t = 0; t < panels; ++t) {
    for (int64_t k = 0; k < k_dim; ++k) {
      float* row = dst + (t * k_dim + k) * kWidth;
      for (int64_t c = 0; c < kWidth && t * kWidth + c < n_dim; ++c) {
        const int64_t n = t * kWidth + c;
        row[c] = transposed ? src[n * k_dim + k] : src[k * n_dim + n];
      }
    }
  }
  return ConstantNode::make(std::move(packed));
}

const TensorStructInfoNode* F32Tensor(const Expr& e) {
  const auto* t = e->struct_info.defined() ? e->struct_info.as<TensorStructInfoNode>() : nullptr;
  return t != nullptr && t->dtype == DataType::F32() && t->ndim >= 0 ? t : nullptr;
}

// A GEMM weight, as packed: the matrix and whether it is dense's (N x K).
struct Weight {
  const HostTensor* w = nullptr;
  bool transposed = false;
  bool operator<(const Weight& o) const { return std::tie(w, transposed) < std::tie(o.w, o.transposed); }
};

const CallNode* OpCall(const Expr& e, const char* name) {
  const auto* call = e.as<CallNode>();
  const auto* op = call ? call->op.as<OpNode>() : nullptr;
  return op != nullptr && op->name == name ? call : nullptr;
}

// The weight a matmul or dense binding value would have packed (f32 constant
// weight, x of known rank, at least 2 for matmul; an f32 bias), or nullopt.
std::optional<Weight> PackableWeight(const Expr& value, const analysis::BoundConstants& constants,
                                     const std::set<std::string>& except) {
  const auto* call = value.as<CallNode>();
  const auto* op = call ? call->op.as<OpNode>() : nullptr;
  const bool wanted = op != nullptr && !except.count(op->name);
  const bool matmul = wanted && op->name == "matmul" && call->args.size() == 2;
  const bool dense = wanted && op->name == "dense" && (call->args.size() == 2 || call->args.size() == 3);
  const HostTensor* w = (matmul || dense) ? ConstantMatrix(call->args[1], constants) : nullptr;
  const TensorStructInfoNode* x = w ? F32Tensor(call->args[0]) : nullptr;
  if (w == nullptr || x == nullptr || x->ndim < (matmul ? 2 : 1) ||
      (dense && call->args.size() == 3 && F32Tensor(call->args[2]) == nullptr)) {
    return std::nullopt;
  }
  return Weight{w, dense};
}

// Whether `table` (N x K) holds the columns of the weight's B (K x N): the
// same tensor or bytes as a dense weight, or the transpose of a matmul's.
bool TableIsColumnsOf(const HostTensor& table, const Weight& weight) {
  const HostTensor& w = *weight.w;
  if (weight.transposed) return &table == &w || (table.shape == w.shape && table.bytes == w.bytes);
  if (table.shape.size() != 2 || table.shape[0] != w.shape[1] || table.shape[1] != w.shape[0]) return false;
  const int64_t n_dim = w.shape[1], k_dim = w.shape[0];
  const auto* t = reinterpret_cast<const float*>(table.bytes.data());
  const auto* b = reinterpret_cast<const float*>(w.bytes.data());
  for (int64_t n = 0; n < n_dim; ++n) {
    for (int64_t k = 0; k < k_dim; ++k) {
      if (std::memcmp(&t[n * k_dim + k], &b[k * n_dim + n], sizeof(float)) != 0) return false;
    }
  }
  return true;
}

// Tied embeddings: tables of take(table, indices, axis=0) in the function's
// top-level bindings that are also, or transposed, a packed GEMM weight of it
// (GPT-2's token embedding and LM head). Such a take reads the packed panels
// instead, so the table is not stored twice.
std::map<const HostTensor*, Weight> TiedTables(const Function& func, const std::set<std::string>& except) {
  analysis::BoundConstants constants;
  std::vector<const HostTensor*> tables;
  std::vector<Weight> weights;
  const auto* body = func->body.as<SeqExprNode>();
  if (body == nullptr) return {};
  for (const BindingBlock& block : body->blocks) {
    for (const Binding& binding : block.bindings) {
      constants.Record(binding);
      if (const CallNode* take = OpCall(binding.value, "take")) {
        const auto axis = take->attrs.find("axis");
        const HostTensor* t = take->args.size() == 2 ? ConstantMatrix(take->args[0], constants) : nullptr;
        const int64_t* a = axis != take->attrs.end() ? std::get_if<int64_t>(&axis->second) : nullptr;
        if (t != nullptr && a != nullptr && (*a == 0 || *a == -2)) tables.push_back(t);
      }
      if (std::optional<Weight> weight = PackableWeight(binding.value, constants, except)) weights.push_back(*weight);
    }
  }
  std::map<const HostTensor*, Weight> tied;
  for (const HostTensor* t : tables) {
    for (const Weight& weight : weights) {
      if (!tied.count(t) && TableIsColumnsOf(*t, weight)) tied[t] = weight;
    }
  }
  return tied;
}

class WeightPacker : public Normalizer {
 public:
  WeightPacker(const ir::IRModule* module, const std::set<std::string>& except,
               std::map<const HostTensor*, Weight> tied)
      : Normalizer(module), except_(except), tied_(std::move(tied)) {}
  bool changed() const { return changed_; }

 protected:
  void RewriteBinding(const Binding& binding) override {
    constants_.Record(binding);
    if (const CallNode* take = OpCall(binding.value, "take")) {
      const HostTensor* t = take->args.size() == 2 ? ConstantMatrix(take->args[0], constants_) : nullptr;
      auto tied = t != nullptr ? tied_.find(t) : tied_.end();
      if (tied != tied_.end()) {
        Expr indices = MutateExpr(take->args[1]);
        if (failed()) return;
        changed_ = true;
        EmitBinding(binding,
                    Annotate(CallNode::make(OpNode::Get("take_panel_columns"),
                                            {Panels(tied->second), std::move(indices)}, {{"n", t->shape[0]}})));
        return;
      }
    }
    const std::optional<Weight> weight = PackableWeight(binding.value, constants_, except_);
    if (!weight) return Normalizer::RewriteBinding(binding);
    const auto* call = binding.value.as<CallNode>();
    const bool dense = weight->transposed;
    std::vector<Expr> args = {MutateExpr(call->args[0]), Panels(*weight)};
    if (dense && call->args.size() == 3) args.push_back(MutateExpr(call->args[2]));
    if (failed()) return;
    const int64_t n = dense ? weight->w->shape[0] : weight->w->shape[1];
    changed_ = true;
    EmitBinding(binding, Annotate(CallNode::make(OpNode::Get("packed_matmul"), std::move(args), {{"n", n}})));
  }

 private:
  // A weight shared by several calls (tied layers) is packed once.
  Expr Panels(const Weight& weight) {
    Expr& panels = packed_[weight];
    if (!panels.defined()) panels = PackPanels(*weight.w, weight.transposed);
    return panels;
  }

  const std::set<std::string>& except_;
  std::map<const HostTensor*, Weight> tied_;
  analysis::BoundConstants constants_;
  std::map<Weight, Expr> packed_;
  bool changed_ = false;
};

}  // namespace

StatusOr<ir::IRModule> PackWeights(ir::IRModule module, const std::set<std::string>& except) {
  STRATA_ASSIGN_OR_RETURN(
      const bool changed,
      RewriteChangedGraphFunctions(
          &module, [&](const std::string& name, const Function& func) -> StatusOr<std::optional<Function>> {
            WeightPacker packer(&module, except, TiedTables(func, except));
            STRATA_ASSIGN_OR_RETURN(Function rewritten, packer.NormalizeFunction(name, func));
            if (!packer.changed()) return std::optional<Function>();  // unchanged functions keep their handles
            return std::optional<Function>(std::move(rewritten));
          }));
  // The unpacked weights' bindings, when nothing else used them.
  if (changed) return DeadCodeElimination(std::move(module));
  return module;
}

STRATA_REGISTER_PASS(PackWeights, [](ir::IRModule m) { return PackWeights(std::move(m)); })

}  // namespace strata::transform
