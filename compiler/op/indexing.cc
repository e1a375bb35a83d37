// Data-dependent indexing, scans and arg reductions: gather_elements,
// gather_nd, scatter_elements, scatter_nd, cumsum, argmax, argmin.
//
// The gathers check every index before reading anything (a loop of asserts of
// its own, as take does), then gather without branches: an index in
// [-extent, extent) wraps once, as ONNX and numpy define negative indices.
#include "compiler/analysis/struct_info_util.h"
#include "compiler/ir/arith/simplify.h"
#include "compiler/ir/printer.h"
#include "compiler/op/builtin_ops.h"
#include "compiler/op/data_movement.h"
#include "compiler/op/kernel_builder.h"
#include "compiler/op/op_util.h"

namespace strata::op {
namespace {

using analysis::DimText;
using tir::PrimExprKind;

using movement::Bin;
using movement::Load;
using movement::Store;

PrimExpr AsI64(PrimExpr v) { return v.dtype() == DataType::I64() ? v : tir::CastNode::make(DataType::I64(), v); }

PrimExpr Wrap(const PrimExpr& i, const PrimExpr& extent) {
  return tir::SelectNode::make(Bin(PrimExprKind::kLT, i, 0), i + extent, i);
}

PrimExpr InRange(const PrimExpr& v, const PrimExpr& extent) {
  return Bin(PrimExprKind::kAnd, Bin(PrimExprKind::kLE, -extent, v), Bin(PrimExprKind::kLT, v, extent));
}

// Serial loops over `shape` around body(index) (asserts are not vectorized).
tir::Stmt SerialNest(KernelBuilder& b, const std::vector<PrimExpr>& shape,
                     const std::function<tir::Stmt(const std::vector<PrimExpr>& index)>& body) {
  std::vector<tir::Var> vars;
  std::vector<PrimExpr> index;
  for (size_t d = 0; d < shape.size(); ++d) {
    vars.push_back(b.LoopVar("c" + std::to_string(d)));
    index.push_back(vars.back());
  }
  tir::Stmt stmt = body(index);
  for (size_t d = vars.size(); d-- > 0;) stmt = tir::ForNode::make(vars[d], 0, shape[d], tir::ForKind::kSerial, stmt);
  return stmt;
}

StatusOr<const TensorStructInfoNode*> IndexTensorArg(const OpCall& call, size_t i) {
  STRATA_ASSIGN_OR_RETURN(const TensorStructInfoNode* t, TensorArg(call, i));
  if (!t->dtype.is_void() && !t->dtype.is_int()) {
    return ErrorStatus() << call.name() << ": " << ArgText(call, i) << " must be a signed integer tensor";
  }
  return t;
}

// ---- gather_elements -------------------------------------------------------------

StatusOr<StructInfo> InferGatherElements(const OpCall& call) {
  STRATA_ASSIGN_OR_RETURN(const TensorStructInfoNode* x, TensorArg(call, 0));
  STRATA_ASSIGN_OR_RETURN(const TensorStructInfoNode* indices, IndexTensorArg(call, 1));
  if (x->ndim >= 0 && indices->ndim >= 0 && x->ndim != indices->ndim) {
    return ErrorStatus() << call.name() << ": " << ArgText(call, 1) << " must have the rank of " << ArgText(call, 0);
  }
  const int ndim = std::max(x->ndim, indices->ndim);
  if (ndim >= 0) STRATA_RETURN_IF_ERROR(NormalizeAxis(call, "axis", call.IntAttr("axis"), ndim).status());
  return indices->shape ? TensorStructInfoNode::make(*indices->shape, x->dtype)
                        : TensorStructInfoNode::make_ndim(ndim, x->dtype);
}

// The run-time checks of gather_elements and scatter_elements, before any
// element is read: outside `axis` an index position stands for the same
// position of x, so indices may not be larger than x there; and every index
// lies in [-extent, extent) of x's `axis`.
void AppendElementIndexChecks(KernelBuilder& b, const tir::Buffer& in, const tir::Buffer& indices, int64_t axis,
                              std::vector<tir::Stmt>* stmts) {
  const PrimExpr extent = in->shape[axis];
  for (int64_t d = 0; d < static_cast<int64_t>(in->shape.size()); ++d) {
    if (d == axis || arith::CanProve(Bin(PrimExprKind::kLE, indices->shape[d], in->shape[d]))) continue;
    stmts->push_back(tir::AssertStmtNode::make(Bin(PrimExprKind::kLE, indices->shape[d], in->shape[d]),
                                               "argument 'indices' dimension " + std::to_string(d) + " (" +
                                                   DimText(indices->shape[d]) + ") must not exceed dimension " +
                                                   std::to_string(d) + " of x (" + DimText(in->shape[d]) + ")"));
  }
  stmts->push_back(SerialNest(b, indices->shape, [&](const std::vector<PrimExpr>& at) {
    return tir::AssertStmtNode::make(InRange(AsI64(Load(indices, at)), extent),
                                     "argument 'indices' holds an index out of range for axis " + std::to_string(axis) +
                                         " of x (extent " + DimText(extent) + "); indices must lie in [-" +
                                         DimText(extent) + ", " + DimText(extent) + ")");
  }));
}

StatusOr<tir::Stmt> GatherElementsKernel(const OpCall& call, KernelBuilder& b) {
  STRATA_ASSIGN_OR_RETURN(tir::Buffer in, b.Input(call.arg(0), "A", call.arg_name(0)));
  STRATA_ASSIGN_OR_RETURN(tir::Buffer indices, b.Input(call.arg(1), "I", call.arg_name(1)));
  STRATA_ASSIGN_OR_RETURN(tir::Buffer out, b.Output(call.call().struct_info, "Out"));
  const int64_t rank = static_cast<int64_t>(in->shape.size());
  STRATA_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(call, "axis", call.IntAttr("axis"), rank));
  const PrimExpr extent = in->shape[axis];
  std::vector<tir::Stmt> stmts;
  AppendElementIndexChecks(b, in, indices, axis, &stmts);
  stmts.push_back(b.Elementwise(out->shape, [&](const std::vector<PrimExpr>& index) {
    std::vector<PrimExpr> in_index = index;
    in_index[axis] = Wrap(AsI64(Load(indices, index)), extent);
    return Store(out, index, Load(in, in_index));
  }));
  return tir::SeqStmtNode::make(std::move(stmts));
}

// ---- gather_nd ---------------------------------------------------------------------

// The tuple length k (the last dim of indices), which must be a constant.
StatusOr<int64_t> TupleLength(const OpCall& call, const TensorStructInfoNode* indices, int64_t x_ndim) {
  const std::optional<int64_t> k =
      indices->shape && !indices->shape->empty() ? arith::AsConstant(indices->shape->back()) : std::nullopt;
  if (!k) {
    return ErrorStatus() << call.name() << ": the last dimension of " << ArgText(call, 1)
                         << " (the index tuple length) must be known at compile time";
  }
  if (*k < 1 || (x_ndim >= 0 && *k > x_ndim)) {
    return ErrorStatus() << call.name() << ": index tuples of length " << *k << " cannot address " << ArgText(call, 0)
                         << " (rank " << x_ndim << ")";
  }
  return *k;
}

// Asserts every index tuple (the last dim of `indices`, length k) addresses x.
tir::Stmt CheckIndexTuples(KernelBuilder& b, const tir::Buffer& in, const tir::Buffer& indices, size_t k) {
  const std::vector<PrimExpr> tuples(indices->shape.begin(), indices->shape.end() - 1);
  return SerialNest(b, tuples, [&](const std::vector<PrimExpr>& at) {
    std::vector<tir::Stmt> checks;
    for (size_t j = 0; j < k; ++j) {
      std::vector<PrimExpr> element = at;
      element.push_back(static_cast<int64_t>(j));
      checks.push_back(tir::AssertStmtNode::make(InRange(AsI64(Load(indices, element)), in->shape[j]),
                                                 "argument 'indices' holds an index out of range for dimension " +
                                                     std::to_string(j) + " of x (extent " + DimText(in->shape[j]) +
                                                     ")"));
    }
    return tir::SeqStmtNode::make(std::move(checks));
  });
}

StatusOr<StructInfo> InferGatherNd(const OpCall& call) {
  STRATA_ASSIGN_OR_RETURN(const TensorStructInfoNode* x, TensorArg(call, 0));
  STRATA_ASSIGN_OR_RETURN(const TensorStructInfoNode* indices, IndexTensorArg(call, 1));
  if (indices->ndim == 0) return ErrorStatus() << call.name() << ": " << ArgText(call, 1) << " must have rank >= 1";
  if (!indices->shape || !x->shape) return TensorStructInfoNode::make_ndim(-1, x->dtype);
  STRATA_ASSIGN_OR_RETURN(int64_t k, TupleLength(call, indices, x->ndim));
  std::vector<PrimExpr> dims(indices->shape->begin(), indices->shape->end() - 1);
  dims.insert(dims.end(), x->shape->begin() + k, x->shape->end());
  return TensorStructInfoNode::make(std::move(dims), x->dtype);
}

StatusOr<tir::Stmt> GatherNdKernel(const OpCall& call, KernelBuilder& b) {
  STRATA_ASSIGN_OR_RETURN(tir::Buffer in, b.Input(call.arg(0), "A", call.arg_name(0)));
  STRATA_ASSIGN_OR_RETURN(tir::Buffer indices, b.Input(call.arg(1), "I", call.arg_name(1)));
  STRATA_ASSIGN_OR_RETURN(tir::Buffer out, b.Output(call.call().struct_info, "Out"));
  const size_t k = static_cast<size_t>(*arith::AsConstant(indices->shape.back()));
  const size_t batch_rank = indices->shape.size() - 1;
  const std::vector<PrimExpr> tuples(indices->shape.begin(), indices->shape.end() - 1);
  std::vector<tir::Stmt> stmts;
  stmts.push_back(CheckIndexTuples(b, in, indices, k));
  stmts.push_back(b.Elementwise(out->shape, [&](const std::vector<PrimExpr>& index) {
    std::vector<PrimExpr> in_index;
    for (size_t j = 0; j < k; ++j) {
      std::vector<PrimExpr> element(index.begin(), index.begin() + batch_rank);
      element.push_back(static_cast<int64_t>(j));
      in_index.push_back(Wrap(AsI64(Load(indices, element)), in->shape[j]));
    }
    in_index.insert(in_index.end(), index.begin() + batch_rank, index.end());
    return Store(out, index, Load(in, in_index));
  }));
  return tir::SeqStmtNode::make(std::move(stmts));
}

// ---- cumsum ------------------------------------------------------------------------

StatusOr<StructInfo> InferCumsum(const OpCall& call) {
  STRATA_ASSIGN_OR_RETURN(const TensorStructInfoNode* x, TensorArg(call, 0));
  if (x->ndim == 0) return ErrorStatus() << call.name() << ": " << ArgText(call, 0) << " must have rank >= 1";
  if (!x->dtype.is_void() && x->dtype.is_bool()) {
    return ErrorStatus() << call.name() << ": " << ArgText(call, 0) << " must be a numeric tensor";
  }
  if (x->ndim > 0) STRATA_RETURN_IF_ERROR(NormalizeAxis(call, "axis", call.IntAttr("axis"), x->ndim).status());
  return call.arg_sinfo(0);
}

// A running sum along the axis, serial, with the other dims as outer loops
// (the first one parallel): each element adds the previous output.
StatusOr<tir::Stmt> CumsumKernel(const OpCall& call, KernelBuilder& b) {
  STRATA_ASSIGN_OR_RETURN(tir::Buffer in, b.Input(call.arg(0), "A", call.arg_name(0)));
  STRATA_ASSIGN_OR_RETURN(tir::Buffer out, b.Output(call.call().struct_info, "Out"));
  const int64_t rank = static_cast<int64_t>(in->shape.size());
  STRATA_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(call, "axis", call.IntAttr("axis"), rank));
  const bool exclusive = call.BoolAttr("exclusive"), reverse = call.BoolAttr("reverse");
  const PrimExpr n = in->shape[axis];
  std::vector<tir::Var> vars;
  for (int64_t d = 0; d < rank; ++d) vars.push_back(b.LoopVar("i" + std::to_string(d)));
  const tir::Var step = vars[axis];
  // The position written at step s, and the one written just before it
  // (clamped into range: at s == 0 it is read but not used).
  const PrimExpr pos = reverse ? n - 1 - step : PrimExpr(step);
  const PrimExpr before = reverse ? tir::Min(pos + 1, n - 1) : tir::Max(pos - 1, 0);
  auto at = [&](const PrimExpr& p) {
    std::vector<PrimExpr> index(vars.begin(), vars.end());
    index[axis] = p;
    return index;
  };
  const PrimExpr zero = in->dtype.is_float() ? tir::FloatImm(in->dtype, 0) : tir::IntImm(in->dtype, 0);
  const PrimExpr first = Bin(PrimExprKind::kEQ, step, 0);
  const PrimExpr value = exclusive ? tir::SelectNode::make(first, zero, Load(out, at(before)) + Load(in, at(before)))
                                   : Load(in, at(pos)) + tir::SelectNode::make(first, zero, Load(out, at(before)));
  tir::Stmt stmt = tir::ForNode::make(step, 0, n, tir::ForKind::kSerial, Store(out, at(pos), value));
  const int64_t outermost = axis == 0 ? 1 : 0;
  for (int64_t d = rank; d-- > 0;) {
    if (d == axis) continue;
    const tir::ForKind kind = d == outermost ? tir::ForKind::kParallel : tir::ForKind::kSerial;
    stmt = tir::ForNode::make(vars[d], 0, in->shape[d], kind, stmt);
  }
  return stmt;
}

