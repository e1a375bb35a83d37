// Elementwise operators: binary arithmetic and comparisons with numpy
// broadcasting, unary math, cast, clip and where.
//
// Broadcasting in the generated kernels: an input dimension provably equal to
// the output's is indexed directly, a constant 1 is indexed at 0, and any other
// (symbolic) dimension is indexed with select(dim == 1, 0, i) after an assert
// that it is 1 or the output's extent, so one kernel serves every shape the
// struct info allows.
#include <cmath>
#include <limits>

#include "compiler/analysis/struct_info_util.h"
#include "compiler/ir/arith/simplify.h"
#include "compiler/op/builtin_ops.h"
#include "compiler/op/kernel_builder.h"
#include "compiler/op/op_util.h"
#include "compiler/op/tir_build.h"

namespace strata::op {
namespace {

using tir::FloatImm;
using tir::PrimExprKind;

// ---- inference ---------------------------------------------------------------

StatusOr<StructInfo> InferBroadcast(const OpCall& call, size_t lhs, size_t rhs, DataType* dtype_out) {
  STRATA_ASSIGN_OR_RETURN(const TensorStructInfoNode* a, TensorArg(call, lhs));
  STRATA_ASSIGN_OR_RETURN(const TensorStructInfoNode* b, TensorArg(call, rhs));
  STRATA_ASSIGN_OR_RETURN(DataType dtype, SameDtype(call, lhs, rhs, a->dtype, b->dtype));
  *dtype_out = dtype;
  if (!a->shape || !b->shape) {
    const int ndim = a->ndim < 0 || b->ndim < 0 ? -1 : std::max(a->ndim, b->ndim);
    return TensorStructInfoNode::make_ndim(ndim, dtype);
  }
  STRATA_ASSIGN_OR_RETURN(auto dims, BroadcastShapes(call, lhs, rhs, *a->shape, *b->shape));
  return TensorFromDims(dims, dtype);
}

InferFn BinaryInfer(bool returns_bool) {
  return [returns_bool](const OpCall& call) -> StatusOr<StructInfo> {
    DataType dtype;
    STRATA_ASSIGN_OR_RETURN(StructInfo out, InferBroadcast(call, 0, 1, &dtype));
    const auto* t = out.as<TensorStructInfoNode>();
    // Arithmetic has no meaning on booleans (the logical_* ops do); the kernel
    // could not be generated.
    if (!returns_bool && t->dtype.is_bool()) {
      return ErrorStatus() << call.name() << ": the operands are bool tensors; it needs integers or floats";
    }
    if (!returns_bool) return out;
    return t->shape ? TensorStructInfoNode::make(*t->shape, DataType::Bool())
                    : TensorStructInfoNode::make_ndim(t->ndim, DataType::Bool());
  };
}

// Unary ops keep the shape; all are arithmetic (bool is refused), and
// `float_only` ops reject integer tensors.
InferFn UnaryInfer(bool float_only) {
  return [float_only](const OpCall& call) -> StatusOr<StructInfo> {
    STRATA_ASSIGN_OR_RETURN(const TensorStructInfoNode* x, TensorArg(call, 0));
    if (float_only && !x->dtype.is_void() && !x->dtype.is_float()) {
      return ErrorStatus() << call.name() << ": " << ArgText(call, 0) << " must be a float tensor";
    }
    if (x->dtype.is_bool()) {
      return ErrorStatus() << call.name() << ": " << ArgText(call, 0)
                           << " must be an integer or float tensor, not bool";
    }
    return call.arg_sinfo(0);
  };
}

// ---- kernels -----------------------------------------------------------------

using ScalarFn = std::function<PrimExpr(const std::vector<PrimExpr>& operands, DataType out_dtype)>;

// out = fn(inputs...) with broadcasting; `inputs` are argument positions.
LegalizeFn BroadcastKernel(std::vector<size_t> inputs, ScalarFn fn) {
  return [inputs, fn](const OpCall& call, KernelBuilder& b) -> StatusOr<tir::Stmt> {
    std::vector<tir::Buffer> buffers;
    for (size_t k = 0; k < inputs.size(); ++k) {
      STRATA_ASSIGN_OR_RETURN(
          tir::Buffer buffer,
          b.Input(call.arg(inputs[k]), std::string(1, static_cast<char>('A' + k)), call.arg_name(inputs[k])));
      buffers.push_back(buffer);
    }
    STRATA_ASSIGN_OR_RETURN(tir::Buffer out, b.Output(call.call().struct_info, "Out"));
    std::vector<tir::Stmt> stmts;
    for (size_t k = 0; k < buffers.size(); ++k) {
      BroadcastChecks("argument '" + call.arg_name(inputs[k]) + "'", buffers[k]->shape, out->shape, &stmts);
    }
    stmts.push_back(b.Elementwise(out->shape, [&](const std::vector<PrimExpr>& index) {
      std::vector<PrimExpr> operands;
      for (const tir::Buffer& buffer : buffers) {
        operands.push_back(tir::BufferLoadNode::make(buffer, BroadcastIndex(buffer->shape, out->shape, index)));
      }
      return tir::BufferStoreNode::make(out, index, fn(operands, out->dtype));
    }));
    return tir::SeqStmtNode::make(std::move(stmts));
  };
}

using build::Bin;
PrimExpr Call(tir::Intrinsic op, std::vector<PrimExpr> args) { return tir::CallNode::make(op, std::move(args)); }
PrimExpr Const(DataType dtype, double v) {
  return dtype.is_float() ? FloatImm(dtype, v) : tir::IntImm(dtype, static_cast<int64_t>(v));
}

OpDef Binary(const std::string& name, bool returns_bool, ScalarFn fn) {
  return OpDef{name, {"x", "y"}, 0, {}, BinaryInfer(returns_bool), BroadcastKernel({0, 1}, std::move(fn))};
}

OpDef Comparison(const std::string& name, PrimExprKind kind) {
  return Binary(name, true, [kind](const std::vector<PrimExpr>& v, DataType) { return Bin(kind, v[0], v[1]); });
}

OpDef Unary(const std::string& name, bool float_only, std::function<PrimExpr(PrimExpr x, DataType t)> fn) {
  return OpDef{name,
               {"x"},
               0,
               {},
               UnaryInfer(float_only),
               BroadcastKernel({0}, [fn](const std::vector<PrimExpr>& v, DataType t) { return fn(v[0], t); })};
}

PrimExpr Sigmoid(PrimExpr x, DataType t) {
  return Bin(PrimExprKind::kDiv, Const(t, 1), Const(t, 1) + Call(tir::Intrinsic::kExp, {-x}));
}

PrimExpr Erf(PrimExpr x) { return Call(tir::Intrinsic::kErf, {x}); }

StatusOr<StructInfo> InferCast(const OpCall& call) {
  STRATA_ASSIGN_OR_RETURN(const TensorStructInfoNode* x, TensorArg(call, 0));
  DataType dtype = call.DataTypeAttr("dtype");
  return x->shape ? TensorStructInfoNode::make(*x->shape, dtype) : TensorStructInfoNode::make_ndim(x->ndim, dtype);
}

StatusOr<StructInfo> InferClip(const OpCall& call) {
  if (call.FloatAttr("min") > call.FloatAttr("max")) {
    return ErrorStatus() << call.name() << ": min " << call.FloatAttr("min") << " is greater than max "
                         << call.FloatAttr("max");
  }
  return UnaryInfer(false)(call);
}

StatusOr<StructInfo> InferWhere(const OpCall& call) {
  STRATA_ASSIGN_OR_RETURN(const TensorStructInfoNode* cond, TensorArg(call, 0));
  if (!cond->dtype.is_void() && !cond->dtype.is_bool()) {
    return ErrorStatus() << call.name() << ": " << ArgText(call, 0) << " must be a bool tensor";
  }
  DataType dtype;
  STRATA_ASSIGN_OR_RETURN(StructInfo values, InferBroadcast(call, 1, 2, &dtype));
  const auto* v = values.as<TensorStructInfoNode>();
  if (!cond->shape || !v->shape) {
    const int ndim = cond->ndim < 0 || v->ndim < 0 ? -1 : std::max(cond->ndim, v->ndim);
    return TensorStructInfoNode::make_ndim(ndim, dtype);
  }
  STRATA_ASSIGN_OR_RETURN(auto dims, BroadcastShapes(call, 0, 1, *cond->shape, *v->shape));
  return TensorFromDims(dims, dtype);
}

// Logical ops take and return bool tensors.
InferFn LogicalInfer(size_t arity) {
  return [arity](const OpCall& call) -> StatusOr<StructInfo> {
    for (size_t i = 0; i < arity; ++i) {
      STRATA_ASSIGN_OR_RETURN(const TensorStructInfoNode* t, TensorArg(call, i));
      if (!t->dtype.is_void() && !t->dtype.is_bool()) {
        return ErrorStatus() << call.name() << ": " << ArgText(call, i) << " must be a bool tensor";
      }
    }
    if (arity == 1) return call.arg_sinfo(0);
    return BinaryInfer(true)(call);
  };
}

// Float predicates (isnan, isinf) keep the shape and return bool.
StatusOr<StructInfo> InferFloatPredicate(const OpCall& call) {
  STRATA_ASSIGN_OR_RETURN(StructInfo x, UnaryInfer(true)(call));
  const auto* t = x.as<TensorStructInfoNode>();
  return t->shape ? TensorStructInfoNode::make(*t->shape, DataType::Bool())
                  : TensorStructInfoNode::make_ndim(t->ndim, DataType::Bool());
}

// mod: `fmod` false is the floor modulo of integers (the result has the
// divisor's sign, Python's %), true is C's fmod (the dividend's sign), the
// only form defined for floats.
StatusOr<StructInfo> InferMod(const OpCall& call) {
  DataType dtype;
  STRATA_ASSIGN_OR_RETURN(StructInfo out, InferBroadcast(call, 0, 1, &dtype));
  if (!call.BoolAttr("fmod") && dtype.is_float()) {
    return ErrorStatus() << call.name() << ": fmod=false (floor modulo) is defined for integer tensors only; "
                         << ArgText(call, 0) << " is " << dtype.ToString();
  }
  return out;
}

PrimExpr ModScalar(const PrimExpr& a, const PrimExpr& b, bool fmod, DataType t) {
  if (t.is_float()) return Call(tir::Intrinsic::kFmod, {a, b});
  PrimExpr floor_mod = tir::FloorMod(a, b);
  if (!fmod || t.is_uint()) return floor_mod;
  // Truncated remainder from the floor one: they differ by b when the result
  // is non-zero and the signs of the remainder and the dividend differ.
  PrimExpr zero = Const(t, 0);
  PrimExpr differ = Bin(PrimExprKind::kNE, Bin(PrimExprKind::kLT, floor_mod, zero), Bin(PrimExprKind::kLT, a, zero));
  PrimExpr adjust = Bin(PrimExprKind::kAnd, Bin(PrimExprKind::kNE, floor_mod, zero), differ);
  return tir::SelectNode::make(adjust, floor_mod - b, floor_mod);
}

// isinf with ONNX's detect_positive / detect_negative.
PrimExpr IsInf(const PrimExpr& x, DataType t, bool positive, bool negative) {
  const double inf = std::numeric_limits<double>::infinity();
  PrimExpr is_pos = Bin(PrimExprKind::kEQ, x, FloatImm(t, inf));
  PrimExpr is_neg = Bin(PrimExprKind::kEQ, x, FloatImm(t, -inf));
  if (positive && negative) return Bin(PrimExprKind::kOr, is_pos, is_neg);
  if (positive) return is_pos;
  if (negative) return is_neg;
  return tir::IntImm(DataType::Bool(), 0);
}

PrimExpr Clamp01(const PrimExpr& v, DataType t) { return tir::Min(tir::Max(v, Const(t, 0)), Const(t, 1)); }

// Unary ops with float attributes (alpha, beta, gamma): the scalar function
// reads them from the call.
using AttrUnaryFn = std::function<PrimExpr(PrimExpr x, DataType t, const OpCall& call)>;
OpDef UnaryWithAttrs(const std::string& name, std::vector<AttrDef> attrs, AttrUnaryFn fn) {
  return OpDef{name,
               {"x"},
               0,
               std::move(attrs),
               UnaryInfer(true),
               [fn](const OpCall& call, KernelBuilder& b) -> StatusOr<tir::Stmt> {
                 return BroadcastKernel({0}, [fn, &call](const std::vector<PrimExpr>& v, DataType t) {
                   return fn(v[0], t, call);
                 })(call, b);
               }};
}

AttrDef FloatAttrDef(const std::string& name, double value) {
  return AttrDef{name, AttrKind::kFloat, ir::AttrValue(value)};
}

}  // namespace

std::vector<OpDef> ElementwiseOps() {
  using K = PrimExprKind;
  using V = const std::vector<PrimExpr>&;
  std::vector<OpDef> ops = {
      Binary("add", false, [](V v, DataType) { return v[0] + v[1]; }),
      Binary("subtract", false, [](V v, DataType) { return v[0] - v[1]; }),
      Binary("multiply", false, [](V v, DataType) { return v[0] * v[1]; }),
      // Integer division rounds toward negative infinity (numpy's //).
      Binary("divide", false,
             [](V v, DataType t) { return t.is_float() ? Bin(K::kDiv, v[0], v[1]) : tir::FloorDiv(v[0], v[1]); }),
      Binary("maximum", false, [](V v, DataType) { return tir::Max(v[0], v[1]); }),
      Binary("minimum", false, [](V v, DataType) { return tir::Min(v[0], v[1]); }),
      Comparison("equal", K::kEQ),
      Comparison("not_equal", K::kNE),
      Comparison("less", K::kLT),
      Comparison("less_equal", K::kLE),
      Comparison("greater", K::kGT),
      Comparison("greater_equal", K::kGE),
      Unary("neg", false, [](PrimExpr x, DataType) { return -x; }),
      Unary("abs", false, [](PrimExpr x, DataType) { return Call(tir::Intrinsic::kAbs, {x}); }),
      Unary("exp", true, [](PrimExpr x, DataType) { return Call(tir::Intrinsic::kExp, {x}); }),
      Unary("log", true, [](PrimExpr x, DataType) { return Call(tir::Intrinsic::kLog, {x}); }),
      Unary("sqrt", true, [](PrimExpr x, DataType) { return Call(tir::Intrinsic::kSqrt, {x}); }),
      Unary("rsqrt", true,
            [](PrimExpr x, DataType t) { return Bin(K::kDiv, Const(t, 1), Call(tir::Intrinsic::kSqrt, {x})); }),
      Unary("tanh", true, [](PrimExpr x, DataType) { return Call(tir::Intrinsic::kTanh, {x}); }),
      Unary("erf", true, [](PrimExpr x, DataType) { return Erf(x); }),
      Unary("sigmoid", true, Sigmoid),
      Unary("relu", false, [](PrimExpr x, DataType t) { return tir::Max(x, Const(t, 0)); }),
      Unary("silu", true, [](PrimExpr x, DataType t) { return x * Sigmoid(x, t); }),
      Unary("floor", true, [](PrimExpr x, DataType) { return Call(tir::Intrinsic::kFloor, {x}); }),
      Unary("ceil", true, [](PrimExpr x, DataType) { return Call(tir::Intrinsic::kCeil, {x}); }),
      Unary("round", true, [](PrimExpr x, DataType) { return Call(tir::Intrinsic::kRound, {x}); }),
      Unary("sin", true, [](PrimExpr x, DataType) { return Call(tir::Intrinsic::kSin, {x}); }),
      Unary("cos", true, [](PrimExpr x, DataType) { return Call(tir::Intrinsic::kCos, {x}); }),
      Unary("reciprocal", true, [](PrimExpr x, DataType t) { return Bin(K::kDiv, Const(t, 1), x); }),
      Unary("sign", false,
            [](PrimExpr x, DataType t) {
              PrimExpr zero = Const(t, 0);
              return tir::SelectNode::make(Bin(K::kGT, x, zero), Const(t, 1),
                                           tir::SelectNode::make(Bin(K::kLT, x, zero), Const(t, -1), zero));
            }),
      // softplus = log(1 + exp(x)), written so exp never overflows.
      Unary("softplus", true,
            [](PrimExpr x, DataType t) {
              PrimExpr e = Call(tir::Intrinsic::kExp, {-Call(tir::Intrinsic::kAbs, {x})});
              return tir::Max(x, Const(t, 0)) + Call(tir::Intrinsic::kLog, {Const(t, 1) + e});
            }),
      Unary("softsign", true,
            [](PrimExpr x, DataType t) { return Bin(K::kDiv, x, Const(t, 1) + Call(tir::Intrinsic::kAbs, {x})); }),
      Unary("hard_swish", true,
            [](PrimExpr x, DataType t) { return x * Clamp01(x * Const(t, 1.0 / 6.0) + Const(t, 0.5), t); }),
      // x != x holds exactly for NaN (an unordered comparison).
      OpDef{"isnan",
            {"x"},
            0,
            {},
            InferFloatPredicate,
            BroadcastKernel({0}, [](V v, DataType) { return Bin(K::kNE, v[0], v[0]); })},
      OpDef{"logical_not",
            {"x"},
            0,
            {},
            LogicalInfer(1),
            BroadcastKernel({0}, [](V v, DataType) { return tir::NotNode::make(v[0]); })},
      OpDef{"logical_and",
            {"x", "y"},
            0,
            {},
            LogicalInfer(2),
            BroadcastKernel({0, 1}, [](V v, DataType) { return Bin(K::kAnd, v[0], v[1]); })},
      OpDef{"logical_or",
            {"x", "y"},
            0,
            {},
            LogicalInfer(2),
            BroadcastKernel({0, 1}, [](V v, DataType) { return Bin(K::kOr, v[0], v[1]); })},
      OpDef{"logical_xor",
            {"x", "y"},
            0,
            {},
            LogicalInfer(2),
            BroadcastKernel({0, 1}, [](V v, DataType) { return Bin(K::kNE, v[0], v[1]); })},
      // prelu: slope broadcast against x (per channel, or any shape that broadcasts).
      Binary("prelu", false,
             [](V v, DataType t) { return tir::SelectNode::make(Bin(K::kLT, v[0], Const(t, 0)), v[0] * v[1], v[0]); }),
      UnaryWithAttrs("elu", {FloatAttrDef("alpha", 1.0)},
                     [](PrimExpr x, DataType t, const OpCall& call) {
                       PrimExpr negative =
                           Const(t, call.FloatAttr("alpha")) * (Call(tir::Intrinsic::kExp, {x}) - Const(t, 1));
                       return tir::SelectNode::make(Bin(K::kGT, x, Const(t, 0)), x, negative);
                     }),
      UnaryWithAttrs(
          "selu", {FloatAttrDef("alpha", 1.67326319217681884765625), FloatAttrDef("gamma", 1.05070102214813232421875)},
          [](PrimExpr x, DataType t, const OpCall& call) {
            PrimExpr negative = Const(t, call.FloatAttr("alpha")) * (Call(tir::Intrinsic::kExp, {x}) - Const(t, 1));
            return Const(t, call.FloatAttr("gamma")) * tir::SelectNode::make(Bin(K::kGT, x, Const(t, 0)), x, negative);
          }),
      UnaryWithAttrs("hard_sigmoid", {FloatAttrDef("alpha", 0.2), FloatAttrDef("beta", 0.5)},
                     [](PrimExpr x, DataType t, const OpCall& call) {
                       return Clamp01(Const(t, call.FloatAttr("alpha")) * x + Const(t, call.FloatAttr("beta")), t);
                     }),
  };
  // power: floats only (an integer power is rarely what a model means).
  ops.push_back(OpDef{"power",
                      {"x", "y"},
                      0,
                      {},
                      [](const OpCall& call) -> StatusOr<StructInfo> {
                        DataType dtype;
                        STRATA_ASSIGN_OR_RETURN(StructInfo out, InferBroadcast(call, 0, 1, &dtype));
                        if (!dtype.is_void() && !dtype.is_float()) {
                          return ErrorStatus() << call.name() << ": " << ArgText(call, 0) << " must be a float tensor";
                        }
                        return out;
                      },
                      BroadcastKernel({0, 1}, [](V v, DataType) {
                        return Call(tir::Intrinsic::kPow, {v[0], v[1]});
                      })});
  // gelu: approximate = "none" (the erf form) or "tanh".
  ops.push_back(OpDef{"gelu",
                      {"x"},
                      0,
                      {AttrDef{"approximate", AttrKind::kString, ir::AttrValue(std::string("none"))}},
                      [](const OpCall& call) -> StatusOr<StructInfo> {
                        const std::string& form = call.StringAttr("approximate");
                        if (form != "none" && form != "tanh") {
                          return ErrorStatus()
                                 << call.name() << ": attribute 'approximate' must be \"none\" or \"tanh\", got \""
                                 << form << "\"";
                        }
                        return UnaryInfer(true)(call);
                      },
                      [](const OpCall& call, KernelBuilder& b) -> StatusOr<tir::Stmt> {
                        const bool tanh_form = call.StringAttr("approximate") == "tanh";
                        return BroadcastKernel({0}, [tanh_form](V v, DataType t) {
                          PrimExpr x = v[0];
                          PrimExpr inner =
                              tanh_form ? Call(tir::Intrinsic::kTanh,
                                               {Const(t, std::sqrt(2.0 / M_PI)) * (x + Const(t, 0.044715) * x * x * x)})
                                        : Erf(x * Const(t, M_SQRT1_2));
                          return Const(t, 0.5) * x * (Const(t, 1) + inner);
                        })(call, b);
                      }});
  ops.push_back(OpDef{"cast",
                      {"x"},
                      0,
                      {AttrDef{"dtype", AttrKind::kDataType, std::nullopt}},
                      InferCast,
                      BroadcastKernel({0}, [](V v, DataType t) { return tir::CastNode::make(t, v[0]); })});
  ops.push_back(OpDef{"clip",
                      {"x"},
                      0,
                      {AttrDef{"min", AttrKind::kFloat, std::nullopt}, AttrDef{"max", AttrKind::kFloat, std::nullopt}},
                      InferClip,
                      [](const OpCall& call, KernelBuilder& b) -> StatusOr<tir::Stmt> {
                        const double lo = call.FloatAttr("min"), hi = call.FloatAttr("max");
                        return BroadcastKernel({0}, [lo, hi](V v, DataType t) {
                          return tir::Min(tir::Max(v[0], Const(t, lo)), Const(t, hi));
                        })(call, b);
                      }});
  ops.push_back(
      OpDef{"where", {"condition", "x", "y"}, 0, {}, InferWhere, BroadcastKernel({0, 1, 2}, [](V v, DataType) {
              return tir::SelectNode::make(v[0], v[1], v[2]);
            })});
  ops.push_back(OpDef{
      "mod",
      {"x", "y"},
      0,
      {AttrDef{"fmod", AttrKind::kBool, ir::AttrValue(false)}},
      InferMod,
      [](const OpCall& call, KernelBuilder& b) -> StatusOr<tir::Stmt> {
        const bool fmod = call.BoolAttr("fmod");
        return BroadcastKernel({0, 1}, [fmod](V v, DataType t) { return ModScalar(v[0], v[1], fmod, t); })(call, b);
      }});
  ops.push_back(OpDef{"isinf",
                      {"x"},
                      0,
                      {AttrDef{"detect_positive", AttrKind::kBool, ir::AttrValue(true)},
                       AttrDef{"detect_negative", AttrKind::kBool, ir::AttrValue(true)}},
                      InferFloatPredicate,
                      [](const OpCall& call, KernelBuilder& b) -> StatusOr<tir::Stmt> {
                        const bool pos = call.BoolAttr("detect_positive"), neg = call.BoolAttr("detect_negative");
                        return BroadcastKernel(
                            {0}, [pos, neg](V v, DataType) { return IsInf(v[0], v[0].dtype(), pos, neg); })(call, b);
                      }});
  return ops;
}

}  // namespace strata::op
