// ONNX neural-network operators: MatMul and Gemm, convolution, pooling,
// normalization and softmax.
#include <array>
#include <cctype>
#include <cmath>
#include <cstring>
#include <map>

#include "compiler/frontend/onnx/onnx_converter_util.h"
#include "compiler/ir/arith/simplify.h"

namespace strata::frontend::onnx_import {
namespace {

using graph::StructInfo;
using graph::TensorStructInfoNode;

// ---- linear algebra ----------------------------------------------------------

Status Gemm(NodeContext& n) {
  const double alpha = n.FloatAttr("alpha", 1.0f), beta = n.FloatAttr("beta", 1.0f);
  const bool trans_a = n.IntAttr("transA", 0) != 0, trans_b = n.IntAttr("transB", 0) != 0;
  STRATA_ASSIGN_OR_RETURN(Expr a, n.InputExpr(0));
  STRATA_ASSIGN_OR_RETURN(Expr b, n.InputExpr(1));
  const std::string name = n.node().output(0);
  if (trans_a) {
    STRATA_ASSIGN_OR_RETURN(a, n.ctx().Call("transpose", {a}, {}, name + "_at"));
  }
  Expr product;
  if (trans_b) {
    STRATA_ASSIGN_OR_RETURN(product, n.ctx().Call("dense", {a, b}, {}, name + "_ab"));
  } else {
    STRATA_ASSIGN_OR_RETURN(product, n.ctx().Call("matmul", {a, b}, {}, name + "_ab"));
  }
  if (alpha != 1.0) {
    STRATA_ASSIGN_OR_RETURN(Expr s, ScalarLike(n, 0, alpha));
    STRATA_ASSIGN_OR_RETURN(product, n.ctx().Call("multiply", {product, s}, {}, name + "_scaled"));
  }
  if (n.input(2) == nullptr || beta == 0.0) {
    n.outputs = {FromExpr(product)};
    return Status::Ok();
  }
  STRATA_ASSIGN_OR_RETURN(Expr c, n.InputExpr(2));
  if (beta != 1.0) {
    STRATA_ASSIGN_OR_RETURN(Expr s, ScalarLike(n, 2, beta));
    STRATA_ASSIGN_OR_RETURN(c, n.ctx().Call("multiply", {c, s}, {}, name + "_c"));
  }
  return Emit(n, "add", {product, c});
}

Status MatMul(NodeContext& n) {
  STRATA_ASSIGN_OR_RETURN(Expr a, n.InputExpr(0));
  STRATA_ASSIGN_OR_RETURN(Expr b, n.InputExpr(1));
  return Emit(n, "matmul", {a, b});
}

// Einsum of two operands without ellipsis or repeated letters (the forms
// attention and linear layers export): letters in both inputs and the output
// are batch dims, in both inputs only contracted, in one input and the output
// free. Lowered to transpose -> reshape to (B, M, K) x (B, K, N) -> matmul ->
// reshape -> transpose, so dims may be symbolic.
Status Einsum(NodeContext& n) {
  const std::string equation = n.StringAttr("equation", "");
  std::string spec;
  for (char c : equation) {
    if (c != ' ') spec += c;
  }
  const size_t arrow = spec.find("->"), comma = spec.find(',');
  auto refuse = [&](const std::string& why) {
    return n.Unsupported("equation '" + equation + "': " + why +
                         " (supported: two operands, an explicit output, no '...' and no repeated letters)");
  };
  if (arrow == std::string::npos) return refuse("the output is implicit");
  if (comma == std::string::npos || comma > arrow || spec.find(',', comma + 1) != std::string::npos) {
    return refuse("it does not have two operands");
  }
  if (spec.find('.') != std::string::npos) return refuse("it uses an ellipsis");
  const std::string a = spec.substr(0, comma), b = spec.substr(comma + 1, arrow - comma - 1),
                    out = spec.substr(arrow + 2);
  for (const std::string& term : {a, b, out}) {
    for (size_t i = 0; i < term.size(); ++i) {
      if (!std::isalpha(static_cast<unsigned char>(term[i])))
        return refuse("it has the character '" + std::string(1, term[i]) + "'");
      if (term.find(term[i], i + 1) != std::string::npos) return refuse("a letter repeats within one term");
    }
  }
  for (char c : out) {
    if (a.find(c) == std::string::npos && b.find(c) == std::string::npos)
      return refuse("an output letter is in no input");
  }
  STRATA_ASSIGN_OR_RETURN(Expr x, n.InputExpr(0));
  STRATA_ASSIGN_OR_RETURN(Expr y, n.InputExpr(1));
  auto shape_of = [&](size_t i) -> std::optional<std::vector<PrimExpr>> {
    const StructInfo sinfo = n.input(i)->sinfo();
    const auto* t = sinfo.as<TensorStructInfoNode>();
    return t && t->shape ? t->shape : std::nullopt;
  };
  const auto sa = shape_of(0), sb = shape_of(1);
  if (!sa || !sb) return n.Error("the shapes of both operands must be known");
  if (sa->size() != a.size() || sb->size() != b.size()) {
    return n.Error("equation '" + equation + "' does not match the operand ranks " + std::to_string(sa->size()) +
                   " and " + std::to_string(sb->size()));
  }
  std::map<char, PrimExpr> extent;
  for (size_t i = 0; i < a.size(); ++i) extent[a[i]] = (*sa)[i];
  for (size_t i = 0; i < b.size(); ++i) {
    if (!extent.count(b[i])) extent[b[i]] = (*sb)[i];
  }
  std::string batch, contracted, free_a, free_b;
  for (char c : a) {
    const bool in_b = b.find(c) != std::string::npos, in_out = out.find(c) != std::string::npos;
    if (in_b && in_out)
      batch += c;
    else if (in_b)
      contracted += c;
    else if (in_out)
      free_a += c;
    else
      return refuse("letter '" + std::string(1, c) + "' is summed within one operand");
  }
  for (char c : b) {
    const bool in_a = a.find(c) != std::string::npos, in_out = out.find(c) != std::string::npos;
    if (!in_a && in_out)
      free_b += c;
    else if (!in_a)
      return refuse("letter '" + std::string(1, c) + "' is summed within one operand");
  }
  const std::string name = n.node().output(0);
  auto permute = [&](Expr e, const std::string& from, const std::string& to,
                     const std::string& suffix) -> StatusOr<Expr> {
    std::vector<int64_t> axes;
    for (char c : to) axes.push_back(static_cast<int64_t>(from.find(c)));
    bool identity = true;
    for (size_t i = 0; i < axes.size(); ++i) identity = identity && axes[i] == static_cast<int64_t>(i);
    if (identity) return e;
    return n.ctx().Call("transpose", {e}, {{"axes", axes}}, name + suffix);
  };
  auto product = [&](const std::string& letters) {
    PrimExpr p = 1;
    for (char c : letters) p = p * extent[c];
    return arith::Simplify(p);
  };
  const PrimExpr nb = product(batch), m = product(free_a), k = product(contracted), nn = product(free_b);
  STRATA_ASSIGN_OR_RETURN(Expr lhs, permute(x, a, batch + free_a + contracted, "_lhs_t"));
  STRATA_ASSIGN_OR_RETURN(lhs, n.ctx().Call("reshape", {lhs, ShapeArg({nb, m, k})}, {}, name + "_lhs"));
  STRATA_ASSIGN_OR_RETURN(Expr rhs, permute(y, b, batch + contracted + free_b, "_rhs_t"));
  STRATA_ASSIGN_OR_RETURN(rhs, n.ctx().Call("reshape", {rhs, ShapeArg({nb, k, nn})}, {}, name + "_rhs"));
  STRATA_ASSIGN_OR_RETURN(Expr prod, n.ctx().Call("matmul", {lhs, rhs}, {}, name + "_matmul"));
  const std::string natural = batch + free_a + free_b;
  std::vector<PrimExpr> natural_shape;
  for (char c : natural) natural_shape.push_back(extent[c]);
  const bool last_is_reshape = natural == out;
  STRATA_ASSIGN_OR_RETURN(Expr shaped, n.ctx().Call("reshape", {prod, ShapeArg(natural_shape)}, {},
                                                    last_is_reshape ? name : name + "_natural"));
  STRATA_ASSIGN_OR_RETURN(Expr result, permute(shaped, natural, out, ""));
  n.outputs = {FromExpr(result)};
  return Status::Ok();
}

// ---- neural network ----------------------------------------------------------

Status CheckNoAutoPad(NodeContext& n) {
  const std::string pad = n.StringAttr("auto_pad", "NOTSET");
  if (pad != "NOTSET" && pad != "VALID") {
    return n.Error("auto_pad=" + pad + " is not supported; export with explicit pads");
  }
  return Status::Ok();
}

// ONNX pads (begin..., end...) for 2 spatial dims -> Strata (top, left, bottom, right).
ir::Attrs WindowAttrs(NodeContext& n) {
  ir::Attrs attrs;
  std::vector<int64_t> pads = n.IntsAttr("pads");
  if (pads.empty()) pads = {0, 0, 0, 0};
  attrs["padding"] = pads;
  std::vector<int64_t> strides = n.IntsAttr("strides");
  if (!strides.empty()) attrs["strides"] = strides;
  std::vector<int64_t> dilations = n.IntsAttr("dilations");
  if (!dilations.empty()) attrs["dilation"] = dilations;
  return attrs;
}

// The rank of a convolution's input: 3 (N, C, L: 1-D) or 4 (N, C, H, W: 2-D).
StatusOr<int> ConvolutionRank(NodeContext& n, const std::string& what) {
  // sinfo() may build the struct info (for a constant input): keep it alive.
  const StructInfo in_sinfo = n.input(0)->sinfo();
  const auto* in = in_sinfo.as<TensorStructInfoNode>();
  const int ndim = in ? in->ndim : -1;
  if (ndim != 3 && ndim != 4) {
    return n.Error("only 1-D and 2-D " + what + " are supported, got rank " + std::to_string(ndim));
  }
  return ndim;
}

// A 1-D convolution's input and weight gain a unit height (axis 2).
Status LiftTo2d(NodeContext& n, const std::string& name, Expr* x, Expr* w) {
  const ir::Attrs unit_height = {{"axis", std::vector<int64_t>{2}}};
  STRATA_ASSIGN_OR_RETURN(*x, n.ctx().Call("expand_dims", {*x}, unit_height, name + "_x2d"));
  STRATA_ASSIGN_OR_RETURN(*w, n.ctx().Call("expand_dims", {*w}, unit_height, name + "_w2d"));
  return Status::Ok();
}

// The convolution's result `y`: a 1-D one loses the unit height again, then
// the bias (input 2), if any, is added along the channels. The last binding
// gets the node's output name.
Status FinishConvolution(NodeContext& n, Expr y, bool one_d, const std::string& name) {
  const bool biased = n.input(2) != nullptr;
  if (one_d) {
    STRATA_ASSIGN_OR_RETURN(
        y, n.ctx().Call("squeeze", {y}, {{"axis", std::vector<int64_t>{2}}}, biased ? name + "_1d" : name));
  }
  if (!biased) {
    n.outputs = {FromExpr(y)};
    return Status::Ok();
  }
  STRATA_ASSIGN_OR_RETURN(Expr b, n.InputExpr(2));
  return Emit(n, "bias_add", {y, b}, {{"axis", int64_t{1}}});
}

// Conv 1-D (N, C, L) runs as a 2-D convolution over (N, C, 1, L): the input
// and the weight gain a unit height, the window attributes a neutral first
// entry, and the result loses the height again. The conv2d kernel, its
// schedules and the BYOC conv patterns then serve 1-D models too.
Status Conv(NodeContext& n) {
  STRATA_RETURN_IF_ERROR(CheckNoAutoPad(n));
  STRATA_ASSIGN_OR_RETURN(Expr x, n.InputExpr(0));
  STRATA_ASSIGN_OR_RETURN(Expr w, n.InputExpr(1));
  STRATA_ASSIGN_OR_RETURN(const int ndim, ConvolutionRank(n, "convolutions (NCL or NCHW input)"));
  ir::Attrs attrs = WindowAttrs(n);
  attrs["groups"] = n.IntAttr("group", 1);
  const std::string name = n.node().output(0);
  const bool one_d = ndim == 3;
  if (one_d) {
    std::vector<int64_t> pads = n.IntsAttr("pads");
    if (pads.empty()) pads = {0, 0};
    if (pads.size() != 2) return n.Error("pads must have 2 values for a 1-D convolution");
    attrs["padding"] = std::vector<int64_t>{0, pads[0], 0, pads[1]};
    for (const char* key : {"strides", "dilation"}) {
      if (!attrs.count(key)) continue;
      const auto& values = std::get<std::vector<int64_t>>(attrs[key]);
      if (values.size() != 1) return n.Error(std::string(key) + " must have 1 value for a 1-D convolution");
      attrs[key] = std::vector<int64_t>{1, values[0]};
    }
    STRATA_RETURN_IF_ERROR(LiftTo2d(n, name, &x, &w));
  }
  const bool last = !one_d && n.input(2) == nullptr;
  STRATA_ASSIGN_OR_RETURN(Expr y, n.ctx().Call("conv2d", {x, w}, attrs, last ? name : name + "_conv"));
  return FinishConvolution(n, std::move(y), one_d, name);
}

// ConvTranspose, 2-D, and 1-D through a unit height as for Conv.
Status ConvTranspose(NodeContext& n) {
  STRATA_RETURN_IF_ERROR(CheckNoAutoPad(n));
  if (n.HasAttr("output_shape")) {
    return n.Unsupported("output_shape is not supported; export with pads and output_padding instead");
  }
  STRATA_ASSIGN_OR_RETURN(Expr x, n.InputExpr(0));
  STRATA_ASSIGN_OR_RETURN(Expr w, n.InputExpr(1));
  STRATA_ASSIGN_OR_RETURN(const int ndim, ConvolutionRank(n, "transposed convolutions"));
  const size_t spatial = static_cast<size_t>(ndim - 2);
  auto per_dim = [&](const std::string& name, int64_t fallback) -> StatusOr<std::vector<int64_t>> {
    std::vector<int64_t> v = n.IntsAttr(name);
    if (v.empty()) v.assign(spatial, fallback);
    if (v.size() != spatial) {
      return n.Error(name + " must have " + std::to_string(spatial) + " values, got " + std::to_string(v.size()));
    }
    if (spatial == 1) v.insert(v.begin(), fallback);
    return v;
  };
  STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> strides, per_dim("strides", 1));
  STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> dilation, per_dim("dilations", 1));
  STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> output_padding, per_dim("output_padding", 0));
  std::vector<int64_t> pads = n.IntsAttr("pads");
  if (pads.empty()) pads.assign(2 * spatial, 0);
  if (pads.size() != 2 * spatial) return n.Error("pads must have " + std::to_string(2 * spatial) + " values");
  if (spatial == 1) pads = {0, pads[0], 0, pads[1]};
  const ir::Attrs attrs = {{"strides", strides},
                           {"dilation", dilation},
                           {"output_padding", output_padding},
                           {"padding", pads},
                           {"groups", n.IntAttr("group", 1)}};
  const std::string name = n.node().output(0);
  if (spatial == 1) STRATA_RETURN_IF_ERROR(LiftTo2d(n, name, &x, &w));
  const bool last = spatial == 2 && n.input(2) == nullptr;
  STRATA_ASSIGN_OR_RETURN(Expr y, n.ctx().Call("conv2d_transpose", {x, w}, attrs, last ? name : name + "_deconv"));
  return FinishConvolution(n, std::move(y), spatial == 1, name);
}

