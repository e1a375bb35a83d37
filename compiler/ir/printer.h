// Printer of the text IR: the canonical spelling of docs/text_ir.md.
//
// Output is deterministic (module order, attrs in key order, fixed 2-space
// indentation, parentheses only where precedence needs them) and reparses to a
// structurally equal module: floats print in their shortest exact form, literals
// carry a dtype suffix unless they have the default dtype (i64, f32), and two
// distinct variables that share a name in one scope are printed n, n_1, ...
// Names that are not valid identifiers or are keywords are adjusted the same way.
//
// Constructs the text format has no syntax for (a nested function, a sequence
// used as a plain value, a call through a variable) print in a readable form
// that the parser rejects rather than silently meaning something else.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "compiler/ir/module.h"

namespace strata::ir {

struct PrintOptions {
  // Constants of more bytes than this are printed as a reference to a binary
  // file, `const(Tensor[(1000, 768), f32], file("weights.bin", 4096))`, with the
  // text `external_constant` returns for them (it stores the bytes); -1: never.
  int64_t max_inline_constant_bytes = -1;
  std::function<std::string(const graph::HostTensor&)> external_constant;
};

std::string PrintModule(const IRModule& module);
std::string PrintModule(const IRModule& module, const PrintOptions& options);
std::string PrintPrimFunc(const std::string& name, const tir::PrimFunc& func);

// Printing pieces on their own (for error messages, logs and tests): variables
// print under their own names, without disambiguation.
std::string PrintPrimExpr(const tir::PrimExpr& expr);
std::string PrintStructInfo(const graph::StructInfo& sinfo);
std::string PrintGraphExpr(const graph::Expr& expr);
// An attribute value as the text IR writes it: true, 3, 0.5, "same", [1, 2], f32.
std::string PrintAttrValue(const AttrValue& value);
// [1, 2, 3]: integer lists in attributes and messages.
std::string PrintInts(const std::vector<int64_t>& values);
// (n, 4) / (n,): a shape's dimensions as struct info prints them.
std::string PrintShape(const std::vector<tir::PrimExpr>& dims);

}  // namespace strata::ir
