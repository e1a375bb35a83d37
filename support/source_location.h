// SourceLocation: where in the user's input something was written.
//
// Text IR records the file, line and column of each binding; an imported model
// records the file and the node a binding came from. Passes carry it from the
// bindings they rewrite to the bindings they emit, and an error about a binding
// carries it in its Status, so the CLI can say where without parsing messages.
#pragma once

#include <string>

namespace strata {

struct SourceLocation {
  std::string file;
  int line = 0;  // 1-based; 0 when the input is not text
  int col = 0;
  std::string node;  // the model node the binding was imported from, if any

  bool known() const { return !file.empty(); }
  // "model.sir:3:5", "model.onnx (node '/Slice')", or "" when unknown.
  std::string Text() const {
    std::string text = file;
    if (line > 0) text += ":" + std::to_string(line) + ":" + std::to_string(col);
    if (!node.empty()) text += " (node '" + node + "')";
    return text;
  }
};

}  // namespace strata