// floor(dim * scale) as an exact expression when the scale is a ratio p / q
// with a small denominator (2, 0.5, 1.5, ...): (dim * p) // q.
std::optional<PrimExpr> ScaledDim(const PrimExpr& dim, double scale) {
  for (int64_t q = 1; q <= 64; ++q) {
    const double p = scale * static_cast<double>(q);
    // Above 2^31 the numerator would overflow the dim's arithmetic (and llround).
    if (p > 0 && p < 0x1p31 && std::abs(p - std::round(p)) < 1e-6 * q) {
      return arith::Simplify(tir::FloorDiv(dim * static_cast<int64_t>(std::llround(p)), q));
    }
  }
  return std::nullopt;
}

// Resize of the two spatial dims of an NCHW tensor, by scales (constants) or
// sizes (which may be computed from shapes).
Status Resize(NodeContext& n) {
  const std::string mode = n.StringAttr("mode", "nearest");
  if (mode != "nearest" && mode != "linear") return n.Unsupported("mode '" + mode + "' is not supported");
  const std::string coords = n.StringAttr("coordinate_transformation_mode", "half_pixel");
  if (coords != "half_pixel" && coords != "pytorch_half_pixel" && coords != "align_corners" && coords != "asymmetric") {
    return n.Unsupported("coordinate_transformation_mode '" + coords + "' is not supported");
  }
  const std::string nearest = n.StringAttr("nearest_mode", "round_prefer_floor");
  if (n.IntAttr("antialias", 0) != 0) return n.Unsupported("antialias=1 is not supported");
  if (n.IntAttr("exclude_outside", 0) != 0) return n.Unsupported("exclude_outside=1 is not supported");
  if (n.StringAttr("keep_aspect_ratio_policy", "stretch") != "stretch") {
    return n.Unsupported("keep_aspect_ratio_policy other than 'stretch' is not supported");
  }
  if (n.HasAttr("axes")) {
    std::vector<int64_t> axes = n.IntsAttr("axes");
    if (axes != std::vector<int64_t>{2, 3} && axes != std::vector<int64_t>{-2, -1}) {
      return n.Unsupported("axes other than the two spatial dims [2, 3] are not supported");
    }
  }
  STRATA_ASSIGN_OR_RETURN(const OnnxValue* in, n.Required(0));
  const StructInfo sinfo = in->sinfo();
  const auto* t = sinfo.as<TensorStructInfoNode>();
  if (t == nullptr || !t->shape || t->shape->size() != 4) return n.Error("only 4-D (N, C, H, W) inputs are supported");
  const std::vector<PrimExpr>& shape = *t->shape;
  std::array<PrimExpr, 2> size;
  double scale_h = 0, scale_w = 0;
  const OnnxValue* scales = n.input(2);
  const bool has_scales = scales != nullptr && scales->constant && !scales->constant->bytes.empty();
  if (n.input(3) != nullptr) {
    STRATA_ASSIGN_OR_RETURN(std::vector<PrimExpr> sizes, SymbolicIntsInput(n, 3, "sizes"));
    if (sizes.size() != 2 && sizes.size() != 4) return n.Error("sizes (input 3) must have 2 or 4 values");
    if (sizes.size() == 4 && (!arith::ProveEqual(sizes[0], shape[0]) || !arith::ProveEqual(sizes[1], shape[1]))) {
      return n.Unsupported("resizing the batch or channel dims is not supported");
    }
    size = {sizes[sizes.size() - 2], sizes.back()};
  } else if (has_scales) {
    const graph::HostTensor& v = *scales->constant;
    if (v.dtype != DataType::F32() || (v.bytes.size() != 16 && v.bytes.size() != 8)) {
      return n.Error("scales (input 2) must be 2 or 4 f32 values");
    }
    std::vector<float> values(v.bytes.size() / 4);
    std::memcpy(values.data(), v.bytes.data(), v.bytes.size());
    if (values.size() == 4 && (values[0] != 1.0f || values[1] != 1.0f)) {
      return n.Unsupported("scaling the batch or channel dims is not supported");
    }
    scale_h = values[values.size() - 2];
    scale_w = values.back();
    std::optional<PrimExpr> h = ScaledDim(shape[2], scale_h), w = ScaledDim(shape[3], scale_w);
    if (!h || !w) return n.Unsupported("scales that are not a ratio of small integers are not supported");
    size = {*h, *w};
  } else {
    return n.Error("needs scales (input 2) as a constant or sizes (input 3)");
  }
  STRATA_ASSIGN_OR_RETURN(Expr x, n.InputExpr(0));
  return Emit(n, "resize2d", {x, ShapeArg({size[0], size[1]})},
              {{"method", mode},
               {"coordinate_transformation_mode", coords},
               {"nearest_mode", nearest},
               {"scale_h", scale_h},
               {"scale_w", scale_w}});
}

