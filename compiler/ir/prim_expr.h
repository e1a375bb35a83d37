// PrimExpr: scalar expressions, used both for symbolic shapes at the graph level
// (n, m * 2 + 1) and for arithmetic inside tensor programs.
//
// One expression language serves both levels, so a shape dimension written in a
// graph function and an index computed in a loop nest are the same objects and the
// same simplifier proves facts about both. Shape variables are i64.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/ir/node_ref.h"
#include "support/data_type.h"

namespace strata::tir {

using ir::NodeRef;

enum class PrimExprKind : uint8_t {
  kIntImm,
  kFloatImm,
  kVar,
  // Binary operators; BinaryOpNode covers kAdd..kOr.
  kAdd,
  kSub,
  kMul,
  kDiv,       // true division, floats only
  kFloorDiv,  // integers: rounds toward negative infinity
  kFloorMod,  // integers: result has the sign of the divisor
  kMin,
  kMax,
  kEQ,
  kNE,
  kLT,
  kLE,
  kGT,
  kGE,
  kAnd,
  kOr,
  kNot,
  kSelect,
  kCast,
  kCall,
  kBufferLoad,
};

// Text spelling of a binary operator kind: "+", "//", "min", "==", ...
std::string_view BinaryOpName(PrimExprKind kind);
inline bool IsBinaryOp(PrimExprKind k) { return k >= PrimExprKind::kAdd && k <= PrimExprKind::kOr; }
inline bool IsComparison(PrimExprKind k) { return k >= PrimExprKind::kEQ && k <= PrimExprKind::kGE; }

struct PrimExprNode {
  const PrimExprKind kind;
  const DataType dtype;

 protected:
  PrimExprNode(PrimExprKind kind, DataType dtype) : kind(kind), dtype(dtype) {}

