// resize2d: resamples the last two dims of an (N, C, H, W) tensor to a given
// size, nearest or bilinear, with ONNX Resize's coordinate conventions.
//
// The target size is a shape argument (symbolic: an upsampling by 2 of a
// dynamic image is shape(n, c, h * 2, w * 2)); the kernel maps each output
// coordinate back to the input in f32:
//   half_pixel          (o + 0.5) / scale - 0.5
//   pytorch_half_pixel  the same, but 0 when the output extent is 1
//   align_corners       o * (in - 1) / (out - 1), 0 when the output extent is 1
//   asymmetric          o / scale
// where scale is the attribute scale_h / scale_w when given (ONNX scales
// input), else out / in at run time.
#include <array>

#include "compiler/analysis/struct_info_util.h"
#include "compiler/ir/arith/simplify.h"
#include "compiler/op/builtin_ops.h"
#include "compiler/op/kernel_builder.h"
#include "compiler/op/op_util.h"
#include "compiler/op/tir_build.h"

namespace strata::op {
namespace {

using analysis::DimText;
using tir::PrimExprKind;

using build::Bin;
PrimExpr F32(double v) { return tir::FloatImm(DataType::F32(), v); }
PrimExpr ToF32(const PrimExpr& e) { return tir::CastNode::make(DataType::F32(), e); }
PrimExpr Floor(const PrimExpr& e) { return tir::CallNode::make(tir::Intrinsic::kFloor, {e}); }
PrimExpr Ceil(const PrimExpr& e) { return tir::CallNode::make(tir::Intrinsic::kCeil, {e}); }

Status CheckChoice(const OpCall& call, const std::string& attr, std::initializer_list<const char*> allowed) {
  const std::string& value = call.StringAttr(attr);
  std::string list;
  for (const char* a : allowed) {
    if (value == a) return Status::Ok();
    list += (list.empty() ? "\"" : ", \"") + std::string(a) + "\"";
  }
  return ErrorStatus() << call.name() << ": attribute '" << attr << "' must be one of " << list << ", got \"" << value
                       << "\"";
}

StatusOr<StructInfo> InferResize(const OpCall& call) {
  STRATA_ASSIGN_OR_RETURN(const TensorStructInfoNode* x, TensorArg(call, 0));
  if (!x->dtype.is_void() && !x->dtype.is_float()) {
    return ErrorStatus() << call.name() << ": " << ArgText(call, 0) << " must be a float tensor";
  }
  STRATA_RETURN_IF_ERROR(CheckChoice(call, "method", {"nearest", "linear"}));
  STRATA_RETURN_IF_ERROR(CheckChoice(call, "coordinate_transformation_mode",
                                     {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric"}));
  STRATA_RETURN_IF_ERROR(
      CheckChoice(call, "nearest_mode", {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"}));
  if (x->ndim >= 0 && x->ndim != 4) {
    return ErrorStatus() << call.name() << ": " << ArgText(call, 0) << " must have rank 4 (N, C, H, W)";
  }
  STRATA_ASSIGN_OR_RETURN(std::vector<PrimExpr> size, ShapeArg(call, 1));
  if (size.size() != 2) {
    return ErrorStatus() << call.name() << ": size must hold the output height and width, got " << size.size()
                         << " values";
  }
  if (!x->shape) return TensorStructInfoNode::make_ndim(4, x->dtype);
  return TensorStructInfoNode::make({(*x->shape)[0], (*x->shape)[1], size[0], size[1]}, x->dtype);
}

StatusOr<tir::Stmt> ResizeKernel(const OpCall& call, KernelBuilder& b) {
  STRATA_ASSIGN_OR_RETURN(tir::Buffer in, b.Input(call.arg(0), "X", call.arg_name(0)));
  STRATA_ASSIGN_OR_RETURN(tir::Buffer out, b.Output(call.call().struct_info, "Out"));
  const std::string mode = call.StringAttr("coordinate_transformation_mode");
  const std::string nearest = call.StringAttr("nearest_mode");
  const bool linear = call.StringAttr("method") == "linear";
  const std::array<double, 2> given_scale = {call.FloatAttr("scale_h"), call.FloatAttr("scale_w")};
  const DataType t = out->dtype;
  std::vector<tir::Stmt> stmts;
  for (int d = 0; d < 2; ++d) {
    const PrimExpr dim = in->shape[2 + d];
    if (!arith::CanProve(Bin(PrimExprKind::kGT, dim, 0))) {
      stmts.push_back(tir::AssertStmtNode::make(
          Bin(PrimExprKind::kGT, dim, 0),
          "argument 'x' dimension " + std::to_string(2 + d) + " (" + DimText(dim) + ") must not be empty"));
    }
  }
  // The input coordinate (f32) of output coordinate `o` along spatial dim d.
  auto source = [&](const PrimExpr& o, int d) -> PrimExpr {
    const PrimExpr in_len = ToF32(in->shape[2 + d]), out_len = ToF32(out->shape[2 + d]);
    const PrimExpr scale = given_scale[d] > 0 ? F32(given_scale[d]) : Bin(PrimExprKind::kDiv, out_len, in_len);
    const PrimExpr of = ToF32(o);
    const PrimExpr single = Bin(PrimExprKind::kEQ, out->shape[2 + d], 1);
    if (mode == "asymmetric") return Bin(PrimExprKind::kDiv, of, scale);
    if (mode == "align_corners") {
      return tir::SelectNode::make(single, F32(0),
                                   Bin(PrimExprKind::kDiv, of * (in_len - F32(1)), tir::Max(out_len - F32(1), F32(1))));
    }
    const PrimExpr half = Bin(PrimExprKind::kDiv, of + F32(0.5), scale) - F32(0.5);
    return mode == "pytorch_half_pixel" ? tir::SelectNode::make(single, F32(0), half) : half;
  };
  auto clamp_index = [&](const PrimExpr& i, int d) {
    return tir::Min(tir::Max(i, PrimExpr(int64_t{0})), in->shape[2 + d] - 1);
  };
  auto to_index = [](const PrimExpr& f) { return tir::CastNode::make(DataType::I64(), f); };
  stmts.push_back(b.Elementwise(out->shape, [&](const std::vector<PrimExpr>& index) {
    std::array<PrimExpr, 2> coord = {source(index[2], 0), source(index[3], 1)};
    auto load = [&](const PrimExpr& h, const PrimExpr& w) {
      return tir::BufferLoadNode::make(in, {index[0], index[1], h, w});
    };
    if (!linear) {
      std::array<PrimExpr, 2> pick;
      for (int d = 0; d < 2; ++d) {
        PrimExpr rounded;
        if (nearest == "floor")
          rounded = Floor(coord[d]);
        else if (nearest == "ceil")
          rounded = Ceil(coord[d]);
        else if (nearest == "round_prefer_ceil")
          rounded = Floor(coord[d] + F32(0.5));
        else
          rounded = Ceil(coord[d] - F32(0.5));  // round_prefer_floor
        pick[d] = clamp_index(to_index(rounded), d);
      }
      PrimExpr value = load(pick[0], pick[1]);
      return tir::BufferStoreNode::make(out, index, t == DataType::F32() ? value : tir::CastNode::make(t, value));
    }
    // Bilinear: the coordinate clamped into the input, its floor and the next
    // row/column (the last one repeated at the edge), weighted by the fraction.
    std::array<PrimExpr, 2> lo, hi, frac;
    for (int d = 0; d < 2; ++d) {
      const PrimExpr c = tir::Min(tir::Max(coord[d], F32(0)), ToF32(in->shape[2 + d] - 1));
      const PrimExpr base = Floor(c);
      lo[d] = clamp_index(to_index(base), d);
      hi[d] = tir::Min(lo[d] + 1, in->shape[2 + d] - 1);
      frac[d] = c - base;
    }
    auto f32_load = [&](const PrimExpr& h, const PrimExpr& w) {
      PrimExpr v = load(h, w);
      return t == DataType::F32() ? v : ToF32(v);
    };
    const PrimExpr top = f32_load(lo[0], lo[1]) * (F32(1) - frac[1]) + f32_load(lo[0], hi[1]) * frac[1];
    const PrimExpr bottom = f32_load(hi[0], lo[1]) * (F32(1) - frac[1]) + f32_load(hi[0], hi[1]) * frac[1];
    const PrimExpr value = top * (F32(1) - frac[0]) + bottom * frac[0];
    return tir::BufferStoreNode::make(out, index, t == DataType::F32() ? value : tir::CastNode::make(t, value));
  }));
  return tir::SeqStmtNode::make(std::move(stmts));
}

}  // namespace

std::vector<OpDef> ResizeOps() {
  const auto text = [](const std::string& name, const std::string& value) {
    return AttrDef{name, AttrKind::kString, ir::AttrValue(value)};
  };
  return {OpDef{"resize2d",
                {"x", "size"},
                0,
                {text("method", "nearest"), text("coordinate_transformation_mode", "half_pixel"),
                 text("nearest_mode", "round_prefer_floor"), AttrDef{"scale_h", AttrKind::kFloat, ir::AttrValue(0.0)},
                 AttrDef{"scale_w", AttrKind::kFloat, ir::AttrValue(0.0)}},
                InferResize,
                ResizeKernel}};
}

}  // namespace strata::op
