// ONNX reductions and tensor manipulation: shapes (evaluated at import time
// while they stay symbolic), reshape, slicing, concatenation and the like.
#include <cstdint>

#include "compiler/frontend/onnx/onnx_converter_util.h"
#include "compiler/ir/arith/simplify.h"

namespace strata::frontend::onnx_import {
namespace {

using graph::StructInfo;
using graph::TensorStructInfoNode;

// ---- reductions ----------------------------------------------------------------

// The axes of a Reduce* node (attribute up to opset 17, input from 18), or
// nullopt when noop_with_empty_axes makes it the identity.
StatusOr<std::optional<ir::Attrs>> ReduceAttrs(NodeContext& n, bool keepdims) {
  ir::Attrs attrs = {{"keepdims", keepdims}};
  std::vector<int64_t> axes = n.IntsAttr("axes");
  if (n.input(1) != nullptr) {
    STRATA_ASSIGN_OR_RETURN(axes, ConstIntsInput(n, 1, "axes"));
  }
  if (axes.empty() && n.IntAttr("noop_with_empty_axes", 0) != 0) return std::optional<ir::Attrs>();
  if (!axes.empty()) attrs["axes"] = axes;
  return std::optional<ir::Attrs>(std::move(attrs));
}

// A reduction with an elementwise step before it (abs, square, exp) and after
// it (sqrt, log): ReduceL1 = sum(abs(x)), ReduceL2 = sqrt(sum(x * x)), ...
Converter Reduce(const std::string& op, const std::string& before = "", const std::string& after = "") {
  return [op, before, after](NodeContext& n) -> Status {
    STRATA_ASSIGN_OR_RETURN(std::optional<ir::Attrs> attrs, ReduceAttrs(n, n.IntAttr("keepdims", 1) != 0));
    STRATA_ASSIGN_OR_RETURN(Expr x, n.InputExpr(0));
    const std::string name = n.node().output(0);
    if (before == "square") {
      STRATA_ASSIGN_OR_RETURN(x, n.ctx().Call("multiply", {x, x}, {}, name + "_square"));
    } else if (!before.empty()) {
      STRATA_ASSIGN_OR_RETURN(x, n.ctx().Call(before, {x}, {}, name + "_" + before));
    }
    if (!attrs) {  // noop_with_empty_axes: only the elementwise steps remain
      if (after.empty()) {
        n.outputs = {FromExpr(x)};
        return Status::Ok();
      }
      return Emit(n, after, {x});
    }
    if (after.empty()) return Emit(n, op, {x}, *attrs);
    STRATA_ASSIGN_OR_RETURN(Expr reduced, n.ctx().Call(op, {x}, *attrs, name + "_" + op));
    return Emit(n, after, {reduced});
  };
}

// ReduceLogSumExp = max + log(sum(exp(x - max))), which never overflows.
Status ReduceLogSumExp(NodeContext& n) {
  const bool keepdims = n.IntAttr("keepdims", 1) != 0;
  STRATA_ASSIGN_OR_RETURN(std::optional<ir::Attrs> kept, ReduceAttrs(n, true));
  STRATA_ASSIGN_OR_RETURN(Expr x, n.InputExpr(0));
  if (!kept) {  // log(exp(x)) elementwise
    n.outputs = {FromExpr(x)};
    return Status::Ok();
  }
  const std::string name = n.node().output(0);
  ir::Attrs out_attrs = *kept;
  out_attrs["keepdims"] = keepdims;
  STRATA_ASSIGN_OR_RETURN(Expr peak, n.ctx().Call("max", {x}, *kept, name + "_peak"));
  STRATA_ASSIGN_OR_RETURN(Expr shifted, n.ctx().Call("subtract", {x, peak}, {}, name + "_shifted"));
  STRATA_ASSIGN_OR_RETURN(Expr e, n.ctx().Call("exp", {shifted}, {}, name + "_exp"));
  STRATA_ASSIGN_OR_RETURN(Expr total, n.ctx().Call("sum", {e}, out_attrs, name + "_sum"));
  STRATA_ASSIGN_OR_RETURN(Expr log_total, n.ctx().Call("log", {total}, {}, name + "_log"));
  STRATA_ASSIGN_OR_RETURN(Expr out_peak, n.ctx().Call("max", {x}, out_attrs, name + "_max"));
  return Emit(n, "add", {log_total, out_peak});
}

// Pad: widths as the pads input (begins then ends, over every axis or the
// opset-18 axes input), which may be computed from shapes.
Status Pad(NodeContext& n) {
  const std::string mode = n.StringAttr("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap") {
    return n.Unsupported("mode '" + mode + "' is not supported");
  }
  STRATA_ASSIGN_OR_RETURN(const OnnxValue* in, n.Required(0));
  const StructInfo sinfo = in->sinfo();
  const auto* t = sinfo.as<TensorStructInfoNode>();
  if (t == nullptr || t->ndim < 0) return n.Error("the input's rank must be known");
  const int64_t rank = t->ndim;
  STRATA_ASSIGN_OR_RETURN(std::vector<PrimExpr> pads, SymbolicIntsInput(n, 1, "pads"));
  std::vector<int64_t> axes;
  if (n.input(3) != nullptr) {
    STRATA_ASSIGN_OR_RETURN(axes, ConstIntsInput(n, 3, "axes"));
  } else {
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  }
  if (pads.size() != 2 * axes.size()) {
    return n.Error("pads (input 1) has " + std::to_string(pads.size()) + " values; " + std::to_string(2 * axes.size()) +
                   " expected (a begin and an end per padded axis)");
  }
  std::vector<PrimExpr> before(rank, PrimExpr(0)), after(rank, PrimExpr(0));
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t a = axes[i] < 0 ? axes[i] + rank : axes[i];
    if (a < 0 || a >= rank) return n.Error("axis " + std::to_string(axes[i]) + " is out of range");
    before[a] = pads[i];
    after[a] = pads[i + axes.size()];
  }
  double value = 0;
  if (const OnnxValue* c = n.input(2); c != nullptr) {
    if (!c->constant || c->constant->bytes.empty()) return n.Error("constant_value (input 2) must be a constant");
    value = ConstantElement(*c->constant, 0);
  }
  STRATA_ASSIGN_OR_RETURN(Expr x, n.InputExpr(0));
  return Emit(n, "pad", {x},
              {{"pad_before", ir::MakeIntList(before)},
               {"pad_after", ir::MakeIntList(after)},
               {"mode", mode == "wrap" ? std::string("wrap") : mode},
               {"pad_value", value}});
}

// Size: the element count, a symbolic scalar.
Status Size(NodeContext& n) {
  STRATA_ASSIGN_OR_RETURN(const OnnxValue* x, n.Required(0));
  const StructInfo sinfo = x->sinfo();
  const auto* t = sinfo.as<TensorStructInfoNode>();
  if (t == nullptr || !t->shape) return n.Error("the input's shape is not known at compile time");
  PrimExpr count = 1;
  for (const PrimExpr& d : *t->shape) count = count * d;
  n.outputs = {Symbolic({count}, true)};
  return Status::Ok();
}

// ---- shapes and data movement ------------------------------------------------

Status Shape(NodeContext& n) {
  STRATA_ASSIGN_OR_RETURN(const OnnxValue* x, n.Required(0));
  StructInfo sinfo = x->sinfo();
  const auto* t = sinfo.as<TensorStructInfoNode>();
  if (t == nullptr || !t->shape) {
    return n.Error("the input's shape is not known at compile time; Strata evaluates Shape symbolically");
  }
  const int64_t rank = static_cast<int64_t>(t->shape->size());
  int64_t start = n.IntAttr("start", 0), end = n.IntAttr("end", rank);
  auto clamp = [&](int64_t v) { return std::clamp(v < 0 ? v + rank : v, int64_t{0}, rank); };
  start = clamp(start);
  end = clamp(end);
  std::vector<PrimExpr> dims(t->shape->begin() + start, t->shape->begin() + std::max(start, end));
  n.outputs = {Symbolic(std::move(dims), false)};
  return Status::Ok();
}

Status ConstantNode(NodeContext& n) {
  OnnxValue v;
  if (const onnx::TensorProto* t = n.TensorAttr("value")) {
    STRATA_ASSIGN_OR_RETURN(v.constant, TensorFromProto(*t, n.ctx().external_data_dir()));
  } else if (n.HasAttr("value_int")) {
    v.constant = MakeInt64Tensor({n.IntAttr("value_int", 0)}, true);
  } else if (n.HasAttr("value_ints")) {
    v.constant = MakeInt64Tensor(n.IntsAttr("value_ints"), false);
  } else if (n.HasAttr("value_float")) {
    v.constant = MakeScalarTensor(DataType::F32(), n.FloatAttr("value_float", 0));
  } else {
    return n.Error("only value, value_int, value_ints and value_float constants are supported");
  }
  n.outputs = {v};
  return Status::Ok();
}

Status Reshape(NodeContext& n) {
  std::optional<std::vector<PrimExpr>> shape = SymbolicInts(n.input(1));
  if (!shape) return n.Error("the target shape must be known at compile time (constant or computed from shapes)");
  // A shape value reshaped to a scalar or a vector of its length stays symbolic
  // (the dynamo exporter reshapes seq + 1 to [1] before slicing with it).
  const OnnxValue* in = n.input(0);
  if (in != nullptr && in->symbolic && shape->size() <= 1) {
    const int64_t count = static_cast<int64_t>(in->symbolic->size());
    const std::optional<int64_t> target = shape->empty() ? std::optional<int64_t>(1) : arith::AsConstant((*shape)[0]);
    if (target && (*target == count || (*target == -1 && !shape->empty())) && (count == 1 || !shape->empty())) {
      n.outputs = {Symbolic(*in->symbolic, shape->empty())};
      return Status::Ok();
    }
  }
  STRATA_ASSIGN_OR_RETURN(Expr x, n.InputExpr(0));
  if (n.IntAttr("allowzero", 0) != 0) {
    for (const PrimExpr& d : *shape) {
      if (arith::AsConstant(d) == 0) return n.Unsupported("allowzero=1 with a 0 in the shape is not supported");
    }
  }
  return Emit(n, "reshape", {x, ShapeArg(*shape)});
}

Status ConstantOfShape(NodeContext& n) {
  std::optional<std::vector<PrimExpr>> shape = SymbolicInts(n.input(0));
  if (!shape) return n.Error("the shape must be known at compile time");
  double value = 0;
  int64_t int_value = 0;  // exact for integer fills, which a double is not above 2^53
  DataType dtype = DataType::F32();
  if (const onnx::TensorProto* t = n.TensorAttr("value")) {
    STRATA_ASSIGN_OR_RETURN(auto data, TensorFromProto(*t, n.ctx().external_data_dir()));
    if (data->bytes.size() != static_cast<size_t>(data->dtype.bytes())) {
      return n.Error("attribute 'value' must hold exactly one element");
    }
    dtype = data->dtype;
    value = ConstantElement(*data, 0);
    if (!dtype.is_float()) int_value = ConstantInts(*data)[0];
  }
  // A small integer fill of a known shape is an import-time constant, so shape
  // idioms built on it (Mul(ConstantOfShape(Shape(s)), -1) in the TorchScript
  // exporter's Expand) stay symbolic.
  std::vector<int64_t> dims;
  int64_t count = 1;
  for (const PrimExpr& d : *shape) {
    std::optional<int64_t> c = arith::AsConstant(d);
    if (!c) break;
    dims.push_back(*c);
    count *= *c;
  }
  if (dtype == DataType::I64() && dims.size() == shape->size() && dims.size() <= 1 && count <= 64) {
    OnnxValue v;
    v.constant = MakeInt64Tensor(std::vector<int64_t>(static_cast<size_t>(count), int_value), dims.empty());
    n.outputs = {v};
    return Status::Ok();
  }
  return Emit(n, "full", {ShapeArg(*shape)}, {{"fill_value", value}, {"dtype", dtype}});
}

Status Transpose(NodeContext& n) {
  STRATA_ASSIGN_OR_RETURN(Expr x, n.InputExpr(0));
  ir::Attrs attrs;
  if (n.HasAttr("perm")) attrs["axes"] = n.IntsAttr("perm");
  return Emit(n, "transpose", {x}, attrs);
}

Status Flatten(NodeContext& n) {
  STRATA_ASSIGN_OR_RETURN(Expr x, n.InputExpr(0));
  return Emit(n, "flatten", {x}, {{"axis", n.IntAttr("axis", 1)}});
}

Status Concat(NodeContext& n) {
  const int64_t axis = n.IntAttr("axis", 0);
  // Shape vectors concatenate at import time.
  std::vector<PrimExpr> joined;
  bool symbolic = true, any_symbolic = false;
  for (size_t i = 0; i < n.num_inputs() && symbolic; ++i) {
    auto ints = SymbolicInts(n.input(i));
    symbolic = ints.has_value();
    any_symbolic = any_symbolic || (n.input(i) && n.input(i)->symbolic);
    if (ints) joined.insert(joined.end(), ints->begin(), ints->end());
  }
  if (symbolic && any_symbolic) {
    n.outputs = {Symbolic(std::move(joined), false)};
    return Status::Ok();
  }
  std::vector<Expr> fields;
  for (size_t i = 0; i < n.num_inputs(); ++i) {
    STRATA_ASSIGN_OR_RETURN(Expr e, n.InputExpr(i));
    fields.push_back(e);
  }
  return Emit(n, "concat", {graph::TupleNode::make(fields)}, {{"axis", axis}});
}

Status Unsqueeze(NodeContext& n) {
  STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> axes, ConstIntsInput(n, 1, "axes"));
  const OnnxValue* in = n.input(0);
  if (in && in->symbolic && in->symbolic_scalar && axes.size() == 1 && (axes[0] == 0 || axes[0] == -1)) {
    n.outputs = {Symbolic(*in->symbolic, false)};
    return Status::Ok();
  }
  STRATA_ASSIGN_OR_RETURN(Expr x, n.InputExpr(0));
  return Emit(n, "expand_dims", {x}, {{"axis", axes}});
}

