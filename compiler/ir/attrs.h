// Attrs: the small, ordered key/value dictionaries attached to functions and calls.
//
// Ordered (std::map) so printing and hashing are deterministic.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "support/data_type.h"

namespace strata::ir {

using AttrValue = std::variant<bool, int64_t, double, std::string, std::vector<int64_t>, DataType>;
using Attrs = std::map<std::string, AttrValue>;

}  // namespace strata::ir
