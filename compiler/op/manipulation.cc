// Data movement and creation: transpose, concat, split, strided_slice, take,
// broadcast_to, zeros, ones, full, arange (reshape and the like: reshape.cc).
//
// Every kernel is a copy (or a fill) with the baseline schedule: outermost
// loop parallel, innermost vectorized, no loop for a dimension of constant
// extent 1; transpose tiles the two axes whose contiguity it swaps. A condition
// that shape inference could neither prove nor refute (two symbolic dimensions
// that must agree, a divisibility) becomes an assert at the kernel's entry that
// names the argument and the dimension.
#include <algorithm>
#include <cmath>

#include "compiler/analysis/struct_info_util.h"
#include "compiler/ir/arith/simplify.h"
#include "compiler/ir/printer.h"
#include "compiler/op/builtin_ops.h"
#include "compiler/op/data_movement.h"
#include "compiler/op/kernel_builder.h"
#include "compiler/op/op_util.h"
#include "support/numeric_range.h"

namespace strata::op {
namespace {

using analysis::DimText;
using tir::PrimExprKind;
using namespace movement;  // NOLINT(build/namespaces): the family's shared helpers

// ---- transpose -----------------------------------------------------------------

// The permutation: output axis k is input axis perm[k].
StatusOr<std::vector<int64_t>> Permutation(const OpCall& call, int64_t ndim) {
  std::vector<int64_t> perm;
  if (!call.HasAttr("axes")) {
    for (int64_t k = ndim; k-- > 0;) perm.push_back(k);
    return perm;
  }
  const std::vector<int64_t> axes = call.IntsAttr("axes");
  if (static_cast<int64_t>(axes.size()) != ndim) {
    return ErrorStatus() << call.name() << ": attribute 'axes' " << ir::PrintInts(axes) << " must list each of the "
                         << ndim << " axes of " << ArgText(call, 0) << " once";
  }
  return DistinctAxes(call, "axes", axes, ndim);
}

StatusOr<StructInfo> InferTranspose(const OpCall& call) {
  STRATA_ASSIGN_OR_RETURN(const TensorStructInfoNode* x, TensorArg(call, 0));
  if (x->ndim < 0) {
    return TensorStructInfoNode::make_ndim(call.HasAttr("axes") ? static_cast<int>(call.IntsAttr("axes").size()) : -1,
                                           x->dtype);
  }
  STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> perm, Permutation(call, x->ndim));
  if (!x->shape) return call.arg_sinfo(0);
  std::vector<PrimExpr> dims;
  for (int64_t p : perm) dims.push_back((*x->shape)[p]);
  return TensorStructInfoNode::make(std::move(dims), x->dtype);
}

// Square tiles of this many bytes per side keep both the rows written and the
// columns read of a transpose in L1.
constexpr int64_t kTransposeTileBytes = 256;

StatusOr<tir::Stmt> TransposeKernel(const OpCall& call, KernelBuilder& b) {
  STRATA_ASSIGN_OR_RETURN(tir::Buffer in, b.Input(call.arg(0), "A", call.arg_name(0)));
  STRATA_ASSIGN_OR_RETURN(tir::Buffer out, b.Output(call.call().struct_info, "Out"));
  const size_t rank = in->shape.size();
  STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> perm, Permutation(call, static_cast<int64_t>(rank)));
  auto copy = [&](const std::vector<PrimExpr>& index) {
    std::vector<PrimExpr> in_index(index.size());
    for (size_t k = 0; k < perm.size(); ++k) in_index[perm[k]] = index[k];
    return Store(out, index, Load(in, in_index));
  };
  // Output axis `row` is the input's innermost axis. When it is not also the
  // output's innermost, one side is read or written with a stride: tile the
  // two axes.
  const size_t last = rank - 1;
  const size_t row = rank == 0 ? 0 : std::find(perm.begin(), perm.end(), static_cast<int64_t>(last)) - perm.begin();
  const int64_t tile = kTransposeTileBytes / in->dtype.bytes();
  auto small = [&](const PrimExpr& d) { return arith::AsConstant(d).value_or(tile + 1) <= tile; };
  if (rank < 2 || row == last || small(out->shape[row]) || small(out->shape[last])) {
    return CopyNest(b, out->shape, copy);
  }

