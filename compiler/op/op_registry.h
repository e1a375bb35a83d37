// The operator registry: every high-level graph operator (add, matmul, conv2d,
// reshape, ...) with its typed attributes, its struct info (shape and dtype)
// inference over symbolic shapes, and its legalization to a default tensor
// program.
//
// An operator call in the text IR is `name(args..., attr=value, ...)`. Normalize
// checks the call against the OpDef (argument count, attribute names and types)
// and asks `infer` for the result's struct info; LegalizeOps asks `legalize` for
// a tensor program. A target dispatch pass that runs before LegalizeOps may
// rewrite any call instead (see docs/operators.md). Errors from `infer` and
// `legalize` name the operator, the argument and the shapes involved.
//
// Thread-safety: the built-in operators are registered on first use under a
// lock; RegisterOp may be called from any thread, before the op is used.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/ir/attrs.h"
#include "compiler/ir/graph.h"
#include "compiler/ir/tir.h"
#include "support/status.h"

namespace strata::op {

class KernelBuilder;
struct OpDef;

// kIntExprs: a list of integers any of which may be an expression of the
// function's shape variables (strided_slice's begin and end).
enum class AttrKind { kBool, kInt, kFloat, kString, kInts, kDataType, kIntExprs };
std::string_view AttrKindName(AttrKind kind);  // "a bool", "an int", ...

struct AttrDef {
  std::string name;
  AttrKind kind;
  // nullopt: the attribute is required, unless `optional`.
  std::optional<ir::AttrValue> default_value;
  // May be left out and has no default (OpCall::HasAttr tells).
  bool optional = false;
};

// A normalized call of a registered operator, as inference and legalization see
// it: arguments carry struct info; attributes read with their defaults applied.
class OpCall {
 public:
  OpCall(const OpDef& def, const graph::CallNode& call) : def_(def), call_(call) {}

  const OpDef& def() const { return def_; }
  const graph::CallNode& call() const { return call_; }
  const std::string& name() const;
  size_t num_args() const { return call_.args.size(); }
  const graph::Expr& arg(size_t i) const { return call_.args[i]; }
  graph::StructInfo arg_sinfo(size_t i) const;
  // The name of argument i from OpDef::params ("x", "weight", ...).
  std::string arg_name(size_t i) const;

  bool BoolAttr(const std::string& name) const;
  int64_t IntAttr(const std::string& name) const;
  double FloatAttr(const std::string& name) const;  // an int attribute value is accepted
  const std::string& StringAttr(const std::string& name) const;
  std::vector<int64_t> IntsAttr(const std::string& name) const;            // an int attribute value is a 1-element list
  std::vector<tir::PrimExpr> IntExprsAttr(const std::string& name) const;  // kIntExprs (constants too)
  DataType DataTypeAttr(const std::string& name) const;
  // False when the attribute was not written and has no default (optional attributes).
  bool HasAttr(const std::string& name) const;

 private:
  const ir::AttrValue* Find(const std::string& name) const;
  const OpDef& def_;
  const graph::CallNode& call_;
};

// Result struct info of a call; errors name the operator and the argument.
using InferFn = std::function<StatusOr<graph::StructInfo>(const OpCall& call)>;
// The body of the default tensor program of a call. The function declares the
// program's buffers through `builder` (inputs in call_tir argument order, then
// the outputs) and returns the loop nest.
using LegalizeFn = std::function<StatusOr<tir::Stmt>(const OpCall& call, KernelBuilder& builder)>;

// How an operator's default kernel may take part in fusion (FuseOps reads it
// from the kernel's `op_pattern` attribute; see docs/pipeline.md):
//  - kElementwise: out[i] = f(x[i]) over one shape;
//  - kBroadcast: elementwise after numpy broadcasting of the inputs;
//  - kInjective: every output element is a function of input elements at
//    computed indices (reshape, transpose, slices, gathers);
//  - kReduction: output elements combine many input elements (sum, softmax);
//  - kOutputFusable: a compute-heavy op (conv2d, matmul, dense) whose results
//    may get an elementwise epilogue at their final stores;
//  - kOpaque: never fused (several outputs, side effects, or unknown kernels).
enum class OpPattern { kElementwise, kBroadcast, kInjective, kReduction, kOutputFusable, kOpaque };
std::string_view OpPatternName(OpPattern pattern);  // "elementwise", ..., "output_fusable", "opaque"
std::optional<OpPattern> ParseOpPattern(std::string_view name);

struct OpDef {
  std::string name;
  // Argument names in order, for error messages (a tuple of tensors, as the
  // inputs of concat, is one argument).
  std::vector<std::string> params;
  // How many trailing params may be omitted.
  size_t num_optional_params = 0;
  std::vector<AttrDef> attrs;
  InferFn infer;
  // Null when the operator has no default tensor program (a dispatch pass must
  // lower it); LegalizeOps then reports it.
  LegalizeFn legalize;
  // The fusion pattern of the default kernel (an op registered by a user is
  // opaque unless it says otherwise).
  OpPattern pattern = OpPattern::kOpaque;
};

// Adds an operator (or replaces one a user registered before, when `replace`).
// An error if the name is taken by a built-in or the definition is incomplete.
Status RegisterOp(OpDef def, bool replace = false);
// The operator named `name`, or null.
const OpDef* FindOp(std::string_view name);
std::vector<std::string> RegisteredOpNames();

// Checks argument count and attribute names/types of `call` against `def`:
// "conv2d: attribute 'strides' must be a list of ints, got a string".
Status CheckOpCall(const OpDef& def, const graph::CallNode& call);

}  // namespace strata::op
