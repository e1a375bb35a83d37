// IRModule: an insertion-ordered map of functions.
#include "compiler/ir/module.h"

#include <cassert>

namespace strata::ir {

void IRModule::Add(const std::string& name, BaseFunc func) {
  auto it = index_.find(name);
  if (it != index_.end()) {
    functions_[it->second].second = std::move(func);
    return;
  }
  index_.emplace(name, functions_.size());
  functions_.emplace_back(name, std::move(func));
}

void IRModule::Remove(const std::string& name) {
  auto it = index_.find(name);
  if (it == index_.end()) return;
  size_t pos = it->second;
  index_.erase(it);
  functions_.erase(functions_.begin() + static_cast<std::ptrdiff_t>(pos));
  for (auto& entry : index_) {
    if (entry.second > pos) --entry.second;
  }
}

const BaseFunc* IRModule::Lookup(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &functions_[it->second].second;
}

graph::Function IRModule::GetGraphFunction(const std::string& name) const {
  const BaseFunc* func = Lookup(name);
  if (!func) return nullptr;
  const auto* graph_func = std::get_if<graph::Function>(func);
  return graph_func ? *graph_func : nullptr;
}

tir::PrimFunc IRModule::GetPrimFunc(const std::string& name) const {
  const BaseFunc* func = Lookup(name);
  if (!func) return nullptr;
  const auto* prim_func = std::get_if<tir::PrimFunc>(func);
  return prim_func ? *prim_func : nullptr;
}

}  // namespace strata::ir

namespace strata::ir {

const ExternalModule* IRModule::FindExternalSymbol(const std::string& symbol) const {
  for (const ExternalModule& m : external_modules_) {
    for (const std::string& s : m.symbols) {
      if (s == symbol) return &m;
    }
  }
  return nullptr;
}

}  // namespace strata::ir