  std::vector<tir::Var> vars;
  std::vector<PrimExpr> extents, index(rank);
  for (size_t d = 0; d < last; ++d) {
    if (d == row) continue;
    if (arith::AsConstant(out->shape[d]) == 1) {
      index[d] = 0;
      continue;
    }
    vars.push_back(b.LoopVar("i" + std::to_string(d)));
    extents.push_back(out->shape[d]);
    index[d] = vars.back();
  }
  std::vector<tir::Var> inner_vars;
  std::vector<PrimExpr> inner_extents;
  for (size_t d : {row, last}) {
    const PrimExpr& dim = out->shape[d];
    const std::string name = "i" + std::to_string(d);
    tir::Var outer = b.LoopVar(name + "_outer"), inner = b.LoopVar(name + "_inner");
    vars.push_back(outer);
    extents.push_back(arith::Simplify(tir::FloorDiv(dim + (tile - 1), tile)));
    std::optional<int64_t> c = arith::AsConstant(dim);
    inner_vars.push_back(inner);
    inner_extents.push_back(c && *c % tile == 0 ? PrimExpr(tile)
                                                : arith::Simplify(tir::Min(PrimExpr(tile), dim - outer * tile)));
    index[d] = outer * tile + inner;
  }
  tir::Stmt nest = tir::ForNode::make(inner_vars[1], 0, inner_extents[1], tir::ForKind::kVectorized, copy(index));
  nest = tir::ForNode::make(inner_vars[0], 0, inner_extents[0], tir::ForKind::kSerial, nest);
  for (size_t k = vars.size(); k-- > 0;) {
    nest = tir::ForNode::make(vars[k], 0, extents[k], k == 0 ? tir::ForKind::kParallel : tir::ForKind::kSerial, nest);
  }
  return nest;
}

// ---- concat --------------------------------------------------------------------

// The tensors of a tuple argument as expressions a kernel can take: the fields
// of a tuple literal, or items of a tuple variable.
std::vector<graph::Expr> TupleFields(const graph::Expr& tuple) {
  if (const auto* literal = tuple.as<graph::TupleNode>()) return literal->fields;
  std::vector<graph::Expr> fields;
  const auto* sinfo = tuple->struct_info.as<graph::TupleStructInfoNode>();
  for (size_t k = 0; k < sinfo->fields.size(); ++k) {
    fields.push_back(
        graph::Expr(std::make_shared<const graph::TupleGetItemNode>(tuple, static_cast<int>(k), sinfo->fields[k])));
  }
  return fields;
}

StatusOr<StructInfo> InferConcat(const OpCall& call) {
  STRATA_ASSIGN_OR_RETURN(std::vector<const TensorStructInfoNode*> xs, TensorTupleArg(call, 0));
  if (xs.empty()) return ErrorStatus() << call.name() << ": argument 'inputs' must hold at least one tensor";
  const auto& fields = call.arg_sinfo(0).as<graph::TupleStructInfoNode>()->fields;
  auto text = [&](size_t k) {
    return "field " + std::to_string(k) + " of inputs: " + analysis::StructInfoText(fields[k]);
  };
  DataType dtype = DataType::Void();
  int ndim = -1;
  size_t dtype_from = 0, ndim_from = 0;
  for (size_t k = 0; k < xs.size(); ++k) {
    if (!xs[k]->dtype.is_void()) {
      if (!dtype.is_void() && xs[k]->dtype != dtype) {
        return ErrorStatus() << call.name() << ": " << text(dtype_from) << " and " << text(k)
                             << " have different dtypes (" << dtype.ToString() << " vs " << xs[k]->dtype.ToString()
                             << "); cast one of them";
      }
      dtype = xs[k]->dtype;
      dtype_from = k;
    }
    if (xs[k]->ndim >= 0) {
      if (ndim >= 0 && xs[k]->ndim != ndim) {
        return ErrorStatus() << call.name() << ": " << text(ndim_from) << " and " << text(k) << " have different ranks";
      }
      ndim = xs[k]->ndim;
      ndim_from = k;
    }
  }
  if (ndim < 0) return TensorStructInfoNode::make_ndim(-1, dtype);
  STRATA_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(call, "axis", call.IntAttr("axis"), ndim));
  for (const TensorStructInfoNode* x : xs) {
    if (!x->shape) return TensorStructInfoNode::make_ndim(ndim, dtype);
  }
  std::vector<PrimExpr> dims;
  for (int64_t d = 0; d < ndim; ++d) {
    if (d == axis) {
      PrimExpr sum = 0;
      for (const TensorStructInfoNode* x : xs) sum = sum + (*x->shape)[d];
      dims.push_back(SimplifyDim(sum));
      continue;
    }
    // A constant wins over symbolic dims, which the kernel checks against it.
    size_t pick = 0;
    for (size_t k = 0; k < xs.size(); ++k) {
      if (arith::AsConstant((*xs[k]->shape)[d])) {
        pick = k;
        break;
      }
    }
    const PrimExpr& dim = (*xs[pick]->shape)[d];
    for (size_t k = 0; k < xs.size(); ++k) {
      std::optional<int64_t> a = arith::AsConstant(dim), c = arith::AsConstant((*xs[k]->shape)[d]);
      if (a && c && *a != *c) {
        return ErrorStatus() << call.name() << ": " << text(pick) << " and " << text(k) << " differ in dimension " << d
                             << " (" << *a << " vs " << *c << "); only axis " << axis << " may differ";
      }
    }
    dims.push_back(dim);
  }
  return TensorStructInfoNode::make(std::move(dims), dtype);
}