// ---- scatter_elements, scatter_nd ---------------------------------------------------

// Run-time checks that `updates` has the shape the scatter reads it with,
// where inference could not prove it (symbolic dims).
Status CheckUpdatesShape(const tir::Buffer& updates, const std::vector<PrimExpr>& expected,
                         std::vector<tir::Stmt>* stmts) {
  if (updates->shape.size() != expected.size()) {  // inference refuses this; a kernel never indexes past a rank
    return ErrorStatus(StatusCode::kInternal)
           << "internal: argument 'updates' has rank " << updates->shape.size() << ", expected " << expected.size();
  }
  for (size_t d = 0; d < expected.size(); ++d) {
    if (arith::ProveEqual(updates->shape[d], expected[d])) continue;
    stmts->push_back(tir::AssertStmtNode::make(Bin(PrimExprKind::kEQ, updates->shape[d], expected[d]),
                                               "argument 'updates' dimension " + std::to_string(d) + " (" +
                                                   DimText(updates->shape[d]) + ") must equal " +
                                                   DimText(expected[d])));
  }
  return Status::Ok();
}

// How a scattered update combines with the value already there.
PrimExpr Combine(const std::string& reduction, const PrimExpr& old, const PrimExpr& update) {
  if (reduction == "add") return old + update;
  if (reduction == "mul") return old * update;
  if (reduction == "max") return tir::Max(old, update);
  if (reduction == "min") return tir::Min(old, update);
  return update;
}

