// Helpers shared by the data-movement operators (data_movement.h).
#include "compiler/op/data_movement.h"

#include <algorithm>
#include <variant>

#include "compiler/ir/arith/simplify.h"
#include "compiler/op/op_util.h"

namespace strata::op::movement {

using tir::PrimExprKind;

std::pair<std::vector<int64_t>, bool> IntOrInts(const OpCall& call, const std::string& name) {
  auto it = call.call().attrs.find(name);
  if (it != call.call().attrs.end() && std::holds_alternative<int64_t>(it->second)) {
    return {{std::get<int64_t>(it->second)}, true};
  }
  return {call.IntsAttr(name), false};
}

StatusOr<std::vector<int64_t>> DistinctAxes(const OpCall& call, const std::string& attr,
                                            const std::vector<int64_t>& axes, int64_t ndim) {
  std::vector<int64_t> out;
  for (int64_t axis : axes) {
    STRATA_ASSIGN_OR_RETURN(int64_t a, NormalizeAxis(call, "axis", axis, ndim));
    if (std::find(out.begin(), out.end(), a) != out.end()) {
      return ErrorStatus() << call.name() << ": axis " << a << " appears twice in attribute '" << attr << "'";
    }
    out.push_back(a);
  }
  return out;
}

StatusOr<std::optional<std::vector<PrimExpr>>> ShapeDims(const OpCall& call, size_t i, int* ndim) {
  const auto* shape = call.arg_sinfo(i).as<graph::ShapeStructInfoNode>();
  if (shape != nullptr && !shape->values && shape->ndim >= 0) {
    *ndim = shape->ndim;
    return std::optional<std::vector<PrimExpr>>();
  }
  STRATA_ASSIGN_OR_RETURN(std::vector<PrimExpr> dims, ShapeArg(call, i));
  *ndim = static_cast<int>(dims.size());
  return std::optional<std::vector<PrimExpr>>(std::move(dims));
}

tir::Stmt CopyNest(KernelBuilder& b, const std::vector<PrimExpr>& shape,
                   const std::function<tir::Stmt(const std::vector<PrimExpr>& index)>& body) {
  std::vector<PrimExpr> looped;
  for (const PrimExpr& d : shape) {
    if (arith::AsConstant(d) != 1) looped.push_back(d);
  }
  return b.Elementwise(looped, [&](const std::vector<PrimExpr>& loop_index) {
    std::vector<PrimExpr> index;
    size_t k = 0;
    for (const PrimExpr& d : shape) index.push_back(arith::AsConstant(d) == 1 ? PrimExpr(0) : loop_index[k++]);
    return body(index);
  });
}

PrimExpr Ravel(const std::vector<PrimExpr>& index, const std::vector<PrimExpr>& dims) {
  PrimExpr flat = 0;
  for (size_t k = 0; k < dims.size(); ++k) flat = flat * dims[k] + index[k];
  return arith::Simplify(flat);
}

std::vector<PrimExpr> Unravel(const PrimExpr& flat, const std::vector<PrimExpr>& dims) {
  std::vector<PrimExpr> index(dims.size());
  PrimExpr stride = 1;
  for (size_t k = dims.size(); k-- > 0;) {
    PrimExpr i = arith::AsConstant(stride) == 1 ? flat : tir::FloorDiv(flat, stride);
    index[k] = arith::Simplify(k == 0 ? i : tir::FloorMod(i, dims[k]));
    stride = arith::Simplify(stride * dims[k]);
  }
  return index;
}

std::vector<tir::Stmt> Checks(std::vector<tir::Stmt> checks, tir::Stmt body) {
  checks.push_back(std::move(body));
  return checks;
}

}  // namespace strata::op::movement
