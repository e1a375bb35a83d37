// ONNX elementwise operators: arithmetic (evaluated symbolically on shape
// values), comparisons, unary math, activations, cast, clip and where.
#include <cstring>

#include "compiler/frontend/onnx/onnx_converter_util.h"

namespace strata::frontend::onnx_import {
namespace {

using graph::StructInfo;
using graph::TensorStructInfoNode;

// Neg of a shape value (x[:, -k:] slices) stays symbolic; of a tensor, an op.
Status Neg(NodeContext& n) {
  const OnnxValue* in = n.input(0);
  if (in != nullptr && in->symbolic) {
    std::vector<PrimExpr> negated;
    for (const PrimExpr& e : *in->symbolic) negated.push_back(PrimExpr(0) - e);
    n.outputs = {Symbolic(std::move(negated), in->symbolic_scalar)};
    return Status::Ok();
  }
  STRATA_ASSIGN_OR_RETURN(Expr x, n.InputExpr(0));
  return Emit(n, "neg", {x});
}

Status PassThrough(NodeContext& n) {
  STRATA_ASSIGN_OR_RETURN(const OnnxValue* x, n.Required(0));
  n.outputs = {*x};
  return Status::Ok();
}

Status LeakyRelu(NodeContext& n) {
  const double alpha = n.FloatAttr("alpha", 0.01f);
  STRATA_ASSIGN_OR_RETURN(Expr x, n.InputExpr(0));
  STRATA_ASSIGN_OR_RETURN(Expr zero, ScalarLike(n, 0, 0.0));
  STRATA_ASSIGN_OR_RETURN(Expr a, ScalarLike(n, 0, alpha));
  const std::string name = n.node().output(0);
  STRATA_ASSIGN_OR_RETURN(Expr positive, n.ctx().Call("greater", {x, zero}, {}, name + "_positive"));
  STRATA_ASSIGN_OR_RETURN(Expr scaled, n.ctx().Call("multiply", {x, a}, {}, name + "_scaled"));
  return Emit(n, "where", {positive, x, scaled});
}

Status Gelu(NodeContext& n) {
  const std::string approximate = n.StringAttr("approximate", "none");
  STRATA_ASSIGN_OR_RETURN(Expr x, n.InputExpr(0));
  return Emit(n, "gelu", {x}, {{"approximate", approximate}});
}

Status Clip(NodeContext& n) {
  STRATA_ASSIGN_OR_RETURN(Expr x, n.InputExpr(0));
  auto bound = [&](size_t i, double fallback) -> StatusOr<double> {
    const OnnxValue* v = n.input(i);
    if (v == nullptr) return fallback;
    if (!v->constant || v->constant->shape.size() != 0) return n.Error("min/max must be constant scalars");
    const graph::HostTensor& t = *v->constant;
    if (t.dtype == DataType::F32()) {
      float f;
      std::memcpy(&f, t.bytes.data(), 4);
      return static_cast<double>(f);
    }
    if (t.dtype == DataType::F64()) {
      double d;
      std::memcpy(&d, t.bytes.data(), 8);
      return d;
    }
    return static_cast<double>(ConstantInts(t)[0]);
  };
  STRATA_ASSIGN_OR_RETURN(double lo, bound(1, -3.4e38));
  STRATA_ASSIGN_OR_RETURN(double hi, bound(2, 3.4e38));
  return Emit(n, "clip", {x}, {{"min", lo}, {"max", hi}});
}

Status Cast(NodeContext& n) {
  STRATA_ASSIGN_OR_RETURN(DataType to, DataTypeFromOnnx(static_cast<int32_t>(n.IntAttr("to", 0))));
  const OnnxValue* in = n.input(0);
  if (in && in->symbolic && (to.is_int() || to.is_uint())) {  // shape arithmetic stays symbolic
    n.outputs = {*in};
    return Status::Ok();
  }
  STRATA_ASSIGN_OR_RETURN(Expr x, n.InputExpr(0));
  return Emit(n, "cast", {x}, {{"dtype", to}});
}

Status Where(NodeContext& n) {
  STRATA_ASSIGN_OR_RETURN(Expr c, n.InputExpr(0));
  STRATA_ASSIGN_OR_RETURN(Expr x, n.InputExpr(1));
  STRATA_ASSIGN_OR_RETURN(Expr y, n.InputExpr(2));
  return Emit(n, "where", {c, x, y});
}

}  // namespace

void AddElementwiseConverters(ConverterTable& table) {
  table.insert({
      {"Add", {Binary("add", [](PrimExpr a, PrimExpr b) { return a + b; }), {}}},
      {"Sub", {Binary("subtract", [](PrimExpr a, PrimExpr b) { return a - b; }), {}}},
      {"Mul", {Binary("multiply", [](PrimExpr a, PrimExpr b) { return a * b; }), {}}},
      {"Div", {Binary("divide", [](PrimExpr a, PrimExpr b) { return tir::FloorDiv(a, b); }), {}}},
      {"Pow", {Binary("power"), {}}},
      {"Equal", {Binary("equal"), {}}},
      {"Less", {Binary("less"), {}}},
      {"Greater", {Binary("greater"), {}}},
      {"Where", {Where, {}}},
      {"Sqrt", {Unary("sqrt"), {}}},
      {"Erf", {Unary("erf"), {}}},
      {"Exp", {Unary("exp"), {}}},
      {"Log", {Unary("log"), {}}},
      {"Tanh", {Unary("tanh"), {}}},
      {"Sigmoid", {Unary("sigmoid"), {}}},
      {"Relu", {Unary("relu"), {}}},
      {"Neg", {Neg, {}}},
      {"Abs", {Unary("abs"), {}}},
      {"LeakyRelu", {LeakyRelu, {"alpha"}}},
      {"Gelu", {Gelu, {"approximate"}}},
      {"Clip", {Clip, {}}},
      {"Cast", {Cast, {"saturate", "to"}}},
      {"Identity", {PassThrough, {}}},
      {"Dropout", {PassThrough, {"seed"}}},
  });
}

}  // namespace strata::frontend::onnx_import