Status Squeeze(NodeContext& n) {
  const OnnxValue* in = n.input(0);
  if (in && in->symbolic && !in->symbolic_scalar && in->symbolic->size() == 1) {
    n.outputs = {Symbolic(*in->symbolic, true)};
    return Status::Ok();
  }
  STRATA_ASSIGN_OR_RETURN(Expr x, n.InputExpr(0));
  ir::Attrs attrs;
  if (n.input(1)) {
    STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> axes, ConstIntsInput(n, 1, "axes"));
    attrs["axis"] = axes;
  }
  return Emit(n, "squeeze", {x}, attrs);
}

Status Gather(NodeContext& n) {
  const int64_t axis = n.IntAttr("axis", 0);
  const OnnxValue* data = n.input(0);
  if (data && data->symbolic && axis == 0) {
    bool scalar = false;
    auto indices = SymbolicInts(n.input(1), &scalar);
    if (indices) {
      std::vector<PrimExpr> out;
      const int64_t size = static_cast<int64_t>(data->symbolic->size());
      for (const PrimExpr& i : *indices) {
        std::optional<int64_t> c = arith::AsConstant(i);
        if (!c || *c < -size || *c >= size) return n.Error("index out of range into a shape");
        out.push_back((*data->symbolic)[static_cast<size_t>(*c < 0 ? *c + size : *c)]);
      }
      n.outputs = {Symbolic(std::move(out), scalar)};
      return Status::Ok();
    }
  }
  STRATA_ASSIGN_OR_RETURN(Expr x, n.InputExpr(0));
  STRATA_ASSIGN_OR_RETURN(Expr idx, n.InputExpr(1));
  return Emit(n, "take", {x, idx}, {{"axis", axis}});
}

