// Integer-list attributes that may be symbolic (see attrs.h).
#include "compiler/ir/attrs.h"

#include "compiler/ir/arith/simplify.h"

namespace strata::ir {

bool operator==(const SymbolicInts& a, const SymbolicInts& b) {
  if (a.values.size() != b.values.size()) return false;
  for (size_t i = 0; i < a.values.size(); ++i) {
    if (!arith::ProveEqual(a.values[i], b.values[i])) return false;
  }
  return true;
}

AttrValue MakeIntList(const std::vector<tir::PrimExpr>& values) {
  std::vector<int64_t> constants;
  for (const tir::PrimExpr& v : values) {
    const auto* imm = v.as<tir::IntImmNode>();
    if (imm == nullptr) return SymbolicInts{values};
    constants.push_back(imm->value);
  }
  return constants;
}

std::optional<std::vector<tir::PrimExpr>> IntListExprs(const AttrValue& value) {
  if (const auto* i = std::get_if<int64_t>(&value)) return std::vector<tir::PrimExpr>{tir::PrimExpr(*i)};
  if (const auto* list = std::get_if<std::vector<int64_t>>(&value)) {
    return std::vector<tir::PrimExpr>(list->begin(), list->end());
  }
  if (const auto* symbolic = std::get_if<SymbolicInts>(&value)) return symbolic->values;
  return std::nullopt;
}

std::optional<std::vector<std::string>> StringList(const AttrValue& value) {
  if (const auto* list = std::get_if<std::vector<std::string>>(&value)) return *list;
  if (const auto* ints = std::get_if<std::vector<int64_t>>(&value); ints != nullptr && ints->empty()) {
    return std::vector<std::string>{};
  }
  return std::nullopt;
}

}  // namespace strata::ir
