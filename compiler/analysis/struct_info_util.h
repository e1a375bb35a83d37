// Struct info algebra shared by the passes: equality and "is at least as precise"
// checks that prove symbolic dimensions with the simplifier, least upper bounds
// for if/else joins, substitution of symbolic variables, and erasure of shapes
// that mention variables out of scope.
//
// Everything here is a pure function of its arguments; symbolic variables are
// compared by identity, dimensions with arith::ProveEqual.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ir/struct_info.h"

namespace strata::analysis {

using graph::StructInfo;
using tir::PrimExpr;

// Canonical form of one i64 dimension (arith::Simplify).
PrimExpr SimplifyDim(const PrimExpr& dim);
// True when a == b is provable for every value of the symbolic variables.
bool ProveDimEqual(const PrimExpr& a, const PrimExpr& b);
// Every dimension simplified; returns `sinfo` itself when nothing changed.
StructInfo SimplifyStructInfo(const StructInfo& sinfo);

// Appends the symbolic variables used in `expr` that `out` does not hold yet,
// in first-appearance order.
void CollectVars(const PrimExpr& expr, std::vector<tir::Var>* out);
// Same for every dimension of `sinfo` (recursing into tuples).
void CollectVars(const StructInfo& sinfo, std::vector<tir::Var>* out);
// The dimensions of `sinfo` that are a plain variable: what matching a value
// against `sinfo` (a parameter, a match_cast pattern) binds.
void CollectDefinableVars(const StructInfo& sinfo, std::vector<tir::Var>* out);

// Provably the same struct info.
bool StructInfoEqual(const StructInfo& a, const StructInfo& b);

// Whether a value known to have `derived` also has `base`:
//   kPass         provably (base is equal or less precise);
//   kUnprovable   not provable statically, but could hold at run time;
//   kFail         contradiction (different kinds, dtypes, ranks or constants).
enum class BaseCheck { kPass, kUnprovable, kFail };
BaseCheck CheckBaseOf(const StructInfo& base, const StructInfo& derived);

// The most precise struct info that both `a` and `b` are at least as precise as
// (the struct info of `if c { a } else { b }`).
StructInfo StructInfoLUB(const StructInfo& a, const StructInfo& b);

// Replaces symbolic variables: `map` returns the replacement or a null PrimExpr to
// keep the variable. Dimensions are simplified afterwards.
StructInfo SubstituteStructInfo(const StructInfo& sinfo, const std::function<PrimExpr(const tir::VarNode*)>& map);
// Drops the shape of every tensor/shape whose dimensions use a variable for which
// `is_defined` is false, keeping its rank (Tensor[(m, k), f32] -> Tensor[ndim=2, f32]).
StructInfo EraseUndefinedVars(const StructInfo& sinfo, const std::function<bool(const tir::VarNode*)>& is_defined);

// Records callee shape variable -> argument dimension for every parameter
// dimension that is a plain variable (first occurrence wins), through tuples.
void BindParamSymbols(const StructInfo& param, const StructInfo& arg, std::map<const tir::VarNode*, PrimExpr>* subst);

// Text for error messages (the printer's syntax).
std::string StructInfoText(const StructInfo& sinfo);
std::string DimText(const PrimExpr& dim);

}  // namespace strata::analysis