Converter Pool(const std::string& op) {
  return [op](NodeContext& n) -> Status {
    STRATA_RETURN_IF_ERROR(CheckNoAutoPad(n));
    if (n.node().output_size() > 1 && !n.node().output(1).empty())
      return n.Unsupported("the Indices output is not supported");
    STRATA_ASSIGN_OR_RETURN(Expr x, n.InputExpr(0));
    ir::Attrs attrs = WindowAttrs(n);
    attrs["pool_size"] = n.IntsAttr("kernel_shape");
    if (!attrs.count("strides")) attrs["strides"] = std::vector<int64_t>{1, 1};  // ONNX default, not PyTorch's
    attrs["ceil_mode"] = n.IntAttr("ceil_mode", 0) != 0;
    if (op == "avg_pool2d") {
      attrs.erase("dilation");
      attrs["count_include_pad"] = n.IntAttr("count_include_pad", 0) != 0;
    }
    return Emit(n, op, {x}, attrs);
  };
}

Status BatchNorm(NodeContext& n) {
  if (n.IntAttr("training_mode", 0) != 0) return n.Unsupported("training_mode=1 is not supported (inference only)");
  std::vector<Expr> args;
  for (size_t i = 0; i < 5; ++i) {
    STRATA_ASSIGN_OR_RETURN(Expr e, n.InputExpr(i));
    args.push_back(e);
  }
  return Emit(n, "batch_norm", args, {{"epsilon", static_cast<double>(n.FloatAttr("epsilon", 1e-5f))}});
}