Status Slice(NodeContext& n) {
  STRATA_ASSIGN_OR_RETURN(std::vector<PrimExpr> start_exprs, SymbolicIntsInput(n, 1, "starts"));
  STRATA_ASSIGN_OR_RETURN(std::vector<PrimExpr> end_exprs, SymbolicIntsInput(n, 2, "ends"));
  std::vector<int64_t> axes, steps;
  if (n.input(3)) {
    STRATA_ASSIGN_OR_RETURN(axes, ConstIntsInput(n, 3, "axes"));
  }
  if (n.input(4)) {
    STRATA_ASSIGN_OR_RETURN(steps, ConstIntsInput(n, 4, "steps"));
  }
  const OnnxValue* data = n.input(0);
  std::vector<int64_t> starts, ends;
  for (const PrimExpr& e : start_exprs) starts.push_back(arith::AsConstant(e).value_or(0));
  for (const PrimExpr& e : end_exprs) ends.push_back(arith::AsConstant(e).value_or(0));
  const bool constant_bounds = ir::IntListExprs(ir::MakeIntList(start_exprs)) &&
                               std::holds_alternative<std::vector<int64_t>>(ir::MakeIntList(start_exprs)) &&
                               std::holds_alternative<std::vector<int64_t>>(ir::MakeIntList(end_exprs));
  if (data && data->symbolic && constant_bounds && starts.size() == 1 && (steps.empty() || steps[0] == 1)) {
    const int64_t size = static_cast<int64_t>(data->symbolic->size());
    auto clamp = [&](int64_t v) { return std::clamp(v < 0 ? v + size : v, int64_t{0}, size); };
    const int64_t b = clamp(starts[0]), e = clamp(ends[0]);
    n.outputs = {
        Symbolic(std::vector<PrimExpr>(data->symbolic->begin() + b, data->symbolic->begin() + std::max(b, e)), false)};
    return Status::Ok();
  }
  STRATA_ASSIGN_OR_RETURN(Expr x, n.InputExpr(0));
  ir::Attrs attrs = {{"begin", ir::MakeIntList(start_exprs)}, {"end", ir::MakeIntList(end_exprs)}};
  if (!axes.empty()) attrs["axes"] = axes;
  if (!steps.empty()) attrs["strides"] = steps;
  return Emit(n, "strided_slice", {x}, attrs);
}

