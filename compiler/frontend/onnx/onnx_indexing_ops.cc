// ONNX indexing, masking and tiling operators: GatherElements, GatherND,
// CumSum, Trilu, Tile, ArgMax, ArgMin.

#include "compiler/frontend/onnx/onnx_converter_util.h"
#include "compiler/ir/arith/simplify.h"

namespace strata::frontend::onnx_import {
namespace {

using graph::StructInfo;
using graph::TensorStructInfoNode;

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

StatusOr<std::vector<PrimExpr>> KnownShape(NodeContext& n, size_t i) {
  STRATA_ASSIGN_OR_RETURN(const OnnxValue* v, n.Required(i));
  const StructInfo sinfo = v->sinfo();
  const auto* t = sinfo.as<TensorStructInfoNode>();
  if (t == nullptr || !t->shape) return n.Error("the shape of input " + std::to_string(i) + " must be known");
  return *t->shape;
}

// Trilu keeps the elements on and above (upper) or below the k-th diagonal of
// the last two dims: where(cols >= rows + k, x, 0) with rows and cols from
// arange, so k may be symbolic (computed from shapes).
Status Trilu(NodeContext& n) {
  STRATA_ASSIGN_OR_RETURN(std::vector<PrimExpr> shape, KnownShape(n, 0));
  if (shape.size() < 2) return n.Error("the input must have rank >= 2");
  PrimExpr k = 0;
  if (n.input(1) != nullptr) {
    STRATA_ASSIGN_OR_RETURN(std::vector<PrimExpr> ks, SymbolicIntsInput(n, 1, "k"));
    if (ks.size() != 1) return n.Error("k (input 1) must be a scalar");
    k = ks[0];
  }
  const bool upper = n.IntAttr("upper", 1) != 0;
  const PrimExpr h = shape[shape.size() - 2], w = shape.back();
  const std::string name = n.node().output(0);
  STRATA_ASSIGN_OR_RETURN(Expr x, n.InputExpr(0));
  STRATA_ASSIGN_OR_RETURN(Expr rows,
                          n.ctx().Call("arange", {ShapeArg({h})}, {{"offset", ir::MakeIntList({k})}}, name + "_rows"));
  STRATA_ASSIGN_OR_RETURN(rows, n.ctx().Call("reshape", {rows, ShapeArg({h, 1})}, {}, name + "_rows_column"));
  STRATA_ASSIGN_OR_RETURN(Expr cols, n.ctx().Call("arange", {ShapeArg({w})}, {}, name + "_cols"));
  STRATA_ASSIGN_OR_RETURN(Expr keep,
                          n.ctx().Call(upper ? "greater_equal" : "less_equal", {cols, rows}, {}, name + "_keep"));
  STRATA_ASSIGN_OR_RETURN(Expr zero, ScalarLike(n, 0, 0.0));
  return Emit(n, "where", {keep, x, zero});
}

// Tile: x (d0, d1, ...) viewed as (1, d0, 1, d1, ...), broadcast to
// (r0, d0, r1, d1, ...) and reshaped to (r0 * d0, r1 * d1, ...). Repeats may be
// symbolic (computed from shapes).
Status Tile(NodeContext& n) {
  STRATA_ASSIGN_OR_RETURN(std::vector<PrimExpr> shape, KnownShape(n, 0));
  STRATA_ASSIGN_OR_RETURN(std::vector<PrimExpr> repeats, SymbolicIntsInput(n, 1, "repeats"));
  if (repeats.size() != shape.size()) {
    return n.Error("repeats (input 1) has " + std::to_string(repeats.size()) + " values for an input of rank " +
                   std::to_string(shape.size()));
  }
  STRATA_ASSIGN_OR_RETURN(Expr x, n.InputExpr(0));
  bool identity = true;
  std::vector<PrimExpr> spread, tiled, out;
  for (size_t d = 0; d < shape.size(); ++d) {
    identity = identity && arith::AsConstant(repeats[d]) == 1;
    spread.insert(spread.end(), {1, shape[d]});
    tiled.insert(tiled.end(), {repeats[d], shape[d]});
    out.push_back(arith::Simplify(repeats[d] * shape[d]));
  }
  if (identity) {
    n.outputs = {FromExpr(x)};
    return Status::Ok();
  }
  const std::string name = n.node().output(0);
  STRATA_ASSIGN_OR_RETURN(Expr view, n.ctx().Call("reshape", {x, ShapeArg(spread)}, {}, name + "_spread"));
  STRATA_ASSIGN_OR_RETURN(Expr wide, n.ctx().Call("broadcast_to", {view, ShapeArg(tiled)}, {}, name + "_tiled"));
  return Emit(n, "reshape", {wide, ShapeArg(out)});
}

Converter Scatter(const std::string& op, bool has_axis) {
  return [op, has_axis](NodeContext& n) -> Status {
    STRATA_ASSIGN_OR_RETURN(Expr x, n.InputExpr(0));
    STRATA_ASSIGN_OR_RETURN(Expr indices, n.InputExpr(1));
    STRATA_ASSIGN_OR_RETURN(Expr updates, n.InputExpr(2));
    ir::Attrs attrs = {{"reduction", n.StringAttr("reduction", "none")}};
    if (has_axis) attrs["axis"] = n.IntAttr("axis", 0);
    return Emit(n, op, {x, indices, updates}, attrs);
  };
}

// TopK: k from a constant or computed from shapes; sorted=0 may return
// sorted order (ONNX leaves the order unspecified then).
Status TopK(NodeContext& n) {
  STRATA_ASSIGN_OR_RETURN(std::vector<PrimExpr> k, SymbolicIntsInput(n, 1, "K"));
  if (k.size() != 1) return n.Error("K (input 1) must hold one value");
  STRATA_ASSIGN_OR_RETURN(Expr x, n.InputExpr(0));
  STRATA_ASSIGN_OR_RETURN(Expr both, n.ctx().Call("topk", {x},
                                                  {{"k", ir::MakeIntList(k)},
                                                   {"axis", n.IntAttr("axis", -1)},
                                                   {"largest", n.IntAttr("largest", 1) != 0}},
                                                  n.node().output(0) + "_topk"));
  n.outputs.clear();
  for (int i = 0; i < n.node().output_size() && i < 2; ++i) {
    STRATA_ASSIGN_OR_RETURN(Expr part, n.ctx().Bind(graph::TupleGetItemNode::make(both, i), n.node().output(i)));
    n.outputs.push_back(FromExpr(part));
  }
  return Status::Ok();
}

// OneHot: depth a constant or computed from shapes, values = [off, on] a
// constant, output of the values' dtype.
Status OneHot(NodeContext& n) {
  STRATA_ASSIGN_OR_RETURN(std::vector<PrimExpr> depth, SymbolicIntsInput(n, 1, "depth"));
  if (depth.size() != 1) return n.Error("depth (input 1) must hold one value");
  const OnnxValue* values = n.input(2);
  if (values == nullptr || !values->constant) return n.Error("values (input 2) must be a constant [off, on] pair");
  const graph::HostTensor& v = *values->constant;
  const size_t width = static_cast<size_t>(v.dtype.bytes());
  if (width == 0 || v.bytes.size() != 2 * width) return n.Error("values (input 2) must hold two elements");
  auto element = [&](size_t i) { return ConstantElement(v, i); };
  STRATA_ASSIGN_OR_RETURN(Expr indices, n.InputExpr(0));
  const StructInfo sinfo = n.input(0)->sinfo();
  const auto* t = sinfo.as<TensorStructInfoNode>();
  if (t != nullptr && !t->dtype.is_int()) {  // float indices are truncated, as ONNX specifies
    STRATA_ASSIGN_OR_RETURN(
        indices, n.ctx().Call("cast", {indices}, {{"dtype", DataType::I64()}}, n.node().output(0) + "_indices"));
  }
  return Emit(n, "one_hot", {indices},
              {{"depth", ir::MakeIntList(depth)},
               {"axis", n.IntAttr("axis", -1)},
               {"off_value", element(0)},
               {"on_value", element(1)},
               {"dtype", v.dtype}});
}

Converter ArgReduce(const std::string& op) {
  return [op](NodeContext& n) -> Status {
    STRATA_ASSIGN_OR_RETURN(Expr x, n.InputExpr(0));
    return Emit(n, op, {x},
                {{"axis", n.IntAttr("axis", 0)},
                 {"keepdims", n.IntAttr("keepdims", 1) != 0},
                 {"select_last_index", n.IntAttr("select_last_index", 0) != 0}});
  };
}

}  // namespace

void AddIndexingConverters(ConverterTable& table) {
  table.insert({
      {"GatherElements", {GatherElements, {"axis"}}},
      {"GatherND", {GatherND, {"batch_dims"}}},
      {"CumSum", {CumSum, {"exclusive", "reverse"}}},
      {"Trilu", {Trilu, {"upper"}}},
      {"Tile", {Tile, {}}},
      {"ScatterElements", {Scatter("scatter_elements", true), {"axis", "reduction"}}},
      {"ScatterND", {Scatter("scatter_nd", false), {"reduction"}}},
      {"TopK", {TopK, {"axis", "largest", "sorted"}}},
      {"OneHot", {OneHot, {"axis"}}},
      {"ArgMax", {ArgReduce("argmax"), {"axis", "keepdims", "select_last_index"}}},
      {"ArgMin", {ArgReduce("argmin"), {"axis", "keepdims", "select_last_index"}}},
  });
}

}  // namespace strata::frontend::onnx_import
