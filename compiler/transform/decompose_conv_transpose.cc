// DecomposeConvTranspose: conv2d_transpose -> conv2d + depth_to_space (see decompose_conv_transpose.h).
#include "compiler/transform/decompose_conv_transpose.h"

#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "compiler/analysis/graph_util.h"
#include "compiler/op/op_registry.h"
#include "compiler/transform/dead_code_elimination.h"
#include "compiler/transform/normalize.h"
#include "compiler/transform/pass.h"

namespace strata::transform {
namespace {

using namespace graph;  // NOLINT: a graph-level pass

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The attributes of a transposed convolution the decomposition handles.
struct Transposed {
  int64_t sh, sw;
  int64_t pt, pl, pb, pr;
  int64_t oph, opw;
};

std::optional<Transposed> ReadDecomposable(const CallNode& call) {
  const op::OpCall oc(*op::FindOp("conv2d_transpose"), call);
  const std::vector<int64_t> strides = oc.IntsAttr("strides"), dilation = oc.IntsAttr("dilation");
  const std::vector<int64_t> padding = oc.IntsAttr("padding"), output_padding = oc.IntsAttr("output_padding");
  if (oc.IntAttr("groups") != 1 || strides.size() != 2 || dilation != std::vector<int64_t>{1, 1} ||
      padding.size() != 4 || output_padding.size() != 2) {
    return std::nullopt;
  }
  return Transposed{strides[0], strides[1], padding[0],        padding[1],
                    padding[2], padding[3], output_padding[0], output_padding[1]};
}

// W2[(rh * sw + rw) * O + o, c, jh, jw] = w[c, o, rh + (Jh - 1 - jh) * sh, rw + (Jw - 1 - jw) * sw], 0 past the kernel.
Expr PhaseWeight(const HostTensor& w, const Transposed& t, int64_t jh_n, int64_t jw_n) {
  const int64_t c_n = w.shape[0], o_n = w.shape[1], kh_n = w.shape[2], kw_n = w.shape[3];
  const int64_t phases = t.sh * t.sw;
  auto out = std::make_shared<HostTensor>();
  out->dtype = DataType::F32();
  out->shape = {phases * o_n, c_n, jh_n, jw_n};
  out->bytes.assign(static_cast<size_t>(phases * o_n * c_n * jh_n * jw_n) * sizeof(float), 0);
  const auto* src = reinterpret_cast<const float*>(w.bytes.data());
  auto* dst = reinterpret_cast<float*>(out->bytes.data());
  for (int64_t rh = 0; rh < t.sh; ++rh) {
    for (int64_t rw = 0; rw < t.sw; ++rw) {
      for (int64_t o = 0; o < o_n; ++o) {
        const int64_t oc = (rh * t.sw + rw) * o_n + o;
        for (int64_t c = 0; c < c_n; ++c) {
          for (int64_t jh = 0; jh < jh_n; ++jh) {
            const int64_t kh = rh + (jh_n - 1 - jh) * t.sh;
            if (kh >= kh_n) continue;
            for (int64_t jw = 0; jw < jw_n; ++jw) {
              const int64_t kw = rw + (jw_n - 1 - jw) * t.sw;
              if (kw >= kw_n) continue;
              dst[((oc * c_n + c) * jh_n + jh) * jw_n + jw] = src[((c * o_n + o) * kh_n + kh) * kw_n + kw];
            }
          }
        }
      }
    }
  }
  return ConstantNode::make(std::move(out));
}

class ConvTransposeDecomposer : public Normalizer {
 public:
  explicit ConvTransposeDecomposer(const ir::IRModule* module) : Normalizer(module) {}
  bool changed() const { return changed_; }

 protected:
  void RewriteBinding(const Binding& binding) override {
    constants_.Record(binding);
    if (binding.kind == BindingKind::kVarBinding) {
      const auto* call = binding.value.as<CallNode>();
      const auto* op = call ? call->op.as<OpNode>() : nullptr;
      if (op != nullptr && op->name == "conv2d_transpose" && Decompose(binding, *call)) return;
    }
    Normalizer::RewriteBinding(binding);
  }

 private:
  bool Decompose(const Binding& binding, const CallNode& call) {
    if (call.args.size() != 2) return false;
    const HostTensor* w = constants_.Of(call.args[1]);
    const auto* xi =
        call.args[0]->struct_info.defined() ? call.args[0]->struct_info.as<TensorStructInfoNode>() : nullptr;
    if (w == nullptr || w->dtype != DataType::F32() || w->shape.size() != 4 || xi == nullptr ||
        xi->dtype != DataType::F32() || xi->ndim != 4) {
      return false;
    }
    std::optional<Transposed> t = ReadDecomposable(call);
    if (!t) return false;
    const int64_t kh = w->shape[2], kw = w->shape[3];
    const int64_t jh = CeilDiv(kh, t->sh), jw = CeilDiv(kw, t->sw);
    // Extra phase rows below (columns right) when output_padding reaches past
    // the padded correlation's last row; the crop is what the output does not keep.
    auto extra = [](int64_t k, int64_t op, int64_t pad_end, int64_t j, int64_t s) {
      const int64_t deficit = k + op - pad_end - j * s;
      return deficit > 0 ? CeilDiv(deficit, s) : 0;
    };
    const int64_t eh = extra(kh, t->oph, t->pb, jh, t->sh), ew = extra(kw, t->opw, t->pr, jw, t->sw);
    const int64_t crop_bottom = (jh + eh) * t->sh - kh - t->oph + t->pb;
    const int64_t crop_right = (jw + ew) * t->sw - kw - t->opw + t->pr;
    const ir::Attrs conv_attrs = {{"strides", std::vector<int64_t>{1, 1}},
                                  {"padding", std::vector<int64_t>{jh - 1, jw - 1, jh - 1 + eh, jw - 1 + ew}},
                                  {"dilation", std::vector<int64_t>{1, 1}},
                                  {"groups", int64_t{1}}};
    Var phases = Emit(
        binding.var->name + "_phases",
        CallNode::make(OpNode::Get("conv2d"), {MutateExpr(call.args[0]), PhaseWeight(*w, *t, jh, jw)}, conv_attrs));
    const ir::Attrs shuffle_attrs = {{"blocks", std::vector<int64_t>{t->sh, t->sw}},
                                     {"crop", std::vector<int64_t>{t->pt, t->pl, crop_bottom, crop_right}}};
    EmitBinding(binding, Annotate(CallNode::make(OpNode::Get("depth_to_space"), {phases}, shuffle_attrs)));
    changed_ = true;
    return true;
  }

  analysis::BoundConstants constants_;
  bool changed_ = false;
};

}  // namespace

StatusOr<ir::IRModule> DecomposeConvTranspose(ir::IRModule module, const std::set<std::string>& except) {
  if (except.count("conv2d_transpose")) return module;
  STRATA_ASSIGN_OR_RETURN(
      const bool changed,
      RewriteChangedGraphFunctions(
          &module, [&](const std::string& name, const Function& func) -> StatusOr<std::optional<Function>> {
            ConvTransposeDecomposer decomposer(&module);
            STRATA_ASSIGN_OR_RETURN(Function rewritten, decomposer.NormalizeFunction(name, func));
            if (!decomposer.changed()) return std::optional<Function>();
            return std::optional<Function>(std::move(rewritten));
          }));
  // The transposed weights nothing reads any more.
  if (changed) return DeadCodeElimination(std::move(module));
  return module;
}

STRATA_REGISTER_PASS(DecomposeConvTranspose, [](ir::IRModule m) { return DecomposeConvTranspose(std::move(m)); })

}  // namespace strata::transform