Status CheckReduction(const OpCall& call) {
  const std::string& r = call.StringAttr("reduction");
  if (r != "none" && r != "add" && r != "mul" && r != "max" && r != "min") {
    return ErrorStatus() << call.name() << ": reduction must be \"none\", \"add\", \"mul\", \"max\" or \"min\", got \""
                         << r << "\"";
  }
  return Status::Ok();
}

StatusOr<StructInfo> InferScatterElements(const OpCall& call) {
  STRATA_ASSIGN_OR_RETURN(const TensorStructInfoNode* x, TensorArg(call, 0));
  STRATA_ASSIGN_OR_RETURN(const TensorStructInfoNode* indices, IndexTensorArg(call, 1));
  STRATA_ASSIGN_OR_RETURN(const TensorStructInfoNode* updates, TensorArg(call, 2));
  STRATA_RETURN_IF_ERROR(SameDtype(call, 0, 2, x->dtype, updates->dtype).status());
  STRATA_RETURN_IF_ERROR(CheckReduction(call));
  if (x->ndim >= 0 && indices->ndim >= 0 && x->ndim != indices->ndim) {
    return ErrorStatus() << call.name() << ": " << ArgText(call, 1) << " must have the rank of " << ArgText(call, 0);
  }
  // ONNX: updates has the shape of indices. The ranks are compared on their own, so
  // that a rank-0 operand is not waved through by an empty loop over dimensions.
  if (indices->ndim >= 0 && updates->ndim >= 0 && indices->ndim != updates->ndim) {
    return ErrorStatus() << call.name() << ": " << ArgText(call, 2) << " must have the shape of " << ArgText(call, 1);
  }
  if (indices->shape && updates->shape) {
    for (size_t d = 0; d < indices->shape->size(); ++d) {
      if (std::optional<int64_t> diff = arith::AsConstant((*indices->shape)[d] - (*updates->shape)[d]);
          diff && *diff != 0) {
        return ErrorStatus() << call.name() << ": " << ArgText(call, 2) << " must have the shape of "
                             << ArgText(call, 1);
      }
    }
  }
  if (x->ndim >= 0) STRATA_RETURN_IF_ERROR(NormalizeAxis(call, "axis", call.IntAttr("axis"), x->ndim).status());
  return call.arg_sinfo(0);
}

