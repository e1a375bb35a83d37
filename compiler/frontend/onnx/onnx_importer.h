// The ONNX front end: an ONNX model (protobuf, opsets 13-21) -> an IRModule
// with one graph function @main, ready for the default pipeline.
//
// Each graph input's `dim_param` becomes a symbolic variable (inputs that share
// a name share the variable), a fixed dim a constant, a dim with neither a
// fresh variable; initializers and Constant nodes become constants (weights);
// each node becomes Strata operator calls (onnx_ops.cc). Shape computations
// (Shape -> Gather -> Unsqueeze -> Concat -> Reshape, ConstantOfShape, ...)
// are evaluated at import time on symbolic expressions, so the program needs
// no shape tensors at run time. Operator calls on weights alone (a transposed
// or scaled initializer) stay calls here; the pipeline's FoldConstants computes
// them once at compile time. An unsupported operator, attribute or opset is an
// error naming the node, its op type and the opset.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "compiler/ir/module.h"
#include "support/status.h"

namespace strata::frontend {

struct OnnxImportOptions {
  // Bounds on symbolic dims (strata compile --dynamic batch=1..64): recorded on
  // @main as attributes for memory planning, and checked against the model.
  std::map<std::string, std::pair<int64_t, int64_t>> dim_bounds;
  // The folder tensors stored outside the model (ONNX external data, what
  // PyTorch's exporter writes for large weights) are read from, by their
  // relative `location`. ImportOnnxFile sets it to the model's folder when empty;
  // without it such a tensor is an error naming it.
  std::string external_data_dir;
};

StatusOr<ir::IRModule> ImportOnnxFile(const std::string& path, const OnnxImportOptions& options = {});
StatusOr<ir::IRModule> ImportOnnxBytes(const std::string& bytes, const std::string& name,
                                       const OnnxImportOptions& options = {});

}  // namespace strata::frontend