StatusOr<tir::Stmt> ConcatKernel(const OpCall& call, KernelBuilder& b) {
  const std::vector<graph::Expr> fields = TupleFields(call.arg(0));
  std::vector<tir::Buffer> ins;
  for (size_t k = 0; k < fields.size(); ++k) {
    const std::string number = std::to_string(k);
    STRATA_ASSIGN_OR_RETURN(tir::Buffer in, b.Input(fields[k], "A" + number, "field " + number + " of inputs"));
    ins.push_back(in);
  }
  STRATA_ASSIGN_OR_RETURN(tir::Buffer out, b.Output(call.call().struct_info, "Out"));
  STRATA_ASSIGN_OR_RETURN(int64_t axis,
                          NormalizeAxis(call, "axis", call.IntAttr("axis"), static_cast<int64_t>(out->shape.size())));
  std::vector<tir::Stmt> stmts;
  for (size_t k = 0; k < ins.size(); ++k) {
    for (size_t d = 0; d < out->shape.size(); ++d) {
      if (static_cast<int64_t>(d) == axis || arith::ProveEqual(ins[k]->shape[d], out->shape[d])) continue;
      stmts.push_back(tir::AssertStmtNode::make(Eq(ins[k]->shape[d], out->shape[d]),
                                                "field " + std::to_string(k) + " of inputs dimension " +
                                                    std::to_string(d) + " must be " + DimText(out->shape[d]) +
                                                    " to match the other inputs"));
    }
  }
  PrimExpr offset = 0;
  for (const tir::Buffer& in : ins) {
    stmts.push_back(CopyNest(b, in->shape, [&](const std::vector<PrimExpr>& index) {
      std::vector<PrimExpr> out_index = index;
      out_index[axis] = offset + index[axis];
      return Store(out, out_index, Load(in, index));
    }));
    offset = arith::Simplify(offset + in->shape[axis]);
  }
  return tir::SeqStmtNode::make(std::move(stmts));
}

// ---- split ---------------------------------------------------------------------

// The extents of the parts of `dim` that split's attribute asks for.
StatusOr<std::vector<PrimExpr>> SplitExtents(const OpCall& call, const PrimExpr& dim, int64_t axis) {
  auto [values, sections] = IntOrInts(call, "indices_or_sections");
  std::vector<PrimExpr> extents;
  std::optional<int64_t> c = arith::AsConstant(dim);
  if (sections) {
    const int64_t n = values[0];
    if (n < 1) {
      return ErrorStatus() << call.name() << ": indices_or_sections " << n << " must be a positive number of sections";
    }
    if (c && *c % n != 0) {
      return ErrorStatus() << call.name() << ": cannot split " << ArgText(call, 0) << " into " << n
                           << " equal sections along axis " << axis << " (" << *c << " is not a multiple of " << n
                           << ")";
    }
    extents.assign(n, SimplifyDim(tir::FloorDiv(dim, n)));
  } else {
    int64_t previous = 0;
    for (int64_t index : values) {
      if (index < previous) {
        return ErrorStatus() << call.name() << ": indices_or_sections " << ir::PrintInts(values)
                             << " must be non-negative and in increasing order";
      }
      extents.push_back(index - previous);
      previous = index;
    }
    if (c && previous > *c) {
      return ErrorStatus() << call.name() << ": cannot split " << ArgText(call, 0) << " at indices "
                           << ir::PrintInts(values) << " along axis " << axis << " (its extent is " << *c << ")";
    }
    extents.push_back(SimplifyDim(dim - previous));
  }
  if (extents.size() < 2) {
    return ErrorStatus() << call.name() << ": indices_or_sections "
                         << (sections ? std::to_string(values[0]) : ir::PrintInts(values))
                         << " gives one part; split needs at least two";
  }
  return extents;
}

