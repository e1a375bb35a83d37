// Choosing positions: topk (the k largest or smallest elements along an
// axis, sorted, with their indices) and one_hot (a position per index).
//
// k may be a symbolic expression (computed from shapes). The kernel makes k
// selection passes over the axis per output row, each finding the best
// element that ranks after the previous pick in the order (value, then lower
// index first), so it needs no scratch memory and ties come out as ONNX
// specifies; O(n * k), meant for the small k of classifiers and samplers.
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
PrimExpr And(PrimExpr a, PrimExpr b) { return Bin(PrimExprKind::kAnd, std::move(a), std::move(b)); }
PrimExpr Or(PrimExpr a, PrimExpr b) { return Bin(PrimExprKind::kOr, std::move(a), std::move(b)); }

StatusOr<StructInfo> InferTopK(const OpCall& call) {
  STRATA_ASSIGN_OR_RETURN(const TensorStructInfoNode* x, TensorArg(call, 0));
  if (!x->dtype.is_void() && x->dtype.is_bool()) {
    return ErrorStatus() << call.name() << ": " << ArgText(call, 0) << " must be a numeric tensor";
  }
  const std::vector<PrimExpr> k = call.IntExprsAttr("k");
  if (k.size() != 1 || !arith::ProveNonNegative(k[0])) {
    return ErrorStatus() << call.name() << ": k must be one non-negative integer expression";
  }
  if (x->ndim == 0) return ErrorStatus() << call.name() << ": " << ArgText(call, 0) << " must have rank >= 1";
  if (!x->shape) {
    return graph::TupleStructInfoNode::make({TensorStructInfoNode::make_ndim(x->ndim, x->dtype),
                                             TensorStructInfoNode::make_ndim(x->ndim, DataType::I64())});
  }
  STRATA_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(call, "axis", call.IntAttr("axis"), x->ndim));
  const std::optional<int64_t> kc = arith::AsConstant(k[0]), nc = arith::AsConstant((*x->shape)[axis]);
  if (kc && nc && *kc > *nc) {
    return ErrorStatus() << call.name() << ": k " << *kc << " exceeds dimension " << axis << " of " << ArgText(call, 0);
  }
  std::vector<PrimExpr> dims = *x->shape;
  dims[axis] = k[0];
  return graph::TupleStructInfoNode::make(
      {TensorStructInfoNode::make(dims, x->dtype), TensorStructInfoNode::make(dims, DataType::I64())});
}

StatusOr<tir::Stmt> TopKKernel(const OpCall& call, KernelBuilder& b) {
  STRATA_ASSIGN_OR_RETURN(tir::Buffer in, b.Input(call.arg(0), "A", call.arg_name(0)));
  const auto* tuple = call.call().struct_info.as<graph::TupleStructInfoNode>();
  STRATA_ASSIGN_OR_RETURN(tir::Buffer values, b.Output(tuple->fields[0], "Values"));
  STRATA_ASSIGN_OR_RETURN(tir::Buffer indices, b.Output(tuple->fields[1], "Indices"));
  const int64_t rank = static_cast<int64_t>(in->shape.size());
  STRATA_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(call, "axis", call.IntAttr("axis"), rank));
  const bool largest = call.BoolAttr("largest");
  const PrimExpr n = in->shape[axis], k = values->shape[axis];
  std::vector<tir::Var> vars;
  for (int64_t d = 0; d < rank; ++d) vars.push_back(b.LoopVar("i" + std::to_string(d)));
  const tir::Var pick = b.LoopVar("j"), scan = b.LoopVar("r");
  auto at = [&](const PrimExpr& p) {
    std::vector<PrimExpr> index(vars.begin(), vars.end());
    index[axis] = p;
    return index;
  };
  const PrimExprKind better = largest ? PrimExprKind::kGT : PrimExprKind::kLT;
  // The previous pick (read only when j > 0; index clamped to stay in range).
  const PrimExpr prev_at = tir::Max(pick - 1, 0);
  const PrimExpr prev_value = tir::BufferLoadNode::make(values, at(prev_at));
  const PrimExpr prev_index = tir::BufferLoadNode::make(indices, at(prev_at));
  const PrimExpr v = tir::BufferLoadNode::make(in, at(scan));
  const PrimExpr r = tir::CastNode::make(DataType::I64(), scan);
  // Ranks after the previous pick: worse value, or equal value and a later index.
  const PrimExpr after_prev = Or(Bin(PrimExprKind::kEQ, pick, 0),
                                 Or(Bin(better, prev_value, v),
                                    And(Bin(PrimExprKind::kEQ, v, prev_value), Bin(PrimExprKind::kGT, r, prev_index))));
  tir::Buffer best = KernelBuilder::Local("best", in->dtype, {1});
  tir::Buffer best_index = KernelBuilder::Local("best_index", DataType::I64(), {1});
  const PrimExpr current = tir::BufferLoadNode::make(best, {0});
  const PrimExpr current_index = tir::BufferLoadNode::make(best_index, {0});
  // Better than the current candidate (none yet: index -1); a scan in index
  // order keeps the lower index on equal values.
  const PrimExpr take = And(after_prev, Or(Bin(PrimExprKind::kLT, current_index, 0), Bin(better, v, current)));
  // Decided once per element: the two stores below would otherwise see each
  // other's update.
  const tir::Var taken("take", DataType::Bool());
  tir::Stmt step = tir::LetStmtNode::make(
      taken, take,
      tir::SeqStmtNode::make(
          {tir::BufferStoreNode::make(best, {0}, tir::SelectNode::make(taken, v, current)),
           tir::BufferStoreNode::make(best_index, {0}, tir::SelectNode::make(taken, r, current_index))}));
  tir::Stmt one_pick =
      tir::SeqStmtNode::make({tir::BufferStoreNode::make(best_index, {0}, tir::IntImm(DataType::I64(), -1)),
                              tir::BufferStoreNode::make(best, {0}, tir::BufferLoadNode::make(in, at(0))),
                              tir::ForNode::make(scan, 0, n, tir::ForKind::kSerial, step),
                              tir::BufferStoreNode::make(values, at(pick), current),
                              tir::BufferStoreNode::make(indices, at(pick), current_index)});
  tir::Stmt per_row = tir::AllocateNode::make(
      best, tir::AllocateNode::make(best_index, tir::ForNode::make(pick, 0, k, tir::ForKind::kSerial, one_pick)));
  const int64_t outermost = axis == 0 ? 1 : 0;
  for (int64_t d = rank; d-- > 0;) {
    if (d == axis) continue;
    per_row = tir::ForNode::make(vars[d], 0, in->shape[d],
                                 d == outermost ? tir::ForKind::kParallel : tir::ForKind::kSerial, per_row);
  }
  std::vector<tir::Stmt> stmts;
  if (!arith::CanProve(Bin(PrimExprKind::kLE, k, n))) {
    stmts.push_back(tir::AssertStmtNode::make(Bin(PrimExprKind::kLE, k, n),
                                              "k (" + DimText(k) + ") must not exceed argument 'x' dimension " +
                                                  std::to_string(axis) + " (" + DimText(n) + ")"));
  }
  stmts.push_back(per_row);
  return tir::SeqStmtNode::make(std::move(stmts));
}

