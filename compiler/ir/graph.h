// Graph functions: dataflow over tensors with symbolic shapes.
//
// A graph function is a sequence of binding blocks (plain or dataflow) ending in a
// result expression. Every value has struct info once the module is normalized.
// The graph level reaches the other two levels through three ops:
//   call_tir(@prim_func, (args), OUT_SI [, shape(tir_vars)])   tensor program, DPS
//   call_dps_packed("lib_fn", (args), OUT_SI)                  library function, DPS
//   call_packed("lib_fn", args...)                              library function, returns
// and calls other graph functions directly: @f(a, b).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "compiler/ir/attrs.h"
#include "compiler/ir/struct_info.h"
#include "support/source_location.h"

namespace strata::graph {

enum class ExprKind : uint8_t {
  kVar,
  kGlobalVar,
  kExternFunc,
  kOp,
  kConstant,
  kShapeExpr,
  kPrimValue,
  kStringImm,
  kDataTypeImm,
  kTuple,
  kTupleGetItem,
  kCall,
  kIf,
  kSeqExpr,
  kFunction,
};

struct ExprNode {
  const ExprKind kind;
  // Filled by normalization (normalize.h); null on nodes built before it.
  const StructInfo struct_info;

 protected:
  ExprNode(ExprKind kind, StructInfo sinfo) : kind(kind), struct_info(std::move(sinfo)) {}