StatusOr<StructInfo> InferSplit(const OpCall& call) {
  STRATA_ASSIGN_OR_RETURN(const TensorStructInfoNode* x, TensorArg(call, 0));
  const int64_t axis_attr = call.IntAttr("axis");
  if (!x->shape) {
    int64_t axis = 0;
    if (x->ndim >= 0) {
      STRATA_ASSIGN_OR_RETURN(axis, NormalizeAxis(call, "axis", axis_attr, x->ndim));
    }
    // Only the number of parts is known; count them against a symbolic extent.
    STRATA_ASSIGN_OR_RETURN(std::vector<PrimExpr> extents, SplitExtents(call, tir::Var("d"), axis));
    return graph::TupleStructInfoNode::make(
        std::vector<StructInfo>(extents.size(), TensorStructInfoNode::make_ndim(x->ndim, x->dtype)));
  }
  STRATA_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(call, "axis", axis_attr, x->ndim));
  STRATA_ASSIGN_OR_RETURN(std::vector<PrimExpr> extents, SplitExtents(call, (*x->shape)[axis], axis));
  std::vector<StructInfo> fields;
  for (const PrimExpr& extent : extents) {
    std::vector<PrimExpr> dims = *x->shape;
    dims[axis] = extent;
    fields.push_back(TensorStructInfoNode::make(std::move(dims), x->dtype));
  }
  return graph::TupleStructInfoNode::make(std::move(fields));
}

StatusOr<tir::Stmt> SplitKernel(const OpCall& call, KernelBuilder& b) {
  STRATA_ASSIGN_OR_RETURN(tir::Buffer in, b.Input(call.arg(0), "A", call.arg_name(0)));
  const auto* tuple = call.call().struct_info.as<graph::TupleStructInfoNode>();
  std::vector<tir::Buffer> outs;
  for (size_t k = 0; k < tuple->fields.size(); ++k) {
    STRATA_ASSIGN_OR_RETURN(tir::Buffer out, b.Output(tuple->fields[k], "Out" + std::to_string(k)));
    outs.push_back(out);
  }
  STRATA_ASSIGN_OR_RETURN(int64_t axis,
                          NormalizeAxis(call, "axis", call.IntAttr("axis"), static_cast<int64_t>(in->shape.size())));
  // Each part starts where the previous one ends. The parts cover the input
  // exactly unless equal sections do not divide it (at indices, an extent short
  // of the last index makes the last part's extent negative, which its
  // allocation rejects).
  std::vector<tir::Stmt> stmts;
  std::vector<PrimExpr> starts = {0};
  for (const tir::Buffer& out : outs) starts.push_back(arith::Simplify(starts.back() + out->shape[axis]));
  const PrimExpr dim = in->shape[axis];
  if (!arith::ProveEqual(starts.back(), dim)) {
    stmts.push_back(tir::AssertStmtNode::make(Eq(starts.back(), dim),
                                              "argument 'x' dimension " + std::to_string(axis) + " (" + DimText(dim) +
                                                  ") must be a multiple of " + std::to_string(outs.size()) +
                                                  " to split it into equal sections"));
  }
  for (size_t k = 0; k < outs.size(); ++k) {
    stmts.push_back(CopyNest(b, outs[k]->shape, [&](const std::vector<PrimExpr>& index) {
      std::vector<PrimExpr> in_index = index;
      in_index[axis] = starts[k] + index[axis];
      return Store(outs[k], index, Load(in, in_index));
    }));
  }
  return tir::SeqStmtNode::make(std::move(stmts));
}

// ---- strided_slice -------------------------------------------------------------

// Bounds beyond this are "to the end" (no tensor dimension comes near it), so
// INT64_MAX / INT64_MIN style sentinels need no min/max against the extent.
constexpr int64_t kBeyondAnyDim = int64_t{1} << 62;

// The first index and the number of elements of a Python slice
// [begin:end:stride] of an axis of extent `dim`.
struct SliceRange {
  PrimExpr start, extent;
};

