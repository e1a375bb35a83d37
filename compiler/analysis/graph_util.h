// Small helpers the graph-level passes share: recognizing and building the call
// forms of the text IR (call_tir, call_dps_packed, call_packed, ops), naming
// generated variables without clashing with the user's, and i64 scalar values.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"

namespace strata::analysis {

using graph::Expr;
using graph::StructInfo;

// True when `call` calls the built-in operator `name` (graph::ops::k*).
bool IsOpCall(const graph::CallNode* call, const char* name);

// A call_packed("f", args...) call: the library function name and its arguments.
// Recognizes both spellings a front end may build: the ExternFunc as the callee,
// or the call_packed op with the function name as its first argument.
struct PackedCall {
  std::string name;
  std::vector<Expr> args;
};
bool MatchCallPacked(const graph::CallNode* call, PackedCall* out);
// Builds call_packed("name", args...) whose result has struct info `ret`
// (null: Object). The node has no struct info of its own yet.
Expr MakeCallPacked(const std::string& name, std::vector<Expr> args, StructInfo ret = StructInfo());

// The tensor arguments of call_tir / call_dps_packed: the fields of the tuple
// literal `(a, b)`, or a lone non-tuple value `(a)` as one argument. False when
// the call has no argument list or passes a tuple-typed value.
bool CallArguments(const graph::CallNode* call, std::vector<Expr>* out);

// The library function name of the first argument of call_dps_packed (an
// ExternFunc or a string), or nullptr.
const std::string* LibraryName(const Expr& expr);

// An i64 scalar value (prints as a plain integer).
Expr Int64Value(int64_t value);

// Hands out variable names that are unique within one function: "alloc",
// "alloc1", "alloc2", ... skipping every name already taken.
class NameSupply {
 public:
  void Reserve(const std::string& name) { taken_.insert(name); }
  std::string Fresh(const std::string& hint);

 private:
  std::set<std::string> taken_;
};

// Every use of a variable inside `expr` (nested branches included), in visiting
// order, with repeats.
std::vector<const graph::VarNode*> VarsUsedIn(const Expr& expr);

// The constants bound so far as a pass walks a function's bindings in order:
// what an argument denotes when it is a constant, inline or through a
// variable bound to one.
class BoundConstants {
 public:
  // Remembers `binding` when it binds a variable to a constant.
  void Record(const graph::Binding& binding);
  // The constant `e` denotes, or null.
  const graph::HostTensor* Of(const Expr& e) const;

 private:
  std::map<const graph::VarNode*, const graph::HostTensor*> constants_;
};

// Reserves the names of every parameter and bound variable of `func`.
void ReserveNames(const graph::FunctionNode& func, NameSupply* names);

}  // namespace strata::analysis
