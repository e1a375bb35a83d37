// Attrs: the small, ordered key/value dictionaries attached to functions and calls.
//
// Ordered (std::map) so printing and hashing are deterministic.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "compiler/ir/prim_expr.h"
#include "support/data_type.h"

namespace strata::ir {

// A list of integers of which some are symbolic expressions of the function's
// shape variables: strided_slice(pos, axes=[1], begin=[0], end=[t]). A list whose
// values are all constants is always a std::vector<int64_t> instead (MakeIntList
// decides), so an attribute has one spelling for one value.
struct SymbolicInts {
  std::vector<tir::PrimExpr> values;
};
// Equal when every element is provably equal (t + 1 and 1 + t are).
bool operator==(const SymbolicInts& a, const SymbolicInts& b);

using AttrValue = std::variant<bool, int64_t, double, std::string, std::vector<int64_t>, DataType, SymbolicInts>;
using Attrs = std::map<std::string, AttrValue>;

// The attribute value of a list of integer expressions: std::vector<int64_t>
// when every element is a constant, SymbolicInts otherwise.
AttrValue MakeIntList(const std::vector<tir::PrimExpr>& values);

// The elements of an integer-list attribute (an int, a list of ints or
// SymbolicInts) as expressions; nullopt for any other kind.
std::optional<std::vector<tir::PrimExpr>> IntListExprs(const AttrValue& value);

}  // namespace strata::ir
