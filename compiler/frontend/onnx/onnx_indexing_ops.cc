// ONNX indexing and scan operators: GatherElements, GatherND, CumSum.
#include "compiler/frontend/onnx/onnx_converter_util.h"

namespace strata::frontend::onnx_import {
namespace {

Status GatherElements(NodeContext& n) {
  STRATA_ASSIGN_OR_RETURN(Expr x, n.InputExpr(0));
  STRATA_ASSIGN_OR_RETURN(Expr indices, n.InputExpr(1));
  return Emit(n, "gather_elements", {x, indices}, {{"axis", n.IntAttr("axis", 0)}});
}

Status GatherND(NodeContext& n) {
  if (const int64_t batch_dims = n.IntAttr("batch_dims", 0); batch_dims != 0) {
    return n.Unsupported("batch_dims=" + std::to_string(batch_dims) + " is not supported (only 0)");
  }
  STRATA_ASSIGN_OR_RETURN(Expr x, n.InputExpr(0));
  STRATA_ASSIGN_OR_RETURN(Expr indices, n.InputExpr(1));
  return Emit(n, "gather_nd", {x, indices});
}

Status CumSum(NodeContext& n) {
  STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> axis, ConstIntsInput(n, 1, "axis"));
  if (axis.size() != 1) return n.Error("axis (input 1) must hold one value");
  STRATA_ASSIGN_OR_RETURN(Expr x, n.InputExpr(0));
  return Emit(
      n, "cumsum", {x},
      {{"axis", axis[0]}, {"exclusive", n.IntAttr("exclusive", 0) != 0}, {"reverse", n.IntAttr("reverse", 0) != 0}});
}

}  // namespace

void AddIndexingConverters(ConverterTable& table) {
  table.insert({
      {"GatherElements", {GatherElements, {"axis"}}},
      {"GatherND", {GatherND, {"batch_dims"}}},
      {"CumSum", {CumSum, {"exclusive", "reverse"}}},
  });
}

}  // namespace strata::frontend::onnx_import