// Split at boundaries that are symbolic (num_outputs over a dynamic axis,
// sizes computed from shapes): one strided_slice per part, each with the
// exact symbolic extent, instead of a split op whose sections are constants.
Status SplitBySlices(NodeContext& n, Expr x, int64_t axis, const std::vector<PrimExpr>& bounds) {
  n.outputs.clear();
  for (size_t i = 0; i + 1 < bounds.size(); ++i) {
    ir::Attrs attrs = {{"axes", std::vector<int64_t>{axis}},
                       {"begin", ir::MakeIntList({arith::Simplify(bounds[i])})},
                       {"end", ir::MakeIntList({arith::Simplify(bounds[i + 1])})}};
    STRATA_ASSIGN_OR_RETURN(Expr part, n.ctx().Call("strided_slice", {x}, attrs, n.node().output(static_cast<int>(i))));
    n.outputs.push_back(FromExpr(part));
  }
  return Status::Ok();
}

Status Split(NodeContext& n) {
  const int64_t axis = n.IntAttr("axis", 0);
  STRATA_ASSIGN_OR_RETURN(Expr x, n.InputExpr(0));
  STRATA_ASSIGN_OR_RETURN(const OnnxValue* in, n.Required(0));
  const StructInfo sinfo = in->sinfo();
  const auto* t = sinfo.as<TensorStructInfoNode>();
  const int64_t rank = t != nullptr && t->shape ? static_cast<int64_t>(t->shape->size()) : -1;
  const int64_t a = axis < 0 ? axis + rank : axis;
  const bool axis_known = rank >= 0 && a >= 0 && a < rank;
  const int parts = n.node().output_size();
  ir::Attrs attrs = {{"axis", axis}};
  if (n.input(1)) {
    STRATA_ASSIGN_OR_RETURN(std::vector<PrimExpr> sizes, SymbolicIntsInput(n, 1, "split"));
    if (static_cast<int>(sizes.size()) != parts) {
      return n.Error("split has " + std::to_string(sizes.size()) + " sizes for the node's " + std::to_string(parts) +
                     " outputs");
    }
    std::vector<PrimExpr> bounds = {0};
    bool constant = true;
    for (const PrimExpr& size : sizes) {
      constant = constant && arith::AsConstant(size).has_value();
      bounds.push_back(arith::Simplify(bounds.back() + size));
    }
    if (!constant) {
      if (!axis_known) return n.Error("the input's rank must be known to split at symbolic sizes");
      return SplitBySlices(n, x, a, bounds);
    }
    std::vector<int64_t> indices;
    for (size_t i = 1; i + 1 < bounds.size(); ++i) indices.push_back(*arith::AsConstant(bounds[i]));
    attrs["indices_or_sections"] = indices;
  } else if (n.HasAttr("num_outputs")) {
    // Opset 18: chunks of ceil(dim / num_outputs), the last one shorter.
    const int64_t count = n.IntAttr("num_outputs", 0);
    if (count != parts) {
      return n.Error("num_outputs " + std::to_string(count) + " does not match the node's " + std::to_string(parts) +
                     " outputs");
    }
    if (!axis_known) return n.Error("the input's shape must be known to split it into num_outputs chunks");
    const PrimExpr dim = (*t->shape)[a];
    const PrimExpr chunk = arith::Simplify(tir::FloorDiv(dim + (count - 1), count));
    std::vector<PrimExpr> bounds;
    for (int64_t i = 0; i <= count; ++i) bounds.push_back(i == count ? dim : arith::Simplify(tir::Min(chunk * i, dim)));
    if (!arith::AsConstant(dim)) return SplitBySlices(n, x, a, bounds);
    std::vector<int64_t> indices;
    for (int64_t i = 1; i < count; ++i) indices.push_back(*arith::AsConstant(bounds[i]));
    attrs["indices_or_sections"] = indices;
  } else {
    attrs["indices_or_sections"] = static_cast<int64_t>(parts);
  }
  STRATA_ASSIGN_OR_RETURN(Expr split, n.ctx().Call("split", {x}, attrs, n.node().output(0) + "_parts"));
  n.outputs.clear();
  for (int i = 0; i < parts; ++i) {
    STRATA_ASSIGN_OR_RETURN(Expr part, n.ctx().Bind(graph::TupleGetItemNode::make(split, i), n.node().output(i)));
    n.outputs.push_back(FromExpr(part));
  }
  return Status::Ok();
}