Status LayerNorm(NodeContext& n) {
  if (n.node().output_size() > 1) {
    for (int i = 1; i < n.node().output_size(); ++i) {
      if (!n.node().output(i).empty()) return n.Unsupported("the Mean and InvStdDev outputs are not supported");
    }
  }
  STRATA_ASSIGN_OR_RETURN(Expr x, n.InputExpr(0));
  STRATA_ASSIGN_OR_RETURN(Expr gamma, n.InputExpr(1));
  Expr beta;
  if (n.input(2)) {
    STRATA_ASSIGN_OR_RETURN(beta, n.InputExpr(2));
  } else {
    return n.Unsupported("LayerNormalization without a bias input is not supported");
  }
  return Emit(n, "layer_norm", {x, gamma, beta},
              {{"axis", n.IntAttr("axis", -1)}, {"epsilon", static_cast<double>(n.FloatAttr("epsilon", 1e-5f))}});
}

// InstanceNormalization and GroupNormalization as reductions over groups:
// x (N, C, *spatial) -> (N, G, C/G * prod(spatial)), normalized by the mean and
// (biased) variance of each group, reshaped back, then scaled and shifted per
// channel. Spatial dims may be symbolic. GroupNormalization before opset 21
// (scale and bias per group, deprecated by ONNX) is refused by name.
Converter GroupNorm(bool instance) {
  return [instance](NodeContext& n) -> Status {
    if (!instance && n.opset() < 21) {
      return n.Unsupported(
          "GroupNormalization before opset 21 (scale and bias per group, deprecated by ONNX) is "
          "not supported; export at opset 21");
    }
    if (!instance && n.IntAttr("stash_type", 1) != 1) {
      return n.Unsupported("stash_type=" + std::to_string(n.IntAttr("stash_type", 1)) + " is not supported (only 1)");
    }
    STRATA_ASSIGN_OR_RETURN(const OnnxValue* in, n.Required(0));
    const StructInfo sinfo = in->sinfo();
    const auto* t = sinfo.as<TensorStructInfoNode>();
    if (t == nullptr || !t->shape || t->shape->size() < 3) {
      return n.Error("the input must have a known shape (N, C, spatial...) of rank >= 3");
    }
    if (!t->dtype.is_void() && !t->dtype.is_float()) {
      return n.Error("the input must be a float tensor, not " + t->dtype.ToString());
    }
    const std::vector<PrimExpr>& shape = *t->shape;
    const std::optional<int64_t> channels = arith::AsConstant(shape[1]);
    if (!channels) return n.Error("the channel dimension must be known at compile time");
    const int64_t groups = instance ? *channels : n.IntAttr("num_groups", 0);
    if (groups <= 0 || *channels % groups != 0) {
      return n.Error("num_groups " + std::to_string(groups) + " must divide the " + std::to_string(*channels) +
                     " channels");
    }
    PrimExpr rest = *channels / groups;
    for (size_t d = 2; d < shape.size(); ++d) rest = rest * shape[d];
    rest = arith::Simplify(rest);
    const std::string name = n.node().output(0);
    STRATA_ASSIGN_OR_RETURN(Expr x, n.InputExpr(0));
    STRATA_ASSIGN_OR_RETURN(Expr scale, n.InputExpr(1));
    STRATA_ASSIGN_OR_RETURN(Expr bias, n.InputExpr(2));
    STRATA_ASSIGN_OR_RETURN(Expr eps, ScalarLike(n, 0, n.FloatAttr("epsilon", 1e-5f)));
    auto call = [&](const std::string& op, std::vector<Expr> args, ir::Attrs attrs, const std::string& suffix) {
      return n.ctx().Call(op, std::move(args), std::move(attrs), name + suffix);
    };
    const ir::Attrs over_group = {{"axes", std::vector<int64_t>{2}}, {"keepdims", true}};
    STRATA_ASSIGN_OR_RETURN(Expr grouped, call("reshape", {x, ShapeArg({shape[0], groups, rest})}, {}, "_grouped"));
    STRATA_ASSIGN_OR_RETURN(Expr mean, call("mean", {grouped}, over_group, "_mean"));
    STRATA_ASSIGN_OR_RETURN(Expr centered, call("subtract", {grouped, mean}, {}, "_centered"));
    STRATA_ASSIGN_OR_RETURN(Expr squared, call("multiply", {centered, centered}, {}, "_squared"));
    STRATA_ASSIGN_OR_RETURN(Expr var, call("mean", {squared}, over_group, "_var"));
    STRATA_ASSIGN_OR_RETURN(Expr var_eps, call("add", {var, eps}, {}, "_var_eps"));
    STRATA_ASSIGN_OR_RETURN(Expr inv_std, call("rsqrt", {var_eps}, {}, "_inv_std"));
    STRATA_ASSIGN_OR_RETURN(Expr normed, call("multiply", {centered, inv_std}, {}, "_normed"));
    // Per-channel affine parameters broadcast as (C, 1, ...).
    std::vector<PrimExpr> affine_shape = {PrimExpr(*channels)};
    for (size_t d = 2; d < shape.size(); ++d) affine_shape.push_back(1);
    STRATA_ASSIGN_OR_RETURN(Expr scale_b, call("reshape", {scale, ShapeArg(affine_shape)}, {}, "_scale"));
    STRATA_ASSIGN_OR_RETURN(Expr bias_b, call("reshape", {bias, ShapeArg(affine_shape)}, {}, "_bias"));
    STRATA_ASSIGN_OR_RETURN(Expr back, call("reshape", {normed, ShapeArg(shape)}, {}, "_normalized"));
    STRATA_ASSIGN_OR_RETURN(Expr scaled, call("multiply", {back, scale_b}, {}, "_scaled"));
    return Emit(n, "add", {scaled, bias_b});
  };
}