// `begin` and `end` may be symbolic (end=[t]): a bound whose sign is provable
// clamps like a constant of that sign; one whose sign is not keeps the choice
// (select(v < 0, ...)) for the kernel and the shape function to evaluate.
SliceRange Slice(const PrimExpr& dim, const PrimExpr& begin, const PrimExpr& end, int64_t stride) {
  const PrimExpr lower = stride > 0 ? 0 : -1;
  const PrimExpr upper = stride > 0 ? dim : SimplifyDim(dim - 1);
  auto from_end = [&](const PrimExpr& v) { return SimplifyDim(tir::Max(v + dim, lower)); };
  auto from_start = [&](const PrimExpr& v) { return SimplifyDim(tir::Min(v, upper)); };
  auto clamp = [&](const PrimExpr& v) -> PrimExpr {
    if (const int64_t* c = tir::AsConstInt(v)) {
      if (*c >= kBeyondAnyDim) return upper;
      if (*c <= -kBeyondAnyDim) return lower;
      return *c < 0 ? from_end(v) : from_start(v);
    }
    if (arith::ProveNonNegative(v)) return from_start(v);
    if (arith::ProveNonNegative(SimplifyDim(PrimExpr(-1) - v))) return from_end(v);
    return tir::SelectNode::make(tir::BinaryOpNode::make(tir::PrimExprKind::kLT, v, PrimExpr(0)), from_end(v),
                                 from_start(v));
  };
  // With a positive stride a non-negative begin needs no clamping: past the
  // end, the extent comes out 0 either way.
  const int64_t* constant_begin = tir::AsConstInt(begin);
  const bool plain_begin = stride > 0 && (constant_begin ? *constant_begin >= 0 && *constant_begin < kBeyondAnyDim
                                                         : arith::ProveNonNegative(begin));
  const PrimExpr start = plain_begin ? begin : clamp(begin);
  const PrimExpr stop = clamp(end);
  const int64_t step = std::abs(stride);
  const PrimExpr span = stride > 0 ? stop - start : start - stop;
  return {start, SimplifyDim(tir::Max(tir::FloorDiv(span + (step - 1), step), 0))};
}

struct SliceSpec {
  std::vector<int64_t> axes, strides;
  std::vector<PrimExpr> begin, end;  // may be symbolic
};

StatusOr<SliceSpec> SliceAttrs(const OpCall& call, int64_t ndim) {
  SliceSpec spec;
  spec.begin = call.IntExprsAttr("begin");
  spec.end = call.IntExprsAttr("end");
  const size_t n = spec.begin.size();
  spec.strides = call.HasAttr("strides") ? call.IntsAttr("strides") : std::vector<int64_t>(n, 1);
  std::vector<int64_t> axes;
  if (call.HasAttr("axes")) {
    axes = call.IntsAttr("axes");
  } else {
    for (size_t k = 0; k < n; ++k) axes.push_back(static_cast<int64_t>(k));
  }
  if (spec.end.size() != n || spec.strides.size() != n || axes.size() != n) {
    return ErrorStatus() << call.name() << ": begin " << ir::PrintAttrValue(ir::MakeIntList(spec.begin)) << ", end "
                         << ir::PrintAttrValue(ir::MakeIntList(spec.end)) << ", strides " << ir::PrintInts(spec.strides)
                         << " and axes " << ir::PrintInts(axes) << " must have the same length";
  }
  for (int64_t s : spec.strides) {
    if (s == 0) return ErrorStatus() << call.name() << ": strides " << ir::PrintInts(spec.strides) << " contain 0";
  }
  if (ndim >= 0) {
    STRATA_ASSIGN_OR_RETURN(spec.axes, DistinctAxes(call, "axes", axes, ndim));
  }
  return spec;
}

StatusOr<StructInfo> InferStridedSlice(const OpCall& call) {
  STRATA_ASSIGN_OR_RETURN(const TensorStructInfoNode* x, TensorArg(call, 0));
  STRATA_ASSIGN_OR_RETURN(SliceSpec spec, SliceAttrs(call, x->ndim));
  if (!x->shape) return call.arg_sinfo(0);
  std::vector<PrimExpr> dims = *x->shape;
  for (size_t k = 0; k < spec.axes.size(); ++k) {
    dims[spec.axes[k]] = Slice((*x->shape)[spec.axes[k]], spec.begin[k], spec.end[k], spec.strides[k]).extent;
  }
  return TensorStructInfoNode::make(std::move(dims), x->dtype);
}

StatusOr<tir::Stmt> StridedSliceKernel(const OpCall& call, KernelBuilder& b) {
  STRATA_ASSIGN_OR_RETURN(tir::Buffer in, b.Input(call.arg(0), "A", call.arg_name(0)));
  STRATA_ASSIGN_OR_RETURN(tir::Buffer out, b.Output(call.call().struct_info, "Out"));
  STRATA_ASSIGN_OR_RETURN(SliceSpec spec, SliceAttrs(call, static_cast<int64_t>(in->shape.size())));
  std::vector<PrimExpr> starts(in->shape.size(), 0), strides(in->shape.size(), 1);
  for (size_t k = 0; k < spec.axes.size(); ++k) {
    const int64_t axis = spec.axes[k];
    // Symbolic bounds in the program's variables (scalar parameters when no
    // input's shape binds them).
    starts[axis] = Slice(in->shape[axis], b.Dim(spec.begin[k]), b.Dim(spec.end[k]), spec.strides[k]).start;
    strides[axis] = spec.strides[k];
  }
  return CopyNest(b, out->shape, [&](const std::vector<PrimExpr>& index) {
    std::vector<PrimExpr> in_index;
    for (size_t d = 0; d < index.size(); ++d) in_index.push_back(starts[d] + index[d] * strides[d]);
    return Store(out, index, Load(in, in_index));
  });
}

