// Parser of the text IR (.sir): text in, IRModule out (syntax: docs/text_ir.md).
//
// Recursive descent over the token vector of lexer.h, with precedence climbing
// for scalar expressions. All user errors come back as a Status formatted
// `filename:line:col: error: expected X, found Y`; no input makes the parser
// crash, assert or hang (nesting depth is bounded). The IR is built with the
// validating make() constructors only after the parser has checked what they
// assert. @names are resolved after the whole module is read, so functions may
// appear in any order.
#pragma once

#include <string_view>

#include "compiler/ir/module.h"
#include "support/status.h"

namespace strata::ir {

// Parses a whole module. `filename` is used only in error messages.
StatusOr<IRModule> ParseModule(std::string_view text, std::string_view filename);

}  // namespace strata::ir
