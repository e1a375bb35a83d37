// depth_to_space and depth_to_space_nchwc: channels become a grid of pixels.
//
// x (N, C, H, W) with C = bh * bw * D becomes y (N, D, H * bh - top - bottom,
// W * bw - left - right): channel group p = rh * bw + rw (each of D channels,
// ONNX DepthToSpace's DCR order) supplies the pixels at row phase rh and
// column phase rw, and `crop` removes rows and columns from the edges:
//
//   y[n, d, oh, ow] = x[n, (rh * bw + rw) * D + d, qh, qw]
//   with qh * bh + rh = oh + top, qw * bw + rw = ow + left
//
// The blocked form reads and writes (N, C / b, H, W, b) with b dividing D, so
// a block never mixes phases:
//
//   y[n, db, oh, ow, l] = x[n, (rh * bw + rw) * (D / b) + db, qh, qw, l]
//
// A transposed convolution of stride (bh, bw) is one stride-1 convolution
// whose output channels are the bh * bw phases of its output followed by this
// op (DecomposeConvTranspose), and the crop is its padding.
#include <optional>
#include <string>
#include <vector>

#include "compiler/analysis/struct_info_util.h"
#include "compiler/ir/arith/simplify.h"
#include "compiler/ir/printer.h"
#include "compiler/op/builtin_ops.h"
#include "compiler/op/kernel_builder.h"
#include "compiler/op/op_util.h"
#include "compiler/op/tir_build.h"
#include "compiler/op/window.h"