// ---- take ----------------------------------------------------------------------

StatusOr<StructInfo> InferTake(const OpCall& call) {
  STRATA_ASSIGN_OR_RETURN(const TensorStructInfoNode* x, TensorArg(call, 0));
  STRATA_ASSIGN_OR_RETURN(const TensorStructInfoNode* indices, TensorArg(call, 1));
  if (!indices->dtype.is_void() && !indices->dtype.is_integral()) {
    return ErrorStatus() << call.name() << ": " << ArgText(call, 1) << " must be an integer tensor";
  }
  if (!call.HasAttr("axis")) {
    return indices->shape ? TensorStructInfoNode::make(*indices->shape, x->dtype)
                          : TensorStructInfoNode::make_ndim(indices->ndim, x->dtype);
  }
  if (x->ndim < 0) return TensorStructInfoNode::make_ndim(-1, x->dtype);
  STRATA_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(call, "axis", call.IntAttr("axis"), x->ndim));
  if (indices->ndim < 0) return TensorStructInfoNode::make_ndim(-1, x->dtype);
  if (!x->shape || !indices->shape) return TensorStructInfoNode::make_ndim(x->ndim - 1 + indices->ndim, x->dtype);
  std::vector<PrimExpr> dims(x->shape->begin(), x->shape->begin() + axis);
  dims.insert(dims.end(), indices->shape->begin(), indices->shape->end());
  dims.insert(dims.end(), x->shape->begin() + axis + 1, x->shape->end());
  return TensorStructInfoNode::make(std::move(dims), x->dtype);
}

StatusOr<tir::Stmt> TakeKernel(const OpCall& call, KernelBuilder& b) {
  STRATA_ASSIGN_OR_RETURN(tir::Buffer in, b.Input(call.arg(0), "A", call.arg_name(0)));
  STRATA_ASSIGN_OR_RETURN(tir::Buffer indices, b.Input(call.arg(1), "I", call.arg_name(1)));
  STRATA_ASSIGN_OR_RETURN(tir::Buffer out, b.Output(call.call().struct_info, "Out"));
  const bool flat = !call.HasAttr("axis");
  int64_t axis = 0;
  if (!flat) {
    STRATA_ASSIGN_OR_RETURN(axis,
                            NormalizeAxis(call, "axis", call.IntAttr("axis"), static_cast<int64_t>(in->shape.size())));
  }
  const PrimExpr extent = flat ? Product(in->shape) : in->shape[axis];
  // Every index is checked before any is used, in a loop of its own, so the
  // gather below stays free of branches.
  tir::Stmt check =
      CheckIndicesInRange(b, indices, extent,
                          flat ? "x flattened to " + DimText(extent) + " elements"
                               : "axis " + std::to_string(axis) + " of x (extent " + DimText(extent) + ")");
  const size_t index_rank = indices->shape.size();
  tir::Stmt gather = CopyNest(b, out->shape, [&](const std::vector<PrimExpr>& index) {
    const size_t first = flat ? 0 : axis;
    PrimExpr i = IndexAsI64(indices, std::vector<PrimExpr>(index.begin() + first, index.begin() + first + index_rank));
    i = tir::SelectNode::make(Bin(PrimExprKind::kLT, i, 0), i + extent, i);
    std::vector<PrimExpr> in_index;
    if (flat) {
      in_index = Unravel(i, in->shape);
    } else {
      in_index.assign(index.begin(), index.begin() + axis);
      in_index.push_back(i);
      in_index.insert(in_index.end(), index.begin() + axis + index_rank, index.end());
    }
    return Store(out, index, Load(in, in_index));
  });
  return tir::SeqStmtNode::make({check, gather});
}
// ---- broadcast_to --------------------------------------------------------------

