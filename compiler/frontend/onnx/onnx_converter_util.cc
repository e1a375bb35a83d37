// Helpers shared by the ONNX converter families.
#include "compiler/frontend/onnx/onnx_converter_util.h"

#include "compiler/ir/arith/simplify.h"

namespace strata::frontend::onnx_import {

using graph::StructInfo;
using graph::TensorStructInfoNode;

// ---- symbolic (shape) values -------------------------------------------------

// The elements of an integer value known at import time: a symbolic value, or
// an integer constant of rank <= 1. nullopt otherwise.
std::optional<std::vector<PrimExpr>> SymbolicInts(const OnnxValue* v, bool* scalar) {
  if (v == nullptr) return std::nullopt;
  if (v->symbolic) {
    if (scalar) *scalar = v->symbolic_scalar;
    return v->symbolic;
  }
  if (v->constant && v->constant->shape.size() <= 1 && (v->constant->dtype.is_int() || v->constant->dtype.is_uint())) {
    if (scalar) *scalar = v->constant->shape.empty();
    std::vector<PrimExpr> out;
    for (int64_t x : ConstantInts(*v->constant)) out.push_back(x);
    return out;
  }
  return std::nullopt;
}

OnnxValue Symbolic(std::vector<PrimExpr> elements, bool scalar) {
  OnnxValue v;
  for (PrimExpr& e : elements) e = arith::Simplify(e);
  v.symbolic = std::move(elements);
  v.symbolic_scalar = scalar;
  return v;
}

OnnxValue FromExpr(Expr e) {
  OnnxValue v;
  v.expr = std::move(e);
  return v;
}

// Constant integer list input (axes, pads...) or an error.
StatusOr<std::vector<int64_t>> ConstIntsInput(NodeContext& n, size_t i, const std::string& what) {
  std::optional<std::vector<PrimExpr>> ints = SymbolicInts(n.input(i));
  if (!ints) return n.Error(what + " (input " + std::to_string(i) + ") must be a constant integer tensor");
  std::vector<int64_t> out;
  for (const PrimExpr& e : *ints) {
    std::optional<int64_t> c = arith::AsConstant(e);
    if (!c) return n.Error(what + " (input " + std::to_string(i) + ") must be known at compile time");
    out.push_back(*c);
  }
  return out;
}

// Emits a call for the node's first output.
Status Emit(NodeContext& n, const std::string& op, std::vector<Expr> args, ir::Attrs attrs) {
  STRATA_ASSIGN_OR_RETURN(Expr out, n.ctx().Call(op, std::move(args), std::move(attrs), n.node().output(0)));
  n.outputs = {FromExpr(out)};
  return Status::Ok();
}

std::optional<size_t> BroadcastLength(std::initializer_list<size_t> sizes) {
  size_t length = 1;
  for (size_t size : sizes) {
    if (size == 1) continue;
    if (length != 1 && length != size) return std::nullopt;
    length = size;
  }
  return length;
}

// A binary elementwise op; on integer shape values known at import time it is
// evaluated symbolically (numpy broadcasting of scalars and equal lengths).
Converter Binary(const std::string& op, SymbolicFn symbolic) {
  return [op, symbolic](NodeContext& n) -> Status {
    if (symbolic) {
      bool sa = false, sb = false;
      auto a = SymbolicInts(n.input(0), &sa), b = SymbolicInts(n.input(1), &sb);
      // Shape values, and constants that meet them in shape idioms (the
      // TorchScript exporter's Mul(ConstantOfShape(...), -1)), are evaluated
      // at import time.
      const bool any_symbolic = (n.input(0) && n.input(0)->symbolic) || (n.input(1) && n.input(1)->symbolic);
      const bool both_int_constants = a && b && n.input(0)->constant && n.input(1)->constant;
      const std::optional<size_t> len = a && b ? BroadcastLength({a->size(), b->size()}) : std::nullopt;
      if (len && (any_symbolic || both_int_constants)) {
        std::vector<PrimExpr> out;
        for (size_t i = 0; i < *len; ++i) {
          out.push_back(symbolic((*a)[BroadcastIndex(a->size(), i)], (*b)[BroadcastIndex(b->size(), i)]));
        }
        n.outputs = {Symbolic(std::move(out), sa && sb)};
        return Status::Ok();
      }
    }
    STRATA_ASSIGN_OR_RETURN(Expr a, n.InputExpr(0));
    STRATA_ASSIGN_OR_RETURN(Expr b, n.InputExpr(1));
    return Emit(n, op, {a, b});
  };
}

Converter Unary(const std::string& op) {
  return [op](NodeContext& n) -> Status {
    STRATA_ASSIGN_OR_RETURN(Expr x, n.InputExpr(0));
    return Emit(n, op, {x});
  };
}

// A scalar constant of the dtype of input `like`.
StatusOr<Expr> ScalarLike(NodeContext& n, size_t like, double value) {
  STRATA_ASSIGN_OR_RETURN(const OnnxValue* v, n.Required(like));
  StructInfo sinfo = v->sinfo();
  const auto* t = sinfo.as<TensorStructInfoNode>();
  if (t == nullptr || t->dtype.is_void()) return n.Error("input has no known dtype");
  return n.ctx().Constant(MakeScalarTensor(t->dtype, value));
}

// Builds shape(...) from symbolic dims for a Strata operator argument.
Expr ShapeArg(const std::vector<PrimExpr>& dims) { return graph::ShapeExprNode::make(dims); }

// Starts and ends known as symbolic expressions (Shape -> Gather of a dynamic
// axis, as in pos[:, :t]); a value that depends on tensor data is an error.
StatusOr<std::vector<PrimExpr>> SymbolicIntsInput(NodeContext& n, size_t i, const std::string& what) {
  std::optional<std::vector<PrimExpr>> ints = SymbolicInts(n.input(i));
  if (!ints) {
    return n.Error(what + " (input " + std::to_string(i) +
                       ") must be computed from shapes or constants, not from tensor data (Strata compiles one program "
                       "for every shape, and a data-dependent slice has no shape at compile time)",
                   StatusCode::kUnimplemented);
  }
  return *ints;
}

}  // namespace strata::frontend::onnx_import