namespace strata::op {
namespace {

using analysis::DimText;
using namespace build;  // NOLINT: the kernel builders

struct DepthToSpaceAttrs {
  int64_t bh, bw;
  int64_t top, left, bottom, right;
};

StatusOr<DepthToSpaceAttrs> ReadAttrs(const OpCall& call) {
  const std::vector<int64_t> blocks = call.IntsAttr("blocks");
  const std::vector<int64_t> crop = call.IntsAttr("crop");
  if (blocks.size() != 2 || blocks[0] < 1 || blocks[1] < 1) {
    return ErrorStatus() << call.name() << ": attribute 'blocks' must be 2 positive values (rows, columns), got "
                         << ir::PrintInts(blocks);
  }
  if (crop.size() != 4 || crop[0] < 0 || crop[1] < 0 || crop[2] < 0 || crop[3] < 0) {
    return ErrorStatus() << call.name()
                         << ": attribute 'crop' must be 4 non-negative values (top, left, bottom, right), got "
                         << ir::PrintInts(crop);
  }
  return DepthToSpaceAttrs{blocks[0], blocks[1], crop[0], crop[1], crop[2], crop[3]};
}

// The output's rows and columns; an error when a constant one is not positive.
StatusOr<std::vector<PrimExpr>> Spatial(const OpCall& call, const DepthToSpaceAttrs& a, const PrimExpr& h,
                                        const PrimExpr& w) {
  const std::vector<PrimExpr> out = {SimplifyDim(h * a.bh - a.top - a.bottom),
                                     SimplifyDim(w * a.bw - a.left - a.right)};
  for (int d = 0; d < 2; ++d) {
    std::optional<int64_t> extent = arith::AsConstant(out[d]);
    if (extent && *extent <= 0) {
      return ErrorStatus() << call.name() << ": the crop " << ir::PrintInts(call.IntsAttr("crop")) << " leaves "
                           << *extent << (d == 0 ? " rows" : " columns") << " of " << ArgText(call, 0);
    }
  }
  return out;
}

// The channels per phase of `channels` (C / (bh * bw)); an error when a constant C does not divide.
StatusOr<PrimExpr> PerPhase(const OpCall& call, const DepthToSpaceAttrs& a, const PrimExpr& channels,
                            const std::string& what) {
  const int64_t phases = a.bh * a.bw;
  std::optional<int64_t> rest = arith::AsConstant(SimplifyDim(tir::FloorMod(channels, phases)));
  if (rest && *rest != 0) {
    return ErrorStatus() << call.name() << ": the " << DimText(channels) << " " << what << " of " << ArgText(call, 0)
                         << " are not divisible by blocks " << a.bh << " x " << a.bw;
  }
  return SimplifyDim(tir::FloorDiv(channels, phases));
}

StatusOr<StructInfo> InferDepthToSpace(const OpCall& call) {
  STRATA_ASSIGN_OR_RETURN(const TensorStructInfoNode* x, TensorArg(call, 0));
  STRATA_ASSIGN_OR_RETURN(DepthToSpaceAttrs a, ReadAttrs(call));
  STRATA_RETURN_IF_ERROR(CheckRank4(call, 0, x, "(N, C, H, W)"));
  if (!x->shape) return TensorStructInfoNode::make_ndim(4, x->dtype);
  const std::vector<PrimExpr>& xs = *x->shape;
  STRATA_ASSIGN_OR_RETURN(PrimExpr depth, PerPhase(call, a, xs[1], "channels"));
  STRATA_ASSIGN_OR_RETURN(std::vector<PrimExpr> spatial, Spatial(call, a, xs[2], xs[3]));
  return TensorStructInfoNode::make({xs[0], depth, spatial[0], spatial[1]}, x->dtype);
}

StatusOr<StructInfo> InferDepthToSpaceNchwc(const OpCall& call) {
  STRATA_ASSIGN_OR_RETURN(const TensorStructInfoNode* x, TensorArg(call, 0));
  STRATA_ASSIGN_OR_RETURN(DepthToSpaceAttrs a, ReadAttrs(call));
  if (x->ndim >= 0 && x->ndim != 5) {
    return ErrorStatus() << call.name() << ": " << ArgText(call, 0) << " must be 5-D (N, C / block, H, W, block)";
  }
  if (!x->shape) return TensorStructInfoNode::make_ndim(5, x->dtype);
  const std::vector<PrimExpr>& xs = *x->shape;
  STRATA_ASSIGN_OR_RETURN(PrimExpr depth_blocks, PerPhase(call, a, xs[1], "channel blocks"));
  STRATA_ASSIGN_OR_RETURN(std::vector<PrimExpr> spatial, Spatial(call, a, xs[2], xs[3]));
  return TensorStructInfoNode::make({xs[0], depth_blocks, spatial[0], spatial[1], xs[4]}, x->dtype);
}

// One parallel task per output row (n, d, oh); along the row, the source
// column and phase follow from ow. `lanes` is the blocked layout's block (0:
// plain), vectorized innermost.
StatusOr<tir::Stmt> DepthToSpaceKernel(const OpCall& call, KernelBuilder& b, bool blocked) {
  STRATA_ASSIGN_OR_RETURN(DepthToSpaceAttrs a, ReadAttrs(call));
  STRATA_ASSIGN_OR_RETURN(tir::Buffer x, b.Input(call.arg(0), "X", "x"));
  STRATA_ASSIGN_OR_RETURN(tir::Buffer y, b.Output(call.call().struct_info, "Y"));
  const PrimExpr depth = y->shape[1];
  std::vector<tir::Stmt> stmts;
  CheckAtRunTime(&stmts, Eq(x->shape[1], S(depth * (a.bh * a.bw))),
                 "channels of x (" + DimText(x->shape[1]) + ") must be divisible by blocks " + std::to_string(a.bh) +
                     " x " + std::to_string(a.bw));
  stmts.push_back(ParallelOver("r", {y->shape[0], depth, y->shape[2]}, [&](const Index& r) {
    const PrimExpr &n = r[0], &d = r[1], &oh = r[2];
    const PrimExpr row = S(oh + a.top);
    const PrimExpr qh = S(tir::FloorDiv(row, a.bh)), rh = S(tir::FloorMod(row, a.bh));
    return Loop("ow", 0, y->shape[3], ForKind::kSerial, [&](const PrimExpr& ow) {
      const PrimExpr col = S(ow + a.left);
      const PrimExpr qw = S(tir::FloorDiv(col, a.bw)), rw = S(tir::FloorMod(col, a.bw));
      const PrimExpr channel = S((rh * a.bw + rw) * depth + d);
      if (!blocked) return Store(y, {n, d, oh, ow}, Load(x, {n, channel, qh, qw}));
      return Loop("l", 0, y->shape[4], ForKind::kVectorized, [&](const PrimExpr& l) {
        return Store(y, {n, d, oh, ow, l}, Load(x, {n, channel, qh, qw, l}));
      });
    });
  }));
  return Seq(std::move(stmts));
}

std::vector<AttrDef> DepthToSpaceAttrDefs() {
  return {AttrDef{"blocks", AttrKind::kInts, std::nullopt},
          AttrDef{"crop", AttrKind::kInts, ir::AttrValue(std::vector<int64_t>{0, 0, 0, 0})}};
}

}  // namespace

std::vector<OpDef> DepthToSpaceOps() {
  return {
      OpDef{"depth_to_space",
            {"x"},
            0,
            DepthToSpaceAttrDefs(),
            InferDepthToSpace,
            [](const OpCall& call, KernelBuilder& b) { return DepthToSpaceKernel(call, b, false); }},
      OpDef{"depth_to_space_nchwc",
            {"x"},
            0,
            DepthToSpaceAttrDefs(),
            InferDepthToSpaceNchwc,
            [](const OpCall& call, KernelBuilder& b) { return DepthToSpaceKernel(call, b, true); }},
  };
}

}  // namespace strata::op
