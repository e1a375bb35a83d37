// ONNX elementwise operators: arithmetic (evaluated symbolically on shape
// values), comparisons, unary math, activations, cast, clip and where.

#include "compiler/frontend/onnx/onnx_converter_util.h"
#include "compiler/ir/arith/simplify.h"

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
    return ConstantElement(*v->constant, 0);
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

// Equal of shape values (the TorchScript exporter's Where(Equal(shape, -1),
// ones, shape) before Expand) is decided at import time when every element is
// provably equal or provably different; a bool constant results.
std::optional<bool> DecideEqual(const PrimExpr& a, const PrimExpr& b) {
  const PrimExpr diff = arith::Simplify(a - b);
  if (std::optional<int64_t> c = arith::AsConstant(diff)) return *c == 0;
  if (arith::ProveNonNegative(arith::Simplify(diff - 1)) ||
      arith::ProveNonNegative(arith::Simplify(PrimExpr(-1) - diff))) {
    return false;
  }
  return std::nullopt;
}

Status Equal(NodeContext& n) {
  bool sa = false, sb = false;
  auto a = SymbolicInts(n.input(0), &sa), b = SymbolicInts(n.input(1), &sb);
  const bool any_symbolic = (n.input(0) && n.input(0)->symbolic) || (n.input(1) && n.input(1)->symbolic);
  const std::optional<size_t> broadcast = a && b ? BroadcastLength({a->size(), b->size()}) : std::nullopt;
  if (broadcast && any_symbolic) {
    const size_t len = *broadcast;
    std::vector<uint8_t> decided;
    for (size_t i = 0; i < len; ++i) {
      std::optional<bool> eq = DecideEqual((*a)[BroadcastIndex(a->size(), i)], (*b)[BroadcastIndex(b->size(), i)]);
      if (!eq) break;
      decided.push_back(*eq ? 1 : 0);
    }
    if (decided.size() == len) {
      auto t = std::make_shared<graph::HostTensor>();
      t->dtype = DataType::Bool();
      if (!(sa && sb)) t->shape = {static_cast<int64_t>(len)};
      t->bytes = std::move(decided);
      OnnxValue v;
      v.constant = std::move(t);
      n.outputs = {v};
      return Status::Ok();
    }
  }
  return Binary("equal")(n);
}

// Where over shape values with a condition known at import time stays a
// shape value (element by element, scalars broadcast).
std::optional<OnnxValue> SymbolicWhere(NodeContext& n) {
  const OnnxValue* cond = n.input(0);
  if (cond == nullptr || !cond->constant || !cond->constant->dtype.is_bool() || cond->constant->shape.size() > 1) {
    return std::nullopt;
  }
  bool sx = false, sy = false;
  auto x = SymbolicInts(n.input(1), &sx), y = SymbolicInts(n.input(2), &sy);
  const bool any_symbolic = (n.input(1) && n.input(1)->symbolic) || (n.input(2) && n.input(2)->symbolic);
  if (!x || !y || !any_symbolic) return std::nullopt;
  const std::vector<uint8_t>& c = cond->constant->bytes;
  const std::optional<size_t> len = BroadcastLength({c.size(), x->size(), y->size()});
  if (!len) return std::nullopt;
  std::vector<PrimExpr> out;
  for (size_t i = 0; i < *len; ++i) {
    const bool pick_x = c[BroadcastIndex(c.size(), i)] != 0;
    out.push_back(pick_x ? (*x)[BroadcastIndex(x->size(), i)] : (*y)[BroadcastIndex(y->size(), i)]);
  }
  return Symbolic(std::move(out), cond->constant->shape.empty() && sx && sy);
}

Status Where(NodeContext& n) {
  if (std::optional<OnnxValue> symbolic = SymbolicWhere(n)) {
    n.outputs = {*symbolic};
    return Status::Ok();
  }
  STRATA_ASSIGN_OR_RETURN(Expr c, n.InputExpr(0));
  STRATA_ASSIGN_OR_RETURN(Expr x, n.InputExpr(1));
  STRATA_ASSIGN_OR_RETURN(Expr y, n.InputExpr(2));
  return Emit(n, "where", {c, x, y});
}

// Float attributes copied onto the Strata op under the same names.
Converter UnaryWithFloatAttrs(const std::string& op, std::vector<std::pair<std::string, float>> attrs) {
  return [op, attrs](NodeContext& n) -> Status {
    STRATA_ASSIGN_OR_RETURN(Expr x, n.InputExpr(0));
    ir::Attrs out;
    for (const auto& [name, fallback] : attrs) out[name] = static_cast<double>(n.FloatAttr(name, fallback));
    return Emit(n, op, {x}, out);
  };
}

Status IsInf(NodeContext& n) {
  STRATA_ASSIGN_OR_RETURN(Expr x, n.InputExpr(0));
  return Emit(n, "isinf", {x},
              {{"detect_positive", n.IntAttr("detect_positive", 1) != 0},
               {"detect_negative", n.IntAttr("detect_negative", 1) != 0}});
}

Status Mod(NodeContext& n) {
  const bool fmod = n.IntAttr("fmod", 0) != 0;
  if (!fmod) {  // integer shape arithmetic (x % k of a dim) stays symbolic
    bool sa = false, sb = false;
    auto a = SymbolicInts(n.input(0), &sa), b = SymbolicInts(n.input(1), &sb);
    const bool any_symbolic = (n.input(0) && n.input(0)->symbolic) || (n.input(1) && n.input(1)->symbolic);
    if (a && b && any_symbolic && a->size() == 1 && b->size() == 1) {
      n.outputs = {Symbolic({tir::FloorMod((*a)[0], (*b)[0])}, sa && sb)};
      return Status::Ok();
    }
  }
  STRATA_ASSIGN_OR_RETURN(Expr a, n.InputExpr(0));
  STRATA_ASSIGN_OR_RETURN(Expr b, n.InputExpr(1));
  return Emit(n, "mod", {a, b}, {{"fmod", fmod}});
}