// Out = x, then each update written (or combined) at its position, serially so
// that repeated indices combine in order.
StatusOr<tir::Stmt> ScatterElementsKernel(const OpCall& call, KernelBuilder& b) {
  STRATA_ASSIGN_OR_RETURN(tir::Buffer in, b.Input(call.arg(0), "A", call.arg_name(0)));
  STRATA_ASSIGN_OR_RETURN(tir::Buffer indices, b.Input(call.arg(1), "I", call.arg_name(1)));
  STRATA_ASSIGN_OR_RETURN(tir::Buffer updates, b.Input(call.arg(2), "U", call.arg_name(2)));
  STRATA_ASSIGN_OR_RETURN(tir::Buffer out, b.Output(call.call().struct_info, "Out"));
  const int64_t rank = static_cast<int64_t>(in->shape.size());
  STRATA_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(call, "axis", call.IntAttr("axis"), rank));
  const std::string& reduction = call.StringAttr("reduction");
  const PrimExpr extent = in->shape[axis];
  std::vector<tir::Stmt> stmts;
  STRATA_RETURN_IF_ERROR(CheckUpdatesShape(updates, indices->shape, &stmts));
  AppendElementIndexChecks(b, in, indices, axis, &stmts);
  stmts.push_back(b.Elementwise(
      out->shape, [&](const std::vector<PrimExpr>& index) { return Store(out, index, Load(in, index)); }));
  stmts.push_back(SerialNest(b, indices->shape, [&](const std::vector<PrimExpr>& at) {
    std::vector<PrimExpr> target = at;
    target[axis] = Wrap(AsI64(Load(indices, at)), extent);
    return Store(out, target, Combine(reduction, Load(out, target), Load(updates, at)));
  }));
  return tir::SeqStmtNode::make(std::move(stmts));
}

