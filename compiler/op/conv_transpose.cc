// conv2d_transpose: the gradient of conv2d with respect to its input, used as
// a learned upsampling (decoders, U-Nets, FPNs).
//
// Weight layout (C_in, C_out / groups, KH, KW), as ONNX ConvTranspose and
// PyTorch. Output extent per spatial dim:
//   (in - 1) * stride - pad_begin - pad_end + dilation * (k - 1) + output_padding + 1
// an expression of the input's (possibly symbolic) dims.
//
// The kernel gathers: each output element sums the input positions whose
// scattered window covers it, i.e. those with (o + pad - k * dilation) a
// multiple of the stride. Loads are clamped into range and masked, so the loop
// nest has no branches and one program serves every shape.
#include <array>

#include "compiler/analysis/struct_info_util.h"
#include "compiler/ir/arith/simplify.h"
#include "compiler/ir/printer.h"
#include "compiler/op/builtin_ops.h"
#include "compiler/op/kernel_builder.h"
#include "compiler/op/op_util.h"
#include "compiler/op/tir_build.h"

namespace strata::op {
namespace {

using analysis::DimText;
using tir::PrimExprKind;

using build::Bin;

struct TransposeAttrs {
  std::array<int64_t, 2> strides, dilation, output_padding;
  std::array<int64_t, 4> padding;  // top, left, bottom, right
  int64_t groups;
};

StatusOr<std::array<int64_t, 2>> Pair(const OpCall& call, const std::string& name, int64_t minimum) {
  const std::vector<int64_t> v = call.IntsAttr(name);
  if (v.size() != 2) {
    return ErrorStatus() << call.name() << ": attribute '" << name << "' must have 2 values, got " << v.size();
  }
  for (int64_t x : v) {
    if (x < minimum) {
      return ErrorStatus() << call.name() << ": attribute '" << name << "' values must be >= " << minimum << ", got "
                           << ir::PrintInts(v);
    }
  }
  return std::array<int64_t, 2>{v[0], v[1]};
}

StatusOr<TransposeAttrs> ReadAttrs(const OpCall& call) {
  TransposeAttrs a;
  STRATA_ASSIGN_OR_RETURN(a.strides, Pair(call, "strides", 1));
  STRATA_ASSIGN_OR_RETURN(a.dilation, Pair(call, "dilation", 1));
  STRATA_ASSIGN_OR_RETURN(a.output_padding, Pair(call, "output_padding", 0));
  const std::vector<int64_t> pad = call.IntsAttr("padding");
  if (pad.size() != 4) {
    return ErrorStatus() << call.name() << ": attribute 'padding' must have 4 values (top, left, bottom, right), got "
                         << pad.size();
  }
  for (size_t i = 0; i < 4; ++i) {
    if (pad[i] < 0) return ErrorStatus() << call.name() << ": padding must be non-negative, got " << ir::PrintInts(pad);
    a.padding[i] = pad[i];
  }
  for (int d = 0; d < 2; ++d) {
    if (a.output_padding[d] >= std::max(a.strides[d], a.dilation[d])) {
      return ErrorStatus() << call.name() << ": output_padding " << ir::PrintInts(call.IntsAttr("output_padding"))
                           << " must be smaller than the stride or the dilation";
    }
  }
  a.groups = call.IntAttr("groups");
  if (a.groups < 1) return ErrorStatus() << call.name() << ": attribute 'groups' must be positive, got " << a.groups;
  return a;
}

StatusOr<StructInfo> InferConvTranspose(const OpCall& call) {
  STRATA_ASSIGN_OR_RETURN(const TensorStructInfoNode* x, TensorArg(call, 0));
  STRATA_ASSIGN_OR_RETURN(const TensorStructInfoNode* w, TensorArg(call, 1));
  STRATA_ASSIGN_OR_RETURN(DataType dtype, SameDtype(call, 0, 1, x->dtype, w->dtype));
  if (!dtype.is_void() && !dtype.is_float()) {
    return ErrorStatus() << call.name() << ": " << ArgText(call, 0) << " must be a float tensor";
  }
  STRATA_ASSIGN_OR_RETURN(TransposeAttrs a, ReadAttrs(call));
  for (size_t i : {size_t{0}, size_t{1}}) {
    const TensorStructInfoNode* t = i == 0 ? x : w;
    if (t->ndim >= 0 && t->ndim != 4) {
      return ErrorStatus() << call.name() << ": " << ArgText(call, i) << " must have rank 4 "
                           << (i == 0 ? "(N, C, H, W)" : "(C_in, C_out / groups, KH, KW)");
    }
  }
  if (!x->shape || !w->shape) return TensorStructInfoNode::make_ndim(4, dtype);
  const std::vector<PrimExpr>& xs = *x->shape;
  const std::vector<PrimExpr>& ws = *w->shape;
  if (std::optional<int64_t> diff = arith::AsConstant(xs[1] - ws[0]); diff && *diff != 0) {
    return ErrorStatus() << call.name() << ": " << ArgText(call, 0) << " has " << DimText(xs[1]) << " channels, but "
                         << ArgText(call, 1) << " expects " << DimText(ws[0]);
  }
  if (std::optional<int64_t> c = arith::AsConstant(ws[0]); c && *c % a.groups != 0) {
    return ErrorStatus() << call.name() << ": the " << *c << " input channels are not divisible by groups=" << a.groups;
  }
  std::array<PrimExpr, 2> spatial;
  for (int d = 0; d < 2; ++d) {
    spatial[d] = arith::Simplify((xs[2 + d] - 1) * a.strides[d] - a.padding[d] - a.padding[d + 2] +
                                 (ws[2 + d] - 1) * a.dilation[d] + a.output_padding[d] + 1);
  }
  return TensorStructInfoNode::make({xs[0], arith::Simplify(ws[1] * a.groups), spatial[0], spatial[1]}, dtype);
}

StatusOr<tir::Stmt> ConvTransposeKernel(const OpCall& call, KernelBuilder& b) {
  STRATA_ASSIGN_OR_RETURN(tir::Buffer x, b.Input(call.arg(0), "X", call.arg_name(0)));
  STRATA_ASSIGN_OR_RETURN(tir::Buffer w, b.Input(call.arg(1), "W", call.arg_name(1)));
  STRATA_ASSIGN_OR_RETURN(tir::Buffer out, b.Output(call.call().struct_info, "Out"));
  STRATA_ASSIGN_OR_RETURN(TransposeAttrs a, ReadAttrs(call));
  const PrimExpr in_per_group = arith::Simplify(tir::FloorDiv(w->shape[0], a.groups));
  const PrimExpr out_per_group = w->shape[1];
  tir::Var n = b.LoopVar("n"), oc = b.LoopVar("oc"), oh = b.LoopVar("oh"), ow = b.LoopVar("ow");
  tir::Var ic = b.LoopVar("ic"), kh = b.LoopVar("kh"), kw = b.LoopVar("kw");
  const PrimExpr group = tir::FloorDiv(oc, out_per_group);
  const PrimExpr channel = group * in_per_group + ic;
  // The input row (column) whose scattered window reaches output row oh at
  // kernel row kh, and whether there is one.
  auto source = [&](const PrimExpr& o, const PrimExpr& k, int d, PrimExpr* valid) {
    const PrimExpr t = o + a.padding[d] - k * a.dilation[d];
    const PrimExpr i = tir::FloorDiv(t, a.strides[d]);
    *valid = Bin(PrimExprKind::kAnd,
                 Bin(PrimExprKind::kAnd, Bin(PrimExprKind::kGE, t, 0),
                     Bin(PrimExprKind::kEQ, tir::FloorMod(t, a.strides[d]), 0)),
                 Bin(PrimExprKind::kLT, i, x->shape[2 + d]));
    return tir::Min(tir::Max(i, 0), x->shape[2 + d] - 1);
  };
  PrimExpr valid_h, valid_w;
  const PrimExpr ih = source(oh, kh, 0, &valid_h), iw = source(ow, kw, 1, &valid_w);
  const DataType t = out->dtype;
  tir::Buffer acc = KernelBuilder::Local("acc", t, {1});
  const PrimExpr product = tir::BufferLoadNode::make(x, {n, channel, arith::Simplify(ih), arith::Simplify(iw)}) *
                           tir::BufferLoadNode::make(w, {channel, tir::FloorMod(oc, out_per_group), kh, kw});
  const PrimExpr term = tir::SelectNode::make(Bin(PrimExprKind::kAnd, valid_h, valid_w), product, tir::FloatImm(t, 0));
  tir::Stmt update = tir::BufferStoreNode::make(acc, {0}, tir::BufferLoadNode::make(acc, {0}) + term);
  tir::Stmt sum =
      tir::ForNode::make(ic, 0, in_per_group, tir::ForKind::kSerial,
                         tir::ForNode::make(kh, 0, w->shape[2], tir::ForKind::kSerial,
                                            tir::ForNode::make(kw, 0, w->shape[3], tir::ForKind::kSerial, update)));
  tir::Stmt per_output = tir::AllocateNode::make(
      acc,
      tir::SeqStmtNode::make({tir::BufferStoreNode::make(acc, {0}, tir::FloatImm(t, 0)), sum,
                              tir::BufferStoreNode::make(out, {n, oc, oh, ow}, tir::BufferLoadNode::make(acc, {0}))}));
  tir::Stmt nest = tir::ForNode::make(ow, 0, out->shape[3], tir::ForKind::kSerial, per_output);
  nest = tir::ForNode::make(oh, 0, out->shape[2], tir::ForKind::kSerial, nest);
  nest = tir::ForNode::make(oc, 0, out->shape[1], tir::ForKind::kParallel, nest);
  nest = tir::ForNode::make(n, 0, out->shape[0], tir::ForKind::kSerial, nest);
  // An input of zero rows or columns has nothing to clamp to.
  std::vector<tir::Stmt> stmts;
  for (int d = 0; d < 2; ++d) {
    const PrimExpr dim = x->shape[2 + d];
    if (!arith::CanProve(Bin(PrimExprKind::kGT, dim, 0))) {
      stmts.push_back(tir::AssertStmtNode::make(
          Bin(PrimExprKind::kGT, dim, 0),
          "argument 'x' dimension " + std::to_string(2 + d) + " (" + DimText(dim) + ") must not be empty"));
    }
  }
  stmts.push_back(nest);
  return tir::SeqStmtNode::make(std::move(stmts));
}

}  // namespace

std::vector<OpDef> ConvTransposeOps() {
  const auto pair = [](const std::string& name, int64_t v) {
    return AttrDef{name, AttrKind::kInts, ir::AttrValue(std::vector<int64_t>{v, v})};
  };
  return {OpDef{
      "conv2d_transpose",
      {"x", "weight"},
      0,
      {pair("strides", 1), AttrDef{"padding", AttrKind::kInts, ir::AttrValue(std::vector<int64_t>{0, 0, 0, 0})},
       pair("dilation", 1), pair("output_padding", 0), AttrDef{"groups", AttrKind::kInt, ir::AttrValue(int64_t{1})}},
      InferConvTranspose,
      ConvTransposeKernel}};
}

}  // namespace strata::op