// Variadic Min/Max/Sum/Mean: a left-to-right chain of the binary op (each
// step broadcasts), divided by the count for Mean. Min and Max of shape values
// stay symbolic.
Converter Variadic(const std::string& op, SymbolicFn symbolic, bool mean) {
  return [op, symbolic, mean](NodeContext& n) -> Status {
    if (n.num_inputs() == 0) return n.Error("needs at least one input");
    if (symbolic) {
      std::vector<PrimExpr> folded;
      bool all_scalar = true, any_symbolic = false, ok = true;
      for (size_t i = 0; i < n.num_inputs() && ok; ++i) {
        bool scalar = false;
        auto v = SymbolicInts(n.input(i), &scalar);
        ok = v && v->size() == 1;
        if (!ok) break;
        all_scalar = all_scalar && scalar;
        any_symbolic = any_symbolic || n.input(i)->symbolic;
        folded.push_back(folded.empty() ? (*v)[0] : symbolic(folded.back(), (*v)[0]));
      }
      if (ok && any_symbolic) {
        n.outputs = {Symbolic({folded.back()}, all_scalar)};
        return Status::Ok();
      }
    }
    STRATA_ASSIGN_OR_RETURN(Expr acc, n.InputExpr(0));
    const std::string name = n.node().output(0);
    if (n.num_inputs() == 1 && !mean) {
      n.outputs = {FromExpr(acc)};
      return Status::Ok();
    }
    for (size_t i = 1; i < n.num_inputs(); ++i) {
      STRATA_ASSIGN_OR_RETURN(Expr next, n.InputExpr(i));
      const bool last = i + 1 == n.num_inputs() && !mean;
      STRATA_ASSIGN_OR_RETURN(acc, n.ctx().Call(op, {acc, next}, {}, last ? name : name + "_" + std::to_string(i)));
    }
    if (mean) {
      STRATA_ASSIGN_OR_RETURN(Expr count, ScalarLike(n, 0, static_cast<double>(n.num_inputs())));
      return Emit(n, "divide", {acc, count});
    }
    n.outputs = {FromExpr(acc)};
    return Status::Ok();
  };
}

}  // namespace

void AddElementwiseConverters(ConverterTable& table) {
  table.insert({
      {"Add", {Binary("add", [](PrimExpr a, PrimExpr b) { return a + b; }), {}}},
      {"Sub", {Binary("subtract", [](PrimExpr a, PrimExpr b) { return a - b; }), {}}},
      {"Mul", {Binary("multiply", [](PrimExpr a, PrimExpr b) { return a * b; }), {}}},
      {"Div", {Binary("divide", [](PrimExpr a, PrimExpr b) { return tir::FloorDiv(a, b); }), {}}},
      {"Pow", {Binary("power"), {}}},
      {"Equal", {Equal, {}}},
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
      {"LessOrEqual", {Binary("less_equal"), {}}},
      {"GreaterOrEqual", {Binary("greater_equal"), {}}},
      {"Not", {Unary("logical_not"), {}}},
      {"And", {Binary("logical_and"), {}}},
      {"Or", {Binary("logical_or"), {}}},
      {"Xor", {Binary("logical_xor"), {}}},
      {"IsNaN", {Unary("isnan"), {}}},
      {"IsInf", {IsInf, {"detect_negative", "detect_positive"}}},
      {"Floor", {Unary("floor"), {}}},
      {"Ceil", {Unary("ceil"), {}}},
      {"Round", {Unary("round"), {}}},
      {"Sign", {Unary("sign"), {}}},
      {"Reciprocal", {Unary("reciprocal"), {}}},
      {"Sin", {Unary("sin"), {}}},
      {"Cos", {Unary("cos"), {}}},
      {"Softplus", {Unary("softplus"), {}}},
      {"Softsign", {Unary("softsign"), {}}},
      {"HardSwish", {Unary("hard_swish"), {}}},
      {"HardSigmoid", {UnaryWithFloatAttrs("hard_sigmoid", {{"alpha", 0.2f}, {"beta", 0.5f}}), {"alpha", "beta"}}},
      {"Elu", {UnaryWithFloatAttrs("elu", {{"alpha", 1.0f}}), {"alpha"}}},
      {"Selu",
       {UnaryWithFloatAttrs("selu", {{"alpha", 1.67326319217681884765625f}, {"gamma", 1.05070102214813232421875f}}),
        {"alpha", "gamma"}}},
      {"PRelu", {Binary("prelu"), {}}},
      {"Mod", {Mod, {"fmod"}}},
      {"Max",
       {Variadic(
            "maximum", [](PrimExpr a, PrimExpr b) { return tir::Max(a, b); }, false),
        {}}},
      {"Min",
       {Variadic(
            "minimum", [](PrimExpr a, PrimExpr b) { return tir::Min(a, b); }, false),
        {}}},
      {"Sum",
       {Variadic(
            "add", [](PrimExpr a, PrimExpr b) { return a + b; }, false),
        {}}},
      {"Mean", {Variadic("add", nullptr, true), {}}},
  });
}

}  // namespace strata::frontend::onnx_import