StatusOr<StructInfo> InferBroadcastTo(const OpCall& call) {
  STRATA_ASSIGN_OR_RETURN(const TensorStructInfoNode* x, TensorArg(call, 0));
  int ndim = 0;
  STRATA_ASSIGN_OR_RETURN(std::optional<std::vector<PrimExpr>> target, ShapeDims(call, 1, &ndim));
  if (x->ndim > ndim) {
    return ErrorStatus() << call.name() << ": cannot broadcast " << ArgText(call, 0) << " to a shape of rank " << ndim
                         << ": the target has fewer dimensions";
  }
  if (!target) return TensorStructInfoNode::make_ndim(ndim, x->dtype);
  if (x->shape) {
    const size_t offset = target->size() - x->shape->size();
    for (size_t d = 0; d < x->shape->size(); ++d) {
      std::optional<int64_t> c = arith::AsConstant((*x->shape)[d]), t = arith::AsConstant((*target)[d + offset]);
      if (c && t && *c != 1 && *c != *t) {
        return ErrorStatus() << call.name() << ": cannot broadcast " << ArgText(call, 0) << " to "
                             << ir::PrintShape(*target) << ": dimension " << d << " of x is " << *c << ", not 1 or "
                             << *t;
      }
    }
  }
  return TensorStructInfoNode::make(*target, x->dtype);
}

StatusOr<tir::Stmt> BroadcastToKernel(const OpCall& call, KernelBuilder& b) {
  STRATA_ASSIGN_OR_RETURN(tir::Buffer in, b.Input(call.arg(0), "A", call.arg_name(0)));
  STRATA_ASSIGN_OR_RETURN(tir::Buffer out, b.Output(call.call().struct_info, "Out"));
  std::vector<tir::Stmt> checks;
  BroadcastChecks("argument 'x'", in->shape, out->shape, &checks);
  tir::Stmt copy = CopyNest(b, out->shape, [&](const std::vector<PrimExpr>& index) {
    return Store(out, index, Load(in, BroadcastIndex(in->shape, out->shape, index)));
  });
  return tir::SeqStmtNode::make(Checks(std::move(checks), copy));
}

// ---- zeros, ones, full ---------------------------------------------------------

// `value` as a constant of `dtype`, or an error when the dtype cannot hold it.
StatusOr<PrimExpr> FillValue(const OpCall& call, DataType dtype, double value) {
  if (dtype.is_float()) return tir::FloatImm(dtype, value);
  if (!IsExactInteger(value, dtype)) {
    return ErrorStatus() << call.name() << ": fill value " << value << " is not representable in dtype "
                         << dtype.ToString();
  }
  return tir::IntImm(dtype, SaturatingIntegerBits(value, dtype));  // exact here; u64 above INT64_MAX keeps its bits
}

double FillOf(const OpCall& call, double constant) {
  return call.def().name == "full" ? call.FloatAttr("fill_value") : constant;
}

StatusOr<StructInfo> InferFill(const OpCall& call, double constant) {
  const DataType dtype = call.DataTypeAttr("dtype");
  STRATA_RETURN_IF_ERROR(FillValue(call, dtype, FillOf(call, constant)).status());
  int ndim = 0;
  STRATA_ASSIGN_OR_RETURN(std::optional<std::vector<PrimExpr>> dims, ShapeDims(call, 0, &ndim));
  if (!dims) return TensorStructInfoNode::make_ndim(ndim, dtype);
  return TensorStructInfoNode::make(*dims, dtype);
}

OpDef Fill(const std::string& name, double constant) {
  std::vector<AttrDef> attrs = {AttrDef{"dtype", AttrKind::kDataType, ir::AttrValue(DataType::F32())}};
  if (name == "full") attrs.push_back(AttrDef{"fill_value", AttrKind::kFloat, std::nullopt});
  return OpDef{name,
               {"shape"},
               0,
               std::move(attrs),
               [constant](const OpCall& call) { return InferFill(call, constant); },
               [constant](const OpCall& call, KernelBuilder& b) -> StatusOr<tir::Stmt> {
                 STRATA_ASSIGN_OR_RETURN(tir::Buffer out, b.Output(call.call().struct_info, "Out"));
                 STRATA_ASSIGN_OR_RETURN(PrimExpr value, FillValue(call, out->dtype, FillOf(call, constant)));
                 return CopyNest(b, out->shape,
                                 [&](const std::vector<PrimExpr>& index) { return Store(out, index, value); });
               }};
}

