// The "dnnl" BYOC backend: dense / matmul / conv2d chains offloaded to oneDNN.
//
// The codegen emits no code: every composite becomes a call of a oneDNN library
// function of the runtime (kernels/dnnl.h), with the convolution attributes as
// extra arguments. Weights and biases stay constants of the executable and are
// passed in place; oneDNN primitives are created per shape at run time (and
// cached), so symbolic batch sizes work.
#include <optional>
#include <string>
#include <vector>

#include "compiler/analysis/graph_util.h"
#include "compiler/analysis/struct_info_util.h"
#include "compiler/byoc/backend.h"
#include "compiler/byoc/builtin_backends.h"

namespace strata::byoc {

using namespace graph;    // NOLINT: patterns over graph expressions
using namespace pattern;  // NOLINT

namespace {

bool IsF32Tensor(const Expr& e, int rank = -1) {
  const auto* t = e->struct_info ? e->struct_info.as<TensorStructInfoNode>() : nullptr;
  return t != nullptr && t->dtype == DataType::F32() && t->shape && (rank < 0 || t->ndim == rank);
}

// The f32 operand checks shared by every pattern.
DFPattern F32(DFPattern p, int rank = -1) {
  return p.Where([rank](const Expr& e) { return IsF32Tensor(e, rank); },
                 rank < 0 ? "f32" : "f32 rank " + std::to_string(rank));
}

// The bias must have one value per output channel: b: (n,) with n the last dim
// of the dense result (or the channel dim of the conv result).
bool BiasFits(const PatternMatch& m, const DFPattern& product, const DFPattern& bias, int channel_axis) {
  Expr out = m.Get(product), b = m.Get(bias);
  if (!out || !b || !IsF32Tensor(b, 1) || !IsF32Tensor(out)) return false;
  const auto& out_shape = *out->struct_info.as<TensorStructInfoNode>()->shape;
  const auto& b_shape = *b->struct_info.as<TensorStructInfoNode>()->shape;
  size_t axis = channel_axis < 0 ? out_shape.size() - 1 : static_cast<size_t>(channel_axis);
  return axis < out_shape.size() && analysis::ProveDimEqual(out_shape[axis], b_shape[0]);
}

std::vector<FusionPattern> DensePatterns() {
  DFPattern x = F32(Wildcard()), w = F32(Wildcard(), 2), b = Wildcard();
  DFPattern dense = IsOp("dense", {x, w});
  DFPattern dense_with_bias = IsOp("dense", {x, w, b});
  DFPattern added = IsOp("add", {dense, b});
  DFPattern biased = added | dense_with_bias;
  auto bias_fits = [=](const PatternMatch& m, const BlockMatcher&) {
    return BiasFits(m, m.Get(added) ? dense : dense_with_bias, b, -1);
  };
  return {
      {"dnnl.dense_bias_relu", IsOp("relu", {biased}), {{dense, added}}, bias_fits},
      {"dnnl.dense_bias", biased, {{dense, added}}, bias_fits},
      {"dnnl.dense_relu", IsOp("relu", {dense}), {}, nullptr},
      {"dnnl.dense", dense, {}, nullptr},
  };
}

std::vector<FusionPattern> ConvPatterns() {
  DFPattern x = F32(Wildcard(), 4), w = F32(Wildcard(), 4), b = Wildcard();
  DFPattern conv = IsOp("conv2d", {x, w});
  DFPattern biased = IsOp("bias_add", {conv, b}).HasAttr("axis", int64_t{1});
  auto bias_fits = [=](const PatternMatch& m, const BlockMatcher&) { return BiasFits(m, conv, b, 1); };
  return {
      {"dnnl.conv2d_bias_relu", IsOp("relu", {biased}), {}, bias_fits},
      {"dnnl.conv2d_bias", biased, {}, bias_fits},
      {"dnnl.conv2d_relu", IsOp("relu", {conv}), {}, nullptr},
      {"dnnl.conv2d", conv, {}, nullptr},
  };
}

FusionPattern MatmulPattern() {
  DFPattern a = F32(Wildcard()), b = F32(Wildcard());
  DFPattern matmul = IsOp("matmul", {a, b});
  // Ranks >= 2 and a batched B with A's rank: what strata.dnnl.matmul takes.
  auto shapes_fit = [=](const PatternMatch& m, const BlockMatcher&) {
    int ra = m.Get(a)->struct_info.as<TensorStructInfoNode>()->ndim;
    int rb = m.Get(b)->struct_info.as<TensorStructInfoNode>()->ndim;
    return ra >= 2 && (rb == 2 || rb == ra);
  };
  return {"dnnl.matmul", matmul, {}, shapes_fit};
}

Expr ShapeOf(const std::vector<int64_t>& values) {
  std::vector<tir::PrimExpr> dims;
  for (int64_t v : values) dims.push_back(tir::IntImm(DataType::I64(), v));
  return ShapeExprNode::make(std::move(dims));
}

StatusOr<ExternalCall> ConvCall(const CompositeCall& composite, const std::string& symbol) {
  const CallNode* conv = FindOpCall(composite.function, "conv2d");
  if (conv == nullptr) return Status(ErrorStatus() << "composite '" << composite.function_name << "' has no conv2d");
  std::vector<int64_t> strides = IntsAttr(*conv, "strides", {1, 1});
  std::vector<int64_t> padding = IntsAttr(*conv, "padding", {0, 0, 0, 0});
  std::vector<int64_t> dilation = IntsAttr(*conv, "dilation", {1, 1});
  std::vector<int64_t> groups = IntsAttr(*conv, "groups", {1});
  if (padding.size() == 2) padding = {padding[0], padding[1], padding[0], padding[1]};
  if (strides.size() != 2 || padding.size() != 4 || dilation.size() != 2 || groups.size() != 1) {
    return Status(ErrorStatus() << "composite '" << composite.function_name
                                << "': conv2d attributes strides/padding/dilation/groups have unexpected lengths");
  }
  return ExternalCall{symbol, {ShapeOf(strides), ShapeOf(padding), ShapeOf(dilation), analysis::Int64Value(groups[0])}};
}

StatusOr<CodegenResult> DnnlCodegen(const OffloadedFunction& offloaded) {
  CodegenResult result;
  result.module.format = "library";
  for (const CompositeCall& composite : offloaded.composites) {
    const std::string kind = composite.pattern_name.substr(composite.pattern_name.find('.') + 1);
    const std::string symbol = "strata.dnnl." + kind;
    if (kind.rfind("conv2d", 0) == 0) {
      STRATA_ASSIGN_OR_RETURN(ExternalCall call, ConvCall(composite, symbol));
      result.composite_calls[composite.function_name] = std::move(call);
    } else if (kind.rfind("dense", 0) == 0 || kind == "matmul") {
      result.composite_calls[composite.function_name] = ExternalCall{symbol, {}};
    } else {
      return Status(ErrorStatus() << "no oneDNN function for pattern '" << composite.pattern_name << "'");
    }
  }
  return result;
}

}  // namespace

Backend DnnlBackend() {
  Backend backend;
  backend.name = "dnnl";
  backend.description = "oneDNN: dense, matmul and conv2d with fused bias and relu (runtime library functions)";
  for (FusionPattern& p : ConvPatterns()) backend.patterns.push_back(std::move(p));
  for (FusionPattern& p : DensePatterns()) backend.patterns.push_back(std::move(p));
  backend.patterns.push_back(MatmulPattern());
  backend.codegen = DnnlCodegen;
  return backend;
}

}  // namespace strata::byoc