StatusOr<StructInfo> InferScatterNd(const OpCall& call) {
  STRATA_ASSIGN_OR_RETURN(const TensorStructInfoNode* x, TensorArg(call, 0));
  STRATA_ASSIGN_OR_RETURN(const TensorStructInfoNode* indices, IndexTensorArg(call, 1));
  STRATA_ASSIGN_OR_RETURN(const TensorStructInfoNode* updates, TensorArg(call, 2));
  STRATA_RETURN_IF_ERROR(SameDtype(call, 0, 2, x->dtype, updates->dtype).status());
  STRATA_RETURN_IF_ERROR(CheckReduction(call));
  if (indices->shape && x->shape && updates->shape) {
    STRATA_ASSIGN_OR_RETURN(int64_t k, TupleLength(call, indices, x->ndim));
    // updates: indices.shape[:-1] + x.shape[k:]
    std::vector<PrimExpr> expected(indices->shape->begin(), indices->shape->end() - 1);
    expected.insert(expected.end(), x->shape->begin() + k, x->shape->end());
    bool matches = expected.size() == updates->shape->size();
    for (size_t d = 0; matches && d < expected.size(); ++d) {
      const std::optional<int64_t> diff = arith::AsConstant(expected[d] - (*updates->shape)[d]);
      matches = !diff || *diff == 0;
    }
    if (!matches) {
      return ErrorStatus() << call.name() << ": " << ArgText(call, 2) << " must have shape " << ir::PrintShape(expected)
                           << " (indices' leading dims, then x's from dim " << k << ")";
    }
  }
  return call.arg_sinfo(0);
}

