// Window geometry of convolutions and pools (see window.h).
#include "compiler/op/window.h"

#include <optional>

#include "compiler/analysis/struct_info_util.h"
#include "compiler/ir/arith/simplify.h"
#include "compiler/ir/printer.h"
#include "compiler/op/op_util.h"

namespace strata::op {

using analysis::DimText;

// A (height, width) attribute of positive values.
StatusOr<std::array<int64_t, 2>> PairAttr(const OpCall& call, const std::string& name) {
  const std::vector<int64_t> v = call.IntsAttr(name);
  if (v.size() != 2) {
    return ErrorStatus() << call.name() << ": attribute '" << name << "' must have 2 values (height, width), got "
                         << ir::PrintInts(v);
  }
  if (v[0] < 1 || v[1] < 1) {
    return ErrorStatus() << call.name() << ": attribute '" << name << "' must be positive, got " << ir::PrintInts(v);
  }
  return std::array<int64_t, 2>{v[0], v[1]};
}

StatusOr<Window> ReadWindow(const OpCall& call, const std::string& strides_attr) {
  Window w;
  STRATA_ASSIGN_OR_RETURN(w.strides, PairAttr(call, strides_attr));
  STRATA_ASSIGN_OR_RETURN(w.dilation, PairAttr(call, "dilation"));
  const std::vector<int64_t> pad = call.IntsAttr("padding");
  if (pad.size() != 2 && pad.size() != 4) {
    return ErrorStatus() << call.name()
                         << ": attribute 'padding' must have 2 values (height, width) or 4 (top, left, bottom, "
                            "right), got "
                         << ir::PrintInts(pad);
  }
  for (int64_t p : pad) {
    if (p < 0)
      return ErrorStatus() << call.name() << ": attribute 'padding' must be non-negative, got " << ir::PrintInts(pad);
  }
  w.padding = pad.size() == 2 ? std::array<int64_t, 4>{pad[0], pad[1], pad[0], pad[1]}
                              : std::array<int64_t, 4>{pad[0], pad[1], pad[2], pad[3]};
  return w;
}

// Number of window positions along one dimension: floor((in + pads - dilated
// window) / stride) + 1. ceil_mode rounds up instead, except that a window must
// start inside the input or the leading padding (PyTorch's rule).
PrimExpr WindowOutputDim(const PrimExpr& in, const Window& w, int d, const PrimExpr& kernel, bool ceil_mode) {
  const int64_t s = w.strides[d];
  PrimExpr span = in + (w.pad_before(d) + w.pad_after(d)) - w.dilation[d] * (kernel - 1) - 1;
  if (!ceil_mode) return SimplifyDim(tir::FloorDiv(span, s) + 1);
  PrimExpr rounded_up = tir::FloorDiv(span + (s - 1), s) + 1;
  PrimExpr starts_inside = tir::FloorDiv(in + w.pad_before(d) - 1, s) + 1;
  return SimplifyDim(tir::Min(rounded_up, starts_inside));
}

Status CheckFloat(const OpCall& call, size_t i, DataType dtype) {
  if (dtype.is_void() || dtype.is_float()) return Status::Ok();
  return ErrorStatus() << call.name() << ": " << ArgText(call, i) << " must be a float tensor";
}

Status CheckRank4(const OpCall& call, size_t i, const TensorStructInfoNode* t, const char* layout) {
  if (t->ndim < 0 || t->ndim == 4) return Status::Ok();
  return ErrorStatus() << call.name() << ": " << ArgText(call, i) << " must be 4-D " << layout;
}

// The output spatial dims of a window operator; an error when a constant one is empty.
StatusOr<std::array<PrimExpr, 2>> WindowOutput(const OpCall& call, const std::vector<PrimExpr>& x_shape,
                                               const Window& w, const std::array<PrimExpr, 2>& kernel, bool ceil_mode,
                                               const std::string& window_text) {
  std::array<PrimExpr, 2> out;
  for (int d = 0; d < 2; ++d) {
    out[d] = WindowOutputDim(x_shape[2 + d], w, d, kernel[d], ceil_mode);
    std::optional<int64_t> value = arith::AsConstant(out[d]);
    if (value && *value < 1) {
      return ErrorStatus() << call.name() << ": " << ArgText(call, 0) << " is too small for " << window_text
                           << " with padding " << ir::PrintInts({w.padding.begin(), w.padding.end()})
                           << " and dilation " << ir::PrintInts({w.dilation.begin(), w.dilation.end()})
                           << ": the output " << (d == 0 ? "height" : "width") << " would be " << *value;
    }
  }
  return out;
}

StatusOr<PoolAttrs> ReadPoolAttrs(const OpCall& call) {
  PoolAttrs a;
  STRATA_ASSIGN_OR_RETURN(a.size, PairAttr(call, "pool_size"));
  // strides default to pool_size (PyTorch), so unset means non-overlapping windows.
  STRATA_ASSIGN_OR_RETURN(a.window, ReadWindow(call, call.HasAttr("strides") ? "strides" : "pool_size"));
  a.ceil_mode = call.BoolAttr("ceil_mode");
  for (int d = 0; d < 2; ++d) {
    const int64_t extent = a.window.dilation[d] * (a.size[d] - 1) + 1;
    if (a.window.pad_before(d) >= extent || a.window.pad_after(d) >= extent) {
      return ErrorStatus() << call.name() << ": padding "
                           << ir::PrintInts({a.window.padding.begin(), a.window.padding.end()})
                           << " must be smaller than the window (" << extent << " " << (d == 0 ? "rows" : "columns")
                           << " with dilation) on every side";
    }
  }
  return a;
}

std::vector<AttrDef> PoolAttrDefs(bool avg) {
  std::vector<AttrDef> attrs = {AttrDef{"pool_size", AttrKind::kInts, std::nullopt},
                                AttrDef{"strides", AttrKind::kInts, std::nullopt, /*optional=*/true},
                                AttrDef{"padding", AttrKind::kInts, ir::AttrValue(std::vector<int64_t>{0, 0, 0, 0})},
                                AttrDef{"dilation", AttrKind::kInts, ir::AttrValue(std::vector<int64_t>{1, 1})},
                                AttrDef{"ceil_mode", AttrKind::kBool, ir::AttrValue(false)}};
  if (avg) attrs.push_back(AttrDef{"count_include_pad", AttrKind::kBool, ir::AttrValue(false)});
  return attrs;
}

StatusOr<ConvOperands> ReadConvOperands(const OpCall& call) {
  ConvOperands c;
  STRATA_ASSIGN_OR_RETURN(c.x, TensorArg(call, 0));
  STRATA_ASSIGN_OR_RETURN(c.weight, TensorArg(call, 1));
  STRATA_ASSIGN_OR_RETURN(c.dtype, SameDtype(call, 0, 1, c.x->dtype, c.weight->dtype));
  STRATA_RETURN_IF_ERROR(CheckFloat(call, 0, c.dtype));
  STRATA_ASSIGN_OR_RETURN(c.window, ReadWindow(call, "strides"));
  c.groups = call.IntAttr("groups");
  if (c.groups < 1) return ErrorStatus() << call.name() << ": attribute 'groups' must be positive, got " << c.groups;
  return c;
}

}  // namespace strata::op
