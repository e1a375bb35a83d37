// pad: widen a tensor by widths before and after each dim, with a constant,
// the edge value, a reflection or a wrap-around (numpy.pad's modes).
//
// The widths are integer expressions of shape variables (ir::SymbolicInts),
// so padding computed from shapes (pad to a multiple of a block, pad a
// sequence to a fixed length) keeps one program for every shape; the output
// dim is `d + before + after`.
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

struct PadWidths {
  std::vector<PrimExpr> before, after;
};

StatusOr<PadWidths> Widths(const OpCall& call, int64_t ndim) {
  PadWidths w{call.IntExprsAttr("pad_before"), call.IntExprsAttr("pad_after")};
  for (const auto* list : {&w.before, &w.after}) {
    if (static_cast<int64_t>(list->size()) != ndim) {
      return ErrorStatus() << call.name() << ": pad_before and pad_after must have one width per dim (" << ndim
                           << "), got " << w.before.size() << " and " << w.after.size();
    }
    for (const PrimExpr& e : *list) {
      if (!arith::ProveNonNegative(e)) {
        return ErrorStatus() << call.name() << ": pad width " << DimText(e)
                             << " must be provably non-negative (cropping is strided_slice's job)";
      }
    }
  }
  return w;
}

StatusOr<StructInfo> InferPad(const OpCall& call) {
  STRATA_ASSIGN_OR_RETURN(const TensorStructInfoNode* x, TensorArg(call, 0));
  const std::string& mode = call.StringAttr("mode");
  if (mode != "constant" && mode != "edge" && mode != "reflect" && mode != "wrap") {
    return ErrorStatus() << call.name() << ": mode must be \"constant\", \"edge\", \"reflect\" or \"wrap\", got \""
                         << mode << "\"";
  }
  if (x->ndim < 0) return TensorStructInfoNode::make_ndim(-1, x->dtype);
  STRATA_ASSIGN_OR_RETURN(PadWidths w, Widths(call, x->ndim));
  if (!x->shape) return TensorStructInfoNode::make_ndim(x->ndim, x->dtype);
  std::vector<PrimExpr> dims;
  for (size_t d = 0; d < x->shape->size(); ++d) {
    dims.push_back(arith::Simplify((*x->shape)[d] + w.before[d] + w.after[d]));
  }
  return TensorStructInfoNode::make(std::move(dims), x->dtype);
}

StatusOr<tir::Stmt> PadKernel(const OpCall& call, KernelBuilder& b) {
  STRATA_ASSIGN_OR_RETURN(tir::Buffer in, b.Input(call.arg(0), "A", call.arg_name(0)));
  STRATA_ASSIGN_OR_RETURN(tir::Buffer out, b.Output(call.call().struct_info, "Out"));
  const int64_t rank = static_cast<int64_t>(in->shape.size());
  STRATA_ASSIGN_OR_RETURN(PadWidths w, Widths(call, rank));
  const std::string& mode = call.StringAttr("mode");
  std::vector<tir::Stmt> stmts;
  std::vector<PrimExpr> before;
  for (int64_t d = 0; d < rank; ++d) {
    const PrimExpr lo = b.Dim(w.before[d]), hi = b.Dim(w.after[d]), dim = in->shape[d];
    before.push_back(lo);
    const bool padded = arith::AsConstant(lo) != 0 || arith::AsConstant(hi) != 0;
    if (!padded) continue;
    // Every padded dim must hold an element to copy; reflect also needs the
    // widths below the extent (numpy and ONNX refuse wider reflections).
    const std::string where = "argument 'x' dimension " + std::to_string(d) + " (" + DimText(dim) + ")";
    if (!arith::CanProve(Bin(PrimExprKind::kGT, dim, 0))) {
      stmts.push_back(tir::AssertStmtNode::make(Bin(PrimExprKind::kGT, dim, 0), where + " must not be empty to pad"));
    }
    if (mode == "reflect") {
      const PrimExpr fits = Bin(PrimExprKind::kAnd, Bin(PrimExprKind::kLT, lo, dim), Bin(PrimExprKind::kLT, hi, dim));
      if (!arith::CanProve(fits)) {
        stmts.push_back(tir::AssertStmtNode::make(fits, where + " must be longer than its reflect pad widths (" +
                                                            DimText(w.before[d]) + ", " + DimText(w.after[d]) + ")"));
      }
    }
  }
  const DataType t = in->dtype;
  const double fill = call.FloatAttr("pad_value");
  const PrimExpr pad_value = t.is_float() ? tir::FloatImm(t, fill) : tir::IntImm(t, static_cast<int64_t>(fill));
  stmts.push_back(b.Elementwise(out->shape, [&](const std::vector<PrimExpr>& index) {
    std::vector<PrimExpr> src(rank);
    PrimExpr inside = tir::IntImm(DataType::Bool(), 1);
    for (int64_t d = 0; d < rank; ++d) {
      const PrimExpr dim = in->shape[d];
      const PrimExpr s = arith::Simplify(index[d] - before[d]);
      if (arith::AsConstant(before[d]) == 0 && arith::ProveEqual(out->shape[d], dim)) {
        src[d] = index[d];
        continue;
      }
      if (mode == "constant") {
        inside = Bin(PrimExprKind::kAnd, inside,
                     Bin(PrimExprKind::kAnd, Bin(PrimExprKind::kGE, s, 0), Bin(PrimExprKind::kLT, s, dim)));
        src[d] = tir::Min(tir::Max(s, 0), dim - 1);  // in bounds for the load; unused outside
      } else if (mode == "edge") {
        src[d] = tir::Min(tir::Max(s, 0), dim - 1);
      } else if (mode == "reflect") {
        const PrimExpr folded = tir::SelectNode::make(Bin(PrimExprKind::kLT, s, 0), PrimExpr(0) - s, s);
        src[d] = tir::SelectNode::make(Bin(PrimExprKind::kGE, folded, dim), (dim - 1) * 2 - folded, folded);
      } else {  // wrap
        src[d] = tir::FloorMod(s, dim);
      }
    }
    for (PrimExpr& i : src) i = arith::Simplify(i);
    PrimExpr value = tir::BufferLoadNode::make(in, src);
    if (mode == "constant") value = tir::SelectNode::make(arith::Simplify(inside), value, pad_value);
    return tir::BufferStoreNode::make(out, index, value);
  }));
  return tir::SeqStmtNode::make(std::move(stmts));
}

}  // namespace

std::vector<OpDef> PadOps() {
  return {OpDef{"pad",
                {"x"},
                0,
                {AttrDef{"pad_before", AttrKind::kIntExprs, std::nullopt},
                 AttrDef{"pad_after", AttrKind::kIntExprs, std::nullopt},
                 AttrDef{"mode", AttrKind::kString, ir::AttrValue(std::string("constant"))},
                 AttrDef{"pad_value", AttrKind::kFloat, ir::AttrValue(0.0)}},
                InferPad,
                PadKernel}};
}

}  // namespace strata::op
