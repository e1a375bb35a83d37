// Helpers shared by the text IR tests: reading fixture files and parsing them
// with the error surfaced in the test log.
#pragma once

#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "compiler/ir/module.h"
#include "compiler/ir/parser.h"

namespace strata::ir::testing {

inline std::string ReadSourceFile(const std::string& relative_path) {
  std::ifstream in(std::string(STRATA_SOURCE_DIR) + "/" + relative_path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot open " << relative_path;
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// Parses `text` and fails the test (with the parser's message) if it does not parse.
inline IRModule MustParse(const std::string& text, const std::string& filename = "test.sir") {
  StatusOr<IRModule> module = ParseModule(text, filename);
  EXPECT_TRUE(module.ok()) << module.status().message();
  if (!module.ok()) return IRModule();
  return std::move(module).value();
}

// The parser's error message for `text`, or "" if it parsed.
inline std::string ParseError(const std::string& text) {
  StatusOr<IRModule> module = ParseModule(text, "bad.sir");
  return module.ok() ? std::string() : module.status().message();
}

}  // namespace strata::ir::testing