 public:
  virtual ~PrimExprNode() = default;
};

// Handle to an immutable scalar expression. Arithmetic operators build nodes
// without simplifying (see simplify.h); an int converts to an i64 constant.
class PrimExpr : public NodeRef<PrimExprNode> {
 public:
  using NodeRef::NodeRef;
  PrimExpr() = default;
  PrimExpr(int64_t value);  // NOLINT: i64 constant, so `n * 2 + 1` reads naturally
  PrimExpr(int value) : PrimExpr(static_cast<int64_t>(value)) {}  // NOLINT
  DataType dtype() const { return (*this)->dtype; }
};

struct IntImmNode : PrimExprNode {
  STRATA_NODE_KIND(PrimExprKind, kIntImm)
  const int64_t value;
  // dtype must be integral or bool.
  static PrimExpr make(DataType dtype, int64_t value);
  IntImmNode(DataType dtype, int64_t value) : PrimExprNode(kKind, dtype), value(value) {}
};

struct FloatImmNode : PrimExprNode {
  STRATA_NODE_KIND(PrimExprKind, kFloatImm)
  const double value;
  static PrimExpr make(DataType dtype, double value);
  FloatImmNode(DataType dtype, double value) : PrimExprNode(kKind, dtype), value(value) {}
};

// A scalar variable: a symbolic shape dimension, a loop index, a let-bound value or
// a scalar parameter. Two Vars are the same variable only if they are the same node;
// the name is for printing and error messages.
struct VarNode : PrimExprNode {
  STRATA_NODE_KIND(PrimExprKind, kVar)
  const std::string name;
  VarNode(std::string name, DataType dtype) : PrimExprNode(kKind, dtype), name(std::move(name)) {}
};

class Var : public PrimExpr {
 public:
  Var() = default;
  explicit Var(std::string name, DataType dtype = DataType::I64());
  // Wraps an existing variable node (e.g. from PrimExpr::as<VarNode>()).
  static Var FromNode(const PrimExpr& expr);
  const VarNode* get() const { return static_cast<const VarNode*>(PrimExpr::get()); }
  const VarNode* operator->() const { return get(); }
  const std::string& name() const { return get()->name; }
};

struct BinaryOpNode : PrimExprNode {
  static bool IsKind(PrimExprKind k) { return IsBinaryOp(k); }
  const PrimExpr a, b;
  // Operands must have the same dtype; comparisons and logic ops yield bool.
  static PrimExpr make(PrimExprKind kind, PrimExpr a, PrimExpr b);
  BinaryOpNode(PrimExprKind kind, DataType dtype, PrimExpr a, PrimExpr b)
      : PrimExprNode(kind, dtype), a(std::move(a)), b(std::move(b)) {}
};

struct NotNode : PrimExprNode {
  STRATA_NODE_KIND(PrimExprKind, kNot)
  const PrimExpr a;
  static PrimExpr make(PrimExpr a);
  explicit NotNode(PrimExpr a) : PrimExprNode(kKind, DataType::Bool()), a(std::move(a)) {}
};

struct SelectNode : PrimExprNode {
  STRATA_NODE_KIND(PrimExprKind, kSelect)
  const PrimExpr condition, true_value, false_value;
  // Both branches are evaluated (no short circuit); condition is bool.
  static PrimExpr make(PrimExpr condition, PrimExpr true_value, PrimExpr false_value);
  SelectNode(PrimExpr c, PrimExpr t, PrimExpr f)
      : PrimExprNode(kKind, t->dtype), condition(std::move(c)), true_value(std::move(t)), false_value(std::move(f)) {}
};

struct CastNode : PrimExprNode {
  STRATA_NODE_KIND(PrimExprKind, kCast)
  const PrimExpr value;
  static PrimExpr make(DataType dtype, PrimExpr value);
  CastNode(DataType dtype, PrimExpr value) : PrimExprNode(kKind, dtype), value(std::move(value)) {}
};

// Math intrinsics a tensor program may call. All take and return floats of one dtype.
// round rounds half to even (IEEE roundeven, as ONNX Round and numpy.round);
// fmod is C's fmod (the result has the sign of the dividend).
enum class Intrinsic : uint8_t { kExp, kLog, kSqrt, kTanh, kErf, kPow, kAbs, kFloor, kCeil, kRound, kSin, kCos, kFmod };
std::string_view IntrinsicName(Intrinsic op);
// Number of arguments the intrinsic takes (pow, fmod: 2, the rest: 1).
int IntrinsicArity(Intrinsic op);
bool ParseIntrinsic(std::string_view name, Intrinsic* out);

struct CallNode : PrimExprNode {
  STRATA_NODE_KIND(PrimExprKind, kCall)
  const Intrinsic op;
  const std::vector<PrimExpr> args;
  // abs also accepts integers; the rest need float arguments of one dtype.
  static PrimExpr make(Intrinsic op, std::vector<PrimExpr> args);
  CallNode(DataType dtype, Intrinsic op, std::vector<PrimExpr> args)
      : PrimExprNode(kKind, dtype), op(op), args(std::move(args)) {}
};

// A buffer: a named, typed, row-major dense array whose shape may be symbolic.
// Parameters of tensor programs and local allocations are buffers.
struct BufferNode {
  const std::string name;
  const DataType dtype;
  const std::vector<PrimExpr> shape;
  BufferNode(std::string name, DataType dtype, std::vector<PrimExpr> shape)
      : name(std::move(name)), dtype(dtype), shape(std::move(shape)) {}
};
using Buffer = std::shared_ptr<const BufferNode>;
Buffer MakeBuffer(std::string name, DataType dtype, std::vector<PrimExpr> shape);

struct BufferLoadNode : PrimExprNode {
  STRATA_NODE_KIND(PrimExprKind, kBufferLoad)
  const Buffer buffer;
  const std::vector<PrimExpr> indices;
  // One i64 index per dimension of the buffer.
  static PrimExpr make(Buffer buffer, std::vector<PrimExpr> indices);
  BufferLoadNode(Buffer buffer, std::vector<PrimExpr> indices)
      : PrimExprNode(kKind, buffer->dtype), buffer(std::move(buffer)), indices(std::move(indices)) {}
};

// Constructors that read like math. None of them simplify.
PrimExpr operator+(PrimExpr a, PrimExpr b);
PrimExpr operator-(PrimExpr a, PrimExpr b);
PrimExpr operator*(PrimExpr a, PrimExpr b);
PrimExpr operator-(PrimExpr a);
PrimExpr FloorDiv(PrimExpr a, PrimExpr b);
PrimExpr FloorMod(PrimExpr a, PrimExpr b);
PrimExpr Min(PrimExpr a, PrimExpr b);
PrimExpr Max(PrimExpr a, PrimExpr b);
PrimExpr IntImm(DataType dtype, int64_t value);
PrimExpr FloatImm(DataType dtype, double value);

// The constant value of an integer immediate, or nullptr if `expr` is not one.
const int64_t* AsConstInt(const PrimExpr& expr);

}  // namespace strata::tir