// one_hot(indices, depth=[d], axis=-1, on_value, off_value, dtype): a new axis
// of extent d (symbolic allowed) at `axis`; negative indices count from d.
StatusOr<StructInfo> InferOneHot(const OpCall& call) {
  STRATA_ASSIGN_OR_RETURN(const TensorStructInfoNode* indices, TensorArg(call, 0));
  if (!indices->dtype.is_void() && !indices->dtype.is_int()) {
    return ErrorStatus() << call.name() << ": " << ArgText(call, 0) << " must be a signed integer tensor";
  }
  const std::vector<PrimExpr> depth = call.IntExprsAttr("depth");
  if (depth.size() != 1) return ErrorStatus() << call.name() << ": depth must be one integer expression";
  const DataType dtype = call.DataTypeAttr("dtype");
  if (!indices->shape) return TensorStructInfoNode::make_ndim(indices->ndim < 0 ? -1 : indices->ndim + 1, dtype);
  const int64_t out_rank = static_cast<int64_t>(indices->shape->size()) + 1;
  STRATA_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(call, "axis", call.IntAttr("axis"), out_rank));
  std::vector<PrimExpr> dims = *indices->shape;
  dims.insert(dims.begin() + axis, depth[0]);
  return TensorStructInfoNode::make(std::move(dims), dtype);
}

StatusOr<tir::Stmt> OneHotKernel(const OpCall& call, KernelBuilder& b) {
  STRATA_ASSIGN_OR_RETURN(tir::Buffer indices, b.Input(call.arg(0), "I", call.arg_name(0)));
  STRATA_ASSIGN_OR_RETURN(tir::Buffer out, b.Output(call.call().struct_info, "Out"));
  const int64_t out_rank = static_cast<int64_t>(out->shape.size());
  STRATA_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(call, "axis", call.IntAttr("axis"), out_rank));
  const PrimExpr depth = out->shape[axis];
  const DataType t = out->dtype;
  auto constant = [&](double v) {
    return t.is_float() ? tir::FloatImm(t, v) : tir::IntImm(t, static_cast<int64_t>(v));
  };
  const PrimExpr on = constant(call.FloatAttr("on_value")), off = constant(call.FloatAttr("off_value"));
  return b.Elementwise(out->shape, [&](const std::vector<PrimExpr>& index) {
    std::vector<PrimExpr> at(index.begin(), index.end());
    at.erase(at.begin() + axis);
    PrimExpr i = tir::BufferLoadNode::make(indices, at);
    if (i.dtype() != DataType::I64()) i = tir::CastNode::make(DataType::I64(), i);
    const PrimExpr wrapped = tir::SelectNode::make(Bin(PrimExprKind::kLT, i, 0), i + depth, i);
    // An index outside [-depth, depth) matches no position: all off_value.
    return tir::BufferStoreNode::make(out, index,
                                      tir::SelectNode::make(Bin(PrimExprKind::kEQ, wrapped, index[axis]), on, off));
  });
}

}  // namespace

std::vector<OpDef> SelectionOps() {
  return {OpDef{"topk",
                {"x"},
                0,
                {AttrDef{"k", AttrKind::kIntExprs, std::nullopt},
                 AttrDef{"axis", AttrKind::kInt, ir::AttrValue(int64_t{-1})},
                 AttrDef{"largest", AttrKind::kBool, ir::AttrValue(true)}},
                InferTopK,
                TopKKernel},
          OpDef{"one_hot",
                {"indices"},
                0,
                {AttrDef{"depth", AttrKind::kIntExprs, std::nullopt},
                 AttrDef{"axis", AttrKind::kInt, ir::AttrValue(int64_t{-1})},
                 AttrDef{"on_value", AttrKind::kFloat, ir::AttrValue(1.0)},
                 AttrDef{"off_value", AttrKind::kFloat, ir::AttrValue(0.0)},
                 AttrDef{"dtype", AttrKind::kDataType, ir::AttrValue(DataType::F32())}},
                InferOneHot,
                OneHotKernel}};
}

}  // namespace strata::op