StatusOr<tir::Stmt> ScatterNdKernel(const OpCall& call, KernelBuilder& b) {
  STRATA_ASSIGN_OR_RETURN(tir::Buffer in, b.Input(call.arg(0), "A", call.arg_name(0)));
  STRATA_ASSIGN_OR_RETURN(tir::Buffer indices, b.Input(call.arg(1), "I", call.arg_name(1)));
  STRATA_ASSIGN_OR_RETURN(tir::Buffer updates, b.Input(call.arg(2), "U", call.arg_name(2)));
  STRATA_ASSIGN_OR_RETURN(tir::Buffer out, b.Output(call.call().struct_info, "Out"));
  const std::string& reduction = call.StringAttr("reduction");
  const size_t k = static_cast<size_t>(*arith::AsConstant(indices->shape.back()));
  const std::vector<PrimExpr> tuples(indices->shape.begin(), indices->shape.end() - 1);
  const std::vector<PrimExpr> slice(in->shape.begin() + k, in->shape.end());
  std::vector<tir::Stmt> stmts;
  std::vector<PrimExpr> expected_updates = tuples;
  expected_updates.insert(expected_updates.end(), slice.begin(), slice.end());
  STRATA_RETURN_IF_ERROR(CheckUpdatesShape(updates, expected_updates, &stmts));
  stmts.push_back(CheckIndexTuples(b, in, indices, k));
  stmts.push_back(b.Elementwise(
      out->shape, [&](const std::vector<PrimExpr>& index) { return Store(out, index, Load(in, index)); }));
  std::vector<PrimExpr> all = tuples;
  all.insert(all.end(), slice.begin(), slice.end());
  stmts.push_back(SerialNest(b, all, [&](const std::vector<PrimExpr>& at) {
    const std::vector<PrimExpr> tuple(at.begin(), at.begin() + static_cast<int64_t>(tuples.size()));
    std::vector<PrimExpr> target;
    for (size_t j = 0; j < k; ++j) {
      std::vector<PrimExpr> element = tuple;
      element.push_back(static_cast<int64_t>(j));
      target.push_back(Wrap(AsI64(Load(indices, element)), in->shape[j]));
    }
    target.insert(target.end(), at.begin() + static_cast<int64_t>(tuples.size()), at.end());
    return Store(out, target, Combine(reduction, Load(out, target), Load(updates, at)));
  }));
  return tir::SeqStmtNode::make(std::move(stmts));
}

// ---- argmax, argmin -------------------------------------------------------------------

StatusOr<StructInfo> InferArgReduce(const OpCall& call) {
  STRATA_ASSIGN_OR_RETURN(const TensorStructInfoNode* x, TensorArg(call, 0));
  if (!x->dtype.is_void() && x->dtype.is_bool()) {
    return ErrorStatus() << call.name() << ": " << ArgText(call, 0) << " must be a numeric tensor";
  }
  if (x->ndim == 0) return ErrorStatus() << call.name() << ": " << ArgText(call, 0) << " must have rank >= 1";
  if (!x->shape) return TensorStructInfoNode::make_ndim(-1, DataType::I64());
  STRATA_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(call, "axis", call.IntAttr("axis"), x->ndim));
  if (arith::AsConstant((*x->shape)[axis]) == 0) {
    return ErrorStatus() << call.name() << ": axis " << axis << " of " << ArgText(call, 0) << " is empty";
  }
  std::vector<PrimExpr> dims = *x->shape;
  if (call.BoolAttr("keepdims")) {
    dims[axis] = 1;
  } else {
    dims.erase(dims.begin() + axis);
  }
  return TensorStructInfoNode::make(std::move(dims), DataType::I64());
}