// arange(shape(n), start, step, offset=[e], dtype): Out[i] = e + start + i * step
// for i < n (numpy.arange with the length given; the ONNX importer derives it
// from Range). `offset` is one integer expression of shape variables, for a
// range that starts at a symbolic position (arange(past, past + seq)); integer
// dtypes only.
StatusOr<StructInfo> InferArange(const OpCall& call) {
  const DataType dtype = call.DataTypeAttr("dtype");
  if (!dtype.is_int() && !dtype.is_float()) {
    return ErrorStatus() << call.name() << ": dtype " << dtype.ToString() << " must be a signed integer or float type";
  }
  for (const char* attr : {"start", "step"}) {
    STRATA_RETURN_IF_ERROR(FillValue(call, dtype, call.FloatAttr(attr)).status());
  }
  const std::vector<PrimExpr> offset = call.IntExprsAttr("offset");
  if (offset.size() != 1) {
    return ErrorStatus() << call.name() << ": offset must hold one integer expression, got " << offset.size();
  }
  if (!dtype.is_int() && !arith::AsConstant(offset[0]).has_value()) {
    return ErrorStatus() << call.name() << ": a symbolic offset needs an integer dtype, got " << dtype.ToString();
  }
  int ndim = 0;
  STRATA_ASSIGN_OR_RETURN(std::optional<std::vector<PrimExpr>> dims, ShapeDims(call, 0, &ndim));
  if (ndim != 1) return ErrorStatus() << call.name() << ": shape must have one dimension (the length), got " << ndim;
  if (!dims) return TensorStructInfoNode::make_ndim(1, dtype);
  return TensorStructInfoNode::make(*dims, dtype);
}

StatusOr<tir::Stmt> ArangeKernel(const OpCall& call, KernelBuilder& b) {
  STRATA_ASSIGN_OR_RETURN(tir::Buffer out, b.Output(call.call().struct_info, "Out"));
  STRATA_ASSIGN_OR_RETURN(PrimExpr start, FillValue(call, out->dtype, call.FloatAttr("start")));
  STRATA_ASSIGN_OR_RETURN(PrimExpr step, FillValue(call, out->dtype, call.FloatAttr("step")));
  const PrimExpr offset = b.Dim(call.IntExprsAttr("offset")[0]);
  if (const std::optional<int64_t> c = arith::AsConstant(offset); !c || *c != 0) {
    const PrimExpr cast = offset.dtype() == out->dtype ? offset : tir::CastNode::make(out->dtype, offset);
    start = arith::Simplify(start + cast);
  }
  return CopyNest(b, out->shape, [&](const std::vector<PrimExpr>& index) {
    return Store(out, index, start + tir::CastNode::make(out->dtype, index[0]) * step);
  });
}

}  // namespace

std::vector<OpDef> ManipulationOps() {
  const auto required_ints = [](const std::string& name) { return AttrDef{name, AttrKind::kInts, std::nullopt}; };
  const auto required_int_exprs = [](const std::string& name) {
    return AttrDef{name, AttrKind::kIntExprs, std::nullopt};
  };
  const auto optional_ints = [](const std::string& name) {
    return AttrDef{name, AttrKind::kInts, std::nullopt, /*optional=*/true};
  };
  const auto int_attr = [](const std::string& name, int64_t value) {
    return AttrDef{name, AttrKind::kInt, ir::AttrValue(value)};
  };
  return {
      OpDef{"arange",
            {"shape"},
            0,
            {AttrDef{"start", AttrKind::kFloat, ir::AttrValue(0.0)},
             AttrDef{"step", AttrKind::kFloat, ir::AttrValue(1.0)},
             AttrDef{"offset", AttrKind::kIntExprs, ir::MakeIntList({PrimExpr(0)})},
             AttrDef{"dtype", AttrKind::kDataType, ir::AttrValue(DataType::I64())}},
            InferArange,
            ArangeKernel},
      OpDef{"transpose", {"x"}, 0, {optional_ints("axes")}, InferTranspose, TransposeKernel},
      OpDef{"concat", {"inputs"}, 0, {int_attr("axis", 0)}, InferConcat, ConcatKernel},
      OpDef{"split", {"x"}, 0, {required_ints("indices_or_sections"), int_attr("axis", 0)}, InferSplit, SplitKernel},
      OpDef{"strided_slice",
            {"x"},
            0,
            {required_int_exprs("begin"), required_int_exprs("end"), optional_ints("strides"), optional_ints("axes")},
            InferStridedSlice,
            StridedSliceKernel},
      OpDef{"take",
            {"x", "indices"},
            0,
            {AttrDef{"axis", AttrKind::kInt, std::nullopt, /*optional=*/true}},
            InferTake,
            TakeKernel},
      OpDef{"broadcast_to", {"x", "shape"}, 0, {}, InferBroadcastTo, BroadcastToKernel},
      Fill("zeros", 0.0),
      Fill("ones", 1.0),
      Fill("full", 0.0),
  };
}

}  // namespace strata::op
