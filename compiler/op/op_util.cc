// Shared operator helpers; see op_util.h.
#include "compiler/op/op_util.h"

#include "compiler/analysis/struct_info_util.h"
#include "compiler/ir/arith/simplify.h"

namespace strata::op {

using analysis::DimText;
using analysis::StructInfoText;

std::string ArgText(const OpCall& call, size_t i) {
  return call.arg_name(i) + ": " + StructInfoText(call.arg_sinfo(i));
}

StatusOr<const TensorStructInfoNode*> TensorArg(const OpCall& call, size_t i) {
  const StructInfo sinfo = call.arg_sinfo(i);
  const auto* tensor = sinfo.as<TensorStructInfoNode>();
  if (tensor == nullptr) {
    return ErrorStatus() << call.name() << ": argument '" << call.arg_name(i) << "' must be a tensor, got "
                         << StructInfoText(sinfo);
  }
  return tensor;
}

StatusOr<std::vector<const TensorStructInfoNode*>> TensorTupleArg(const OpCall& call, size_t i) {
  const StructInfo sinfo = call.arg_sinfo(i);
  const auto* tuple = sinfo.as<graph::TupleStructInfoNode>();
  if (tuple == nullptr) {
    return ErrorStatus() << call.name() << ": argument '" << call.arg_name(i) << "' must be a tuple of tensors, got "
                         << StructInfoText(sinfo);
  }
  std::vector<const TensorStructInfoNode*> out;
  for (size_t k = 0; k < tuple->fields.size(); ++k) {
    const auto* tensor = tuple->fields[k].as<TensorStructInfoNode>();
    if (tensor == nullptr) {
      return ErrorStatus() << call.name() << ": field " << k << " of argument '" << call.arg_name(i)
                           << "' must be a tensor, got " << StructInfoText(tuple->fields[k]);
    }
    out.push_back(tensor);
  }
  return out;
}

StatusOr<std::vector<PrimExpr>> ShapeArg(const OpCall& call, size_t i) {
  const StructInfo sinfo = call.arg_sinfo(i);
  const auto* shape = sinfo.as<graph::ShapeStructInfoNode>();
  if (shape == nullptr) {
    return ErrorStatus() << call.name() << ": argument '" << call.arg_name(i) << "' must be a shape, got "
                         << StructInfoText(sinfo);
  }
  if (!shape->values) {
    return ErrorStatus() << call.name() << ": argument '" << call.arg_name(i)
                         << "' must be a shape of known dimensions (write shape(...)), got " << StructInfoText(sinfo);
  }
  return *shape->values;
}

StatusOr<std::vector<std::optional<PrimExpr>>> BroadcastShapes(const OpCall& call, size_t lhs, size_t rhs,
                                                               const std::vector<PrimExpr>& a,
                                                               const std::vector<PrimExpr>& b) {
  const size_t rank = std::max(a.size(), b.size());
  std::vector<std::optional<PrimExpr>> out(rank);
  for (size_t k = 0; k < rank; ++k) {
    // Dimension k of the result, counted from the left of the longer shape.
    const bool has_a = k + a.size() >= rank, has_b = k + b.size() >= rank;
    if (!has_a) {
      out[k] = b[k + b.size() - rank];
      continue;
    }
    if (!has_b) {
      out[k] = a[k + a.size() - rank];
      continue;
    }
    const PrimExpr& x = a[k + a.size() - rank];
    const PrimExpr& y = b[k + b.size() - rank];
    std::optional<int64_t> cx = arith::AsConstant(x), cy = arith::AsConstant(y);
    if (analysis::ProveDimEqual(x, y) || cy == 1) {
      out[k] = x;
    } else if (cx == 1) {
      out[k] = y;
    } else if (cx && cy) {
      return ErrorStatus() << call.name() << ": cannot broadcast " << ArgText(call, lhs) << " with "
                           << ArgText(call, rhs) << ": dimension " << k << " of the result would be both " << *cx
                           << " and " << *cy;
    } else if (cx || cy) {
      out[k] = cx ? x : y;  // the symbolic side must be 1 or equal; the kernel checks
    } else {
      // Neither provably equal nor 1 (seq against min(64, seq)): exact for every
      // valid broadcast, which the kernel checks.
      out[k] = tir::SelectNode::make(tir::BinaryOpNode::make(tir::PrimExprKind::kEQ, x, PrimExpr(1)), y, x);
    }
  }
  return out;
}

StructInfo TensorFromDims(const std::vector<std::optional<PrimExpr>>& dims, DataType dtype) {
  std::vector<PrimExpr> known;
  for (const auto& d : dims) {
    if (!d) return TensorStructInfoNode::make_ndim(static_cast<int>(dims.size()), dtype);
    known.push_back(SimplifyDim(*d));
  }
  return TensorStructInfoNode::make(std::move(known), dtype);
}

StatusOr<DataType> SameDtype(const OpCall& call, size_t lhs, size_t rhs, DataType a, DataType b) {
  if (a.is_void()) return b;
  if (b.is_void() || a == b) return a;
  return ErrorStatus() << call.name() << ": " << ArgText(call, lhs) << " and " << ArgText(call, rhs)
                       << " have different dtypes (" << a.ToString() << " vs " << b.ToString() << "); cast one of them";
}

StatusOr<int64_t> NormalizeAxis(const OpCall& call, const std::string& attr, int64_t axis, int64_t ndim) {
  if (axis < -ndim || axis >= ndim) {
    return ErrorStatus() << call.name() << ": " << attr << " " << axis << " is out of range for a tensor of rank "
                         << ndim << " (expected " << -ndim << " <= " << attr << " < " << ndim << ")";
  }
  return axis < 0 ? axis + ndim : axis;
}

PrimExpr SimplifyDim(const PrimExpr& dim) { return analysis::SimplifyDim(dim); }

PrimExpr Product(const std::vector<PrimExpr>& dims) {
  PrimExpr product = 1;
  for (const PrimExpr& d : dims) product = product * d;
  return SimplifyDim(product);
}

}  // namespace strata::op