Status Expand(NodeContext& n) {
  STRATA_ASSIGN_OR_RETURN(const OnnxValue* in, n.Required(0));
  std::optional<std::vector<PrimExpr>> target = SymbolicInts(n.input(1));
  if (!target) return n.Error("the target shape must be known at compile time");
  StructInfo sinfo = in->sinfo();
  const auto* t = sinfo.as<TensorStructInfoNode>();
  if (t == nullptr || !t->shape) return n.Error("the input's shape must be known");
  // ONNX Expand broadcasts both ways: a 1 in the target keeps the input's dim.
  const std::vector<PrimExpr>& shape = *t->shape;
  const size_t rank = std::max(shape.size(), target->size());
  std::vector<PrimExpr> out(rank);
  for (size_t k = 0; k < rank; ++k) {
    const bool has_s = k + shape.size() >= rank, has_t = k + target->size() >= rank;
    PrimExpr s = has_s ? shape[k + shape.size() - rank] : PrimExpr(1);
    PrimExpr d = has_t ? (*target)[k + target->size() - rank] : PrimExpr(1);
    out[k] = arith::AsConstant(d) == 1 ? s : d;
  }
  STRATA_ASSIGN_OR_RETURN(Expr x, n.InputExpr(0));
  return Emit(n, "broadcast_to", {x, ShapeArg(out)});
}