Converter SoftmaxLike(const std::string& op) {
  return [op](NodeContext& n) -> Status {
    STRATA_ASSIGN_OR_RETURN(Expr x, n.InputExpr(0));
    return Emit(n, op, {x}, {{"axis", n.IntAttr("axis", -1)}});
  };
}

}  // namespace

void AddNeuralNetworkConverters(ConverterTable& table) {
  table.insert({
      {"MatMul", {MatMul, {}}},
      {"Einsum", {Einsum, {"equation"}}},
      {"Gemm", {Gemm, {"alpha", "beta", "transA", "transB"}}},
      {"Resize",
       {Resize,
        {"antialias", "axes", "coordinate_transformation_mode", "cubic_coeff_a", "exclude_outside",
         "extrapolation_value", "keep_aspect_ratio_policy", "mode", "nearest_mode"}}},
      {"ConvTranspose",
       {ConvTranspose,
        {"auto_pad", "dilations", "group", "kernel_shape", "output_padding", "output_shape", "pads", "strides"}}},
      {"Conv", {Conv, {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"}}},
      {"MaxPool",
       {Pool("max_pool2d"),
        {"auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads", "storage_order", "strides"}}},
      {"AveragePool",
       {Pool("avg_pool2d"), {"auto_pad", "ceil_mode", "count_include_pad", "kernel_shape", "pads", "strides"}}},
      {"GlobalAveragePool", {Unary("global_avg_pool2d"), {}}},
      {"BatchNormalization", {BatchNorm, {"epsilon", "momentum", "training_mode"}}},
      {"LayerNormalization", {LayerNorm, {"axis", "epsilon", "stash_type"}}},
      {"InstanceNormalization", {GroupNorm(true), {"epsilon"}}},
      {"GroupNormalization", {GroupNorm(false), {"epsilon", "num_groups", "stash_type"}}},
      {"Softmax", {SoftmaxLike("softmax"), {"axis"}}},
      {"LogSoftmax", {SoftmaxLike("log_softmax"), {"axis"}}},
  });
}

}  // namespace strata::frontend::onnx_import