 public:
  virtual ~ExprNode() = default;
};
using Expr = NodeRef<ExprNode>;

// A local variable. Identity is the node; `name` is for printing.
// Dataflow vars are visible only inside their dataflow block.
struct VarNode : ExprNode {
  STRATA_NODE_KIND(ExprKind, kVar)
  const std::string name;
  const bool is_dataflow;
  VarNode(std::string name, StructInfo sinfo, bool is_dataflow)
      : ExprNode(kKind, std::move(sinfo)), name(std::move(name)), is_dataflow(is_dataflow) {}
};
class Var : public Expr {
 public:
  Var() = default;
  Var(std::string name, StructInfo sinfo, bool is_dataflow = false);
  static Var FromNode(const Expr& expr);
  const VarNode* get() const { return static_cast<const VarNode*>(Expr::get()); }
  const VarNode* operator->() const { return get(); }
};

// A function of the module, by name (text: @name).
struct GlobalVarNode : ExprNode {
  STRATA_NODE_KIND(ExprKind, kGlobalVar)
  const std::string name;
  static Expr make(std::string name);
  explicit GlobalVarNode(std::string n) : ExprNode(kKind, nullptr), name(std::move(n)) {}
};

// A library function found by name at load time (text: the string in call_packed).
struct ExternFuncNode : ExprNode {
  STRATA_NODE_KIND(ExprKind, kExternFunc)
  const std::string name;
  static Expr make(std::string name);
  explicit ExternFuncNode(std::string n) : ExprNode(kKind, nullptr), name(std::move(n)) {}
};

// A built-in operator. Ops are interned: one node per name, compare with same_as.
struct OpNode : ExprNode {
  STRATA_NODE_KIND(ExprKind, kOp)
  const std::string name;
  static Expr Get(const std::string& name);
  explicit OpNode(std::string n) : ExprNode(kKind, nullptr), name(std::move(n)) {}
};

// Host-side tensor data for a constant: dense, row-major, little-endian.
struct HostTensor {
  DataType dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};

struct ConstantNode : ExprNode {
  STRATA_NODE_KIND(ExprKind, kConstant)
  const std::shared_ptr<const HostTensor> data;
  static Expr make(std::shared_ptr<const HostTensor> data);
  ConstantNode(std::shared_ptr<const HostTensor> d, StructInfo s) : ExprNode(kKind, std::move(s)), data(std::move(d)) {}
};

// A shape value built from symbolic dims (text: shape(m, n * 2)).
struct ShapeExprNode : ExprNode {
  STRATA_NODE_KIND(ExprKind, kShapeExpr)
  const std::vector<PrimExpr> values;
  static Expr make(std::vector<PrimExpr> values);
  ShapeExprNode(std::vector<PrimExpr> v, StructInfo s) : ExprNode(kKind, std::move(s)), values(std::move(v)) {}
};

// A scalar value (text: an integer or float literal, or prim(expr)).
struct PrimValueNode : ExprNode {
  STRATA_NODE_KIND(ExprKind, kPrimValue)
  const PrimExpr value;
  static Expr make(PrimExpr value);
  PrimValueNode(PrimExpr v, StructInfo s) : ExprNode(kKind, std::move(s)), value(std::move(v)) {}
};

struct StringImmNode : ExprNode {
  STRATA_NODE_KIND(ExprKind, kStringImm)
  const std::string value;
  static Expr make(std::string value);
  StringImmNode(std::string v, StructInfo s) : ExprNode(kKind, std::move(s)), value(std::move(v)) {}
};

// A dtype as a value, e.g. the dtype argument of alloc_tensor (text: dtype(f32)).
struct DataTypeImmNode : ExprNode {
  STRATA_NODE_KIND(ExprKind, kDataTypeImm)
  const DataType value;
  static Expr make(DataType value);
  DataTypeImmNode(DataType v, StructInfo s) : ExprNode(kKind, std::move(s)), value(v) {}
};

struct TupleNode : ExprNode {
  STRATA_NODE_KIND(ExprKind, kTuple)
  const std::vector<Expr> fields;
  static Expr make(std::vector<Expr> fields);
  TupleNode(std::vector<Expr> f, StructInfo s) : ExprNode(kKind, std::move(s)), fields(std::move(f)) {}
};

struct TupleGetItemNode : ExprNode {
  STRATA_NODE_KIND(ExprKind, kTupleGetItem)
  const Expr tuple;
  const int index;
  static Expr make(Expr tuple, int index);
  TupleGetItemNode(Expr t, int i, StructInfo s) : ExprNode(kKind, std::move(s)), tuple(std::move(t)), index(i) {}
};

// callee(args) with attrs. callee is an Op, a GlobalVar (graph function or, after
// CallTIRRewrite, a tensor program called in DPS form), an ExternFunc or a Var.
// sinfo_args carry the declared result struct info of ops that cannot infer it
// (the OUT_SI of call_tir / call_dps_packed, the result of call_packed).
struct CallNode : ExprNode {
  STRATA_NODE_KIND(ExprKind, kCall)
  const Expr op;
  const std::vector<Expr> args;
  const ir::Attrs attrs;
  const std::vector<StructInfo> sinfo_args;
  static Expr make(Expr op, std::vector<Expr> args, ir::Attrs attrs = {}, std::vector<StructInfo> sinfo_args = {});
  CallNode(Expr op, std::vector<Expr> args, ir::Attrs attrs, std::vector<StructInfo> sa, StructInfo s)
      : ExprNode(kKind, std::move(s)),
        op(std::move(op)),
        args(std::move(args)),
        attrs(std::move(attrs)),
        sinfo_args(std::move(sa)) {}
};

// Bindings: `var = value` and `var = match_cast(value, SI)`.
enum class BindingKind : uint8_t { kVarBinding, kMatchCast };
struct Binding {
  BindingKind kind = BindingKind::kVarBinding;
  Var var;
  Expr value;
  StructInfo pattern;  // match_cast only: the struct info asserted and bound at run time
  // Where the user wrote it (null when a pass made it from nothing). Shared:
  // every binding a pass derives from this one points at the same location.
  std::shared_ptr<const SourceLocation> location;
};

struct BindingBlock {
  bool is_dataflow = false;
  std::vector<Binding> bindings;
};

// Blocks of bindings followed by a result: a function body or an if branch.
struct SeqExprNode : ExprNode {
  STRATA_NODE_KIND(ExprKind, kSeqExpr)
  const std::vector<BindingBlock> blocks;
  const Expr body;
  static Expr make(std::vector<BindingBlock> blocks, Expr body);
  SeqExprNode(std::vector<BindingBlock> b, Expr body, StructInfo s)
      : ExprNode(kKind, std::move(s)), blocks(std::move(b)), body(std::move(body)) {}
};

// if cond { then } else { else }: cond is a bool scalar (Prim[bool]) or a
// 0-d bool tensor; both branches are SeqExprs.
struct IfNode : ExprNode {
  STRATA_NODE_KIND(ExprKind, kIf)
  const Expr condition, then_branch, else_branch;
  static Expr make(Expr condition, Expr then_branch, Expr else_branch);
  IfNode(Expr c, Expr t, Expr e, StructInfo s)
      : ExprNode(kKind, std::move(s)), condition(std::move(c)), then_branch(std::move(t)), else_branch(std::move(e)) {}
};

struct FunctionNode : ExprNode {
  STRATA_NODE_KIND(ExprKind, kFunction)
  const std::vector<Var> params;
  const Expr body;  // a SeqExpr
  const StructInfo ret_struct_info;
  const ir::Attrs attrs;
  // Where the text IR returns the function's value (its `return`), for errors
  // about the returned value; null for functions that were not parsed. Not part
  // of the function's identity (structural equality ignores it).
  const std::shared_ptr<const SourceLocation> return_location;
  static Expr make(std::vector<Var> params, Expr body, StructInfo ret_struct_info, ir::Attrs attrs = {},
                   std::shared_ptr<const SourceLocation> return_location = nullptr);
  FunctionNode(std::vector<Var> p, Expr b, StructInfo r, ir::Attrs a,
               std::shared_ptr<const SourceLocation> location = nullptr)
      : ExprNode(kKind, nullptr),
        params(std::move(p)),
        body(std::move(b)),
        ret_struct_info(std::move(r)),
        attrs(std::move(a)),
        return_location(std::move(location)) {}
};
using Function = std::shared_ptr<const FunctionNode>;

// Names of the built-in ops. Ops of the lowered form (after CallTIRRewrite and
// VMShapeLower) are builtins the VM implements directly.
namespace ops {
inline constexpr const char* kCallTIR = "call_tir";
inline constexpr const char* kCallDPSPacked = "call_dps_packed";
inline constexpr const char* kCallPacked = "call_packed";
inline constexpr const char* kShapeOf = "shape_of";
// alloc_tensor(shape, dtype(D)) -> Tensor: a fresh output tensor.
inline constexpr const char* kAllocTensor = "alloc_tensor";
// kill(x) -> (): releases the VM register of x (KillAfterLastUse); x is not used after.
inline constexpr const char* kKill = "kill";
}  // namespace ops

}  // namespace strata::graph
