#include "compiler/op/pool_kernel.h"

#include <limits>

#include "compiler/op/tir_build.h"

namespace strata::op {

StatusOr<PoolKernelSetup> BeginPoolKernel(const OpCall& call, KernelBuilder& b, PoolKind kind) {
  PoolKernelSetup s;
  STRATA_ASSIGN_OR_RETURN(s.attrs, ReadPoolAttrs(call));
  s.include_pad = kind == PoolKind::kAvg && call.BoolAttr("count_include_pad");
  STRATA_ASSIGN_OR_RETURN(s.x, b.Input(call.arg(0), "X", "x"));
  STRATA_ASSIGN_OR_RETURN(s.y, b.Output(call.call().struct_info, "Y"));
  s.dt = s.y->dtype;
  s.height = s.x->shape[2];
  s.width = s.x->shape[3];
  s.out_w = s.y->shape[3];
  const Window& win = s.attrs.window;
  s.sh = win.strides[0];
  s.sw = win.strides[1];
  s.dh = win.dilation[0];
  s.dw = win.dilation[1];
  s.pt = win.pad_before(0);
  s.pl = win.pad_before(1);
  s.pb = win.pad_after(0);
  s.pr = win.pad_after(1);
  s.init =
      kind == PoolKind::kMax ? build::Float(s.dt, -std::numeric_limits<double>::infinity()) : build::Float(s.dt, 0);
  return s;
}

PrimExpr ClampToExtent(const PrimExpr& v, const PrimExpr& extent) { return tir::Max(tir::Min(v, extent - 1), 0); }

PrimExpr InsideExtent(const PrimExpr& v, const PrimExpr& extent) {
  return build::AllOf({build::Ge(v, 0), build::Lt(v, extent)});
}

PrimExpr CountTrue(const std::vector<PrimExpr>& conditions) {
  PrimExpr total = 0;
  for (const PrimExpr& c : conditions) {
    total = total + (build::IsTrue(c) ? PrimExpr(1) : tir::SelectNode::make(c, 1, 0));
  }
  return build::S(total);
}

}  // namespace strata::op