// Range(start, limit, delta) with a constant delta; start and limit may be
// symbolic (arange over a sequence length, or from a past length):
// arange(shape(n), offset=[start]) with n = max(ceil((limit - start) / delta), 0).
Status Range(NodeContext& n) {
  bool scalar = false;
  auto start = SymbolicInts(n.input(0), &scalar), limit = SymbolicInts(n.input(1)), delta = SymbolicInts(n.input(2));
  if (!start || !limit || !delta || start->size() != 1 || limit->size() != 1 || delta->size() != 1) {
    return n.Error("start, limit and delta must be integer scalars known at compile time (constants or shapes)");
  }
  std::optional<int64_t> d = arith::AsConstant((*delta)[0]);
  if (!d || *d == 0) return n.Error("delta must be a non-zero constant");
  const PrimExpr first = arith::Simplify((*start)[0]);
  PrimExpr span = (*limit)[0] - first;
  PrimExpr length = *d > 0 ? tir::FloorDiv(span + (*d - 1), *d) : tir::FloorDiv(PrimExpr(0) - span + (-*d - 1), -*d);
  length = arith::Simplify(tir::Max(length, 0));
  StructInfo sinfo = n.input(1)->sinfo();
  const auto* t = sinfo.as<TensorStructInfoNode>();
  DataType dtype = t && !t->dtype.is_void() ? t->dtype : DataType::I64();
  // The values stay known at import time when the length is a constant.
  if (std::optional<int64_t> len = arith::AsConstant(length); len && dtype == DataType::I64()) {
    std::vector<PrimExpr> values;
    for (int64_t i = 0; i < *len; ++i) values.push_back(first + i * *d);
    n.outputs = {Symbolic(std::move(values), false)};
    return Status::Ok();
  }
  ir::Attrs attrs = {{"step", static_cast<double>(*d)}, {"dtype", dtype}};
  if (std::optional<int64_t> s = arith::AsConstant(first)) {
    attrs["start"] = static_cast<double>(*s);
  } else {
    attrs["offset"] = ir::MakeIntList({first});
  }
  return Emit(n, "arange", {ShapeArg({length})}, attrs);
}

}  // namespace

