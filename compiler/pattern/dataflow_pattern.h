// Dataflow patterns: a small language for describing subgraphs of a graph function.
//
// A pattern is a tree (or DAG) of pattern nodes built with the functions below:
//
//   DFPattern x = Wildcard(), w = IsConst(), b = IsConst();
//   DFPattern dense = IsOp("dense", {x, w});
//   DFPattern bias = IsOp("add", {dense, b}) | IsOp("bias_add", {dense, b}).HasAttr("axis", int64_t{-1});
//   DFPattern relu = IsOp("relu", {bias});
//
// Matching is on normalized graph functions in A-normal form: a call's arguments
// are variables or inline constants. When a call, tuple or constant pattern meets
// a variable bound earlier in the same binding block, the matcher looks through
// it to the bound value, and that binding becomes part of the match. Wildcard and
// IsVar never look through: they match the variable itself, which becomes an
// input of the match. A pattern node used twice (x above in `add(x, x)`) must
// match the same expression both times.
//
// Constraints combine with the operators: `a | b` (either, tried in order), `a & b`
// (both, on the same expression), `!a` (anything a does not match; binds nothing).
// HasDType / HasShape / HasRank check the struct info of the matched expression,
// HasAttr an attribute of the matched call, and Where runs an arbitrary predicate.
// "Used only by" constraints, which need to know every user of a value, belong to
// the FusionPattern that uses the pattern (pattern_matcher.h).
//
// Patterns are immutable values, cheap to copy, and may be shared between threads.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compiler/ir/attrs.h"
#include "compiler/ir/graph.h"

namespace strata::pattern {

enum class PatternKind : uint8_t {
  kWildcard,       // any expression
  kOp,             // a call of a built-in op by name, with argument patterns
  kConstant,       // an inline constant tensor
  kVar,            // a variable (a parameter or a bound var), optionally by name
  kCallTIR,        // call_tir(@func, (args), ...)
  kCallDPSPacked,  // call_dps_packed("name", (args), ...)
  kTuple,          // a tuple literal (a, b, ...)
  kOr,
  kAnd,
  kNot,
  kDType,      // operand has dtype ...
  kShape,      // operand has shape ... (provably equal dims)
  kRank,       // operand has rank ...
  kAttr,       // operand is a call whose attribute `key` equals `value`
  kPredicate,  // operand satisfies a user callback
};

struct PatternNode;
class DFPattern;

// A user check of a matched expression (the variable when the matcher looked
// through one; its struct info is the value's).
using ExprPredicate = std::function<bool(const graph::Expr& matched)>;

class DFPattern {
 public:
  DFPattern() = default;
  explicit DFPattern(std::shared_ptr<const PatternNode> node) : node_(std::move(node)) {}

  const PatternNode* get() const { return node_.get(); }
  const PatternNode* operator->() const { return node_.get(); }
  explicit operator bool() const { return node_ != nullptr; }

  // ---- Constraints on the matched expression (each returns a new pattern).
  DFPattern HasDType(DataType dtype) const;
  // Every dimension provably equal; use a tir::Var of the function to require a
  // symbolic dim, or HasRank when only the rank matters.
  DFPattern HasShape(std::vector<tir::PrimExpr> shape) const;
  DFPattern HasRank(int rank) const;
  DFPattern HasAttr(std::string key, ir::AttrValue value) const;
  DFPattern Where(ExprPredicate predicate, std::string description = "predicate") const;

  // Text for messages and tests: `relu(add(dense(*, const), const))`.
  std::string ToString() const;

 private:
  std::shared_ptr<const PatternNode> node_;
};

struct PatternNode {
  PatternKind kind;
  // kOp: the op name; kVar: the variable name (empty: any); kCallTIR /
  // kCallDPSPacked: the callee name (empty: any).
  std::string name;
  // kOp / kCallTIR / kCallDPSPacked / kTuple: argument (field) patterns; for
  // call_tir and call_dps_packed, nullopt matches any argument list.
  std::optional<std::vector<DFPattern>> args;
  // kOr / kAnd: both operands; kNot and the constraint kinds: operand in `lhs`.
  DFPattern lhs, rhs;
  DataType dtype;                    // kDType
  std::vector<tir::PrimExpr> shape;  // kShape
  int rank = 0;                      // kRank
  std::string attr_key;              // kAttr
  ir::AttrValue attr_value;          // kAttr
  ExprPredicate predicate;           // kPredicate
};

// ---- Leaves
DFPattern Wildcard();
DFPattern IsConst();
// A variable (a function parameter, or a bound variable not looked through);
// with a name, only the variable of that name.
DFPattern IsVar(std::string name = "");

// ---- Calls
// A call of the built-in op `name` with exactly these arguments.
DFPattern IsOp(std::string name, std::vector<DFPattern> args);
// call_tir of the tensor program `func` ("" for any); `args` the tensor arguments.
DFPattern IsCallTIR(std::string func = "", std::optional<std::vector<DFPattern>> args = std::nullopt);
// call_dps_packed of the library function `name` ("" for any).
DFPattern IsCallDPSPacked(std::string name = "", std::optional<std::vector<DFPattern>> args = std::nullopt);
DFPattern IsTuple(std::vector<DFPattern> fields);

// ---- Combinators
DFPattern operator|(const DFPattern& a, const DFPattern& b);
DFPattern operator&(const DFPattern& a, const DFPattern& b);
DFPattern operator!(const DFPattern& a);

}  // namespace strata::pattern