// One serial pass along the axis per output element, keeping the best value
// and its index in locals; ties keep the first index (the last with
// select_last_index).
StatusOr<tir::Stmt> ArgReduceKernel(const OpCall& call, KernelBuilder& b, bool max) {
  STRATA_ASSIGN_OR_RETURN(tir::Buffer in, b.Input(call.arg(0), "A", call.arg_name(0)));
  STRATA_ASSIGN_OR_RETURN(tir::Buffer out, b.Output(call.call().struct_info, "Out"));
  const int64_t rank = static_cast<int64_t>(in->shape.size());
  STRATA_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(call, "axis", call.IntAttr("axis"), rank));
  const bool keepdims = call.BoolAttr("keepdims"), last = call.BoolAttr("select_last_index");
  const PrimExpr n = in->shape[axis];
  std::vector<tir::Var> vars;
  for (int64_t d = 0; d < rank; ++d) vars.push_back(b.LoopVar("i" + std::to_string(d)));
  auto at = [&](const PrimExpr& p) {
    std::vector<PrimExpr> index(vars.begin(), vars.end());
    index[axis] = p;
    return index;
  };
  tir::Buffer best = KernelBuilder::Local("best", in->dtype, {1});
  tir::Buffer best_index = KernelBuilder::Local("best_index", DataType::I64(), {1});
  const PrimExpr value = Load(in, at(vars[axis])), current = Load(best, {0});
  const PrimExprKind better =
      max ? (last ? PrimExprKind::kGE : PrimExprKind::kGT) : (last ? PrimExprKind::kLE : PrimExprKind::kLT);
  const PrimExpr take = Bin(better, value, current);
  tir::Stmt scan = tir::ForNode::make(
      vars[axis], 1, n - 1, tir::ForKind::kSerial,
      tir::SeqStmtNode::make(
          {Store(best_index, {0}, tir::SelectNode::make(take, AsI64(vars[axis]), Load(best_index, {0}))),
           Store(best, {0}, tir::SelectNode::make(take, value, current))}));
  std::vector<PrimExpr> out_index;
  for (int64_t d = 0; d < rank; ++d) {
    if (d != axis) {
      out_index.push_back(vars[d]);
    } else if (keepdims) {
      out_index.push_back(0);
    }
  }
  tir::Stmt per_output = tir::AllocateNode::make(
      best, tir::AllocateNode::make(
                best_index,
                tir::SeqStmtNode::make({Store(best, {0}, Load(in, at(0))), Store(best_index, {0}, PrimExpr(int64_t{0})),
                                        scan, Store(out, out_index, Load(best_index, {0}))})));
  const int64_t outermost = axis == 0 ? 1 : 0;
  for (int64_t d = rank; d-- > 0;) {
    if (d == axis) continue;
    per_output = tir::ForNode::make(vars[d], 0, in->shape[d],
                                    d == outermost ? tir::ForKind::kParallel : tir::ForKind::kSerial, per_output);
  }
  // An empty axis has no arg: refused before anything is read.
  return tir::SeqStmtNode::make(
      {tir::AssertStmtNode::make(Bin(PrimExprKind::kGT, n, 0), "argument 'x' dimension " + std::to_string(axis) + " (" +
                                                                   DimText(n) + ") must not be empty"),
       per_output});
}

OpDef ArgReduce(const std::string& name, bool max) {
  return OpDef{name,
               {"x"},
               0,
               {AttrDef{"axis", AttrKind::kInt, ir::AttrValue(int64_t{0})},
                AttrDef{"keepdims", AttrKind::kBool, ir::AttrValue(true)},
                AttrDef{"select_last_index", AttrKind::kBool, ir::AttrValue(false)}},
               InferArgReduce,
               [max](const OpCall& call, KernelBuilder& b) { return ArgReduceKernel(call, b, max); }};
}

}  // namespace

std::vector<OpDef> IndexingOps() {
  return {
      OpDef{"gather_elements",
            {"x", "indices"},
            0,
            {AttrDef{"axis", AttrKind::kInt, ir::AttrValue(int64_t{0})}},
            InferGatherElements,
            GatherElementsKernel},
      OpDef{"gather_nd", {"x", "indices"}, 0, {}, InferGatherNd, GatherNdKernel},
      OpDef{"cumsum",
            {"x"},
            0,
            {AttrDef{"axis", AttrKind::kInt, std::nullopt}, AttrDef{"exclusive", AttrKind::kBool, ir::AttrValue(false)},
             AttrDef{"reverse", AttrKind::kBool, ir::AttrValue(false)}},
            InferCumsum,
            CumsumKernel},
      OpDef{"scatter_elements",
            {"x", "indices", "updates"},
            0,
            {AttrDef{"axis", AttrKind::kInt, ir::AttrValue(int64_t{0})},
             AttrDef{"reduction", AttrKind::kString, ir::AttrValue(std::string("none"))}},
            InferScatterElements,
            ScatterElementsKernel},
      OpDef{"scatter_nd",
            {"x", "indices", "updates"},
            0,
            {AttrDef{"reduction", AttrKind::kString, ir::AttrValue(std::string("none"))}},
            InferScatterNd,
            ScatterNdKernel},
      ArgReduce("argmax", true),
      ArgReduce("argmin", false),
  };
}

}  // namespace strata::op