void AddTensorConverters(ConverterTable& table) {
  table.insert({
      {"ReduceMean", {Reduce("mean"), {"axes", "keepdims", "noop_with_empty_axes"}}},
      {"ReduceSum", {Reduce("sum"), {"keepdims", "noop_with_empty_axes"}}},
      {"ReduceMax", {Reduce("max"), {"axes", "keepdims", "noop_with_empty_axes"}}},
      {"ReduceMin", {Reduce("min"), {"axes", "keepdims", "noop_with_empty_axes"}}},
      {"ReduceProd", {Reduce("prod"), {"axes", "keepdims", "noop_with_empty_axes"}}},
      {"ReduceL1", {Reduce("sum", "abs"), {"axes", "keepdims", "noop_with_empty_axes"}}},
      {"ReduceL2", {Reduce("sum", "square", "sqrt"), {"axes", "keepdims", "noop_with_empty_axes"}}},
      {"ReduceSumSquare", {Reduce("sum", "square"), {"axes", "keepdims", "noop_with_empty_axes"}}},
      {"ReduceLogSum", {Reduce("sum", "", "log"), {"axes", "keepdims", "noop_with_empty_axes"}}},
      {"ReduceLogSumExp", {ReduceLogSumExp, {"axes", "keepdims", "noop_with_empty_axes"}}},
      {"Size", {Size, {}}},
      {"Pad", {Pad, {"mode"}}},
      {"Reshape", {Reshape, {"allowzero"}}},
      {"Transpose", {Transpose, {"perm"}}},
      {"Flatten", {Flatten, {"axis"}}},
      {"Concat", {Concat, {"axis"}}},
      {"Split", {Split, {"axis", "num_outputs"}}},
      {"Slice", {Slice, {}}},
      {"Gather", {Gather, {"axis"}}},
      {"Unsqueeze", {Unsqueeze, {}}},
      {"Squeeze", {Squeeze, {}}},
      {"Expand", {Expand, {}}},
      {"Shape", {Shape, {"start", "end"}}},
      {"Constant", {ConstantNode, {"value", "value_int", "value_ints", "value_float"}}},
      {"ConstantOfShape", {ConstantOfShape, {"value"}}},
      {"Range", {Range, {}}},
  });
}

}  // namespace strata::frontend::onnx_import
