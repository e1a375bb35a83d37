// IRModule: graph functions and tensor programs side by side, by global name.
//
// Functions keep their insertion order, so printing, codegen and every pass that
// walks the module are deterministic.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ir/tir.h"

namespace strata::ir {

using BaseFunc = std::variant<graph::Function, tir::PrimFunc>;

// Where a binding was written in the text the module was parsed from.
struct SourceLocation {
  std::string file;
  int line = 0;
  int col = 0;
};

class IRModule {
 public:
  // Adds or replaces a function. A replaced function keeps its position.
  void Add(const std::string& name, BaseFunc func);
  void Remove(const std::string& name);
  bool Contains(const std::string& name) const { return index_.count(name) != 0; }
  // nullptr when absent or of the other kind.
  graph::Function GetGraphFunction(const std::string& name) const;
  tir::PrimFunc GetPrimFunc(const std::string& name) const;
  const BaseFunc* Lookup(const std::string& name) const;

  // (name, function) in insertion order.
  const std::vector<std::pair<std::string, BaseFunc>>& functions() const { return functions_; }

  Attrs& attrs() { return attrs_; }
  const Attrs& attrs() const { return attrs_; }

  // Source locations of bindings by (graph function, variable name), recorded by
  // the parser (the first binding of a name wins). Passes carry them along with
  // the module, so an error naming a function and a binding can point at the text.
  void SetBindingLocation(const std::string& function, const std::string& var, SourceLocation location);
  const SourceLocation* BindingLocation(const std::string& function, const std::string& var) const;

 private:
  std::vector<std::pair<std::string, BaseFunc>> functions_;
  std::map<std::string, size_t> index_;
  Attrs attrs_;
  std::map<std::pair<std::string, std::string>, SourceLocation> binding_locations_;
};

}  // namespace strata::ir
