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

// std::vector<std::string>: a list of names, such as a graph function's
// input_names / output_names (the model's own names of its inputs and results).
using AttrValue = std::variant<bool, int64_t, double, std::string, std::vector<int64_t>, DataType, SymbolicInts,
                               std::vector<std::string>>;
using Attrs = std::map<std::string, AttrValue>;

// The attribute value of a list of integer expressions: std::vector<int64_t>
// when every element is a constant, SymbolicInts otherwise.
AttrValue MakeIntList(const std::vector<tir::PrimExpr>& values);

// The elements of an integer-list attribute (an int, a list of ints or
// SymbolicInts) as expressions; nullopt for any other kind.
std::optional<std::vector<tir::PrimExpr>> IntListExprs(const AttrValue& value);

// The elements of a list-of-strings attribute; nullopt for any other kind. The
// text IR spells the empty list `[]` whatever its elements, and parses it as an
// empty list of ints, so that one counts as an empty list of strings too.
std::optional<std::vector<std::string>> StringList(const AttrValue& value);

}  // namespace strata::ir
