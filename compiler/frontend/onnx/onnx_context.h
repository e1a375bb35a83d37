// What the ONNX importer (onnx_importer.cc) and the per-operator converters
// (onnx_ops.cc) share: the import-time value of an ONNX tensor, and the
// context a converter emits graph bindings through.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "compiler/ir/graph.h"
#include "support/status.h"

namespace strata::frontend::onnx_import {

using graph::Expr;
using tir::PrimExpr;

// An ONNX value as the importer knows it. At least one of the three is set:
//   expr      the graph value computing it at run time;
//   constant  its data, known at import time (initializers, Constant, folded);
//   symbolic  for a 0-d or 1-d i64 tensor: its elements as symbolic expressions
//             (what Shape, Gather, Concat ... of shapes compute), so that
//             Reshape and friends get shapes at compile time.
struct OnnxValue {
  Expr expr;
  std::shared_ptr<const graph::HostTensor> constant;
  std::optional<std::vector<PrimExpr>> symbolic;
  bool symbolic_scalar = false;

  // The struct info of the value (from expr, constant or symbolic elements).
  graph::StructInfo sinfo() const;
};

class ImportContext;

// One node being converted: its inputs, attributes and opset; the converter
// fills `outputs` (one per node output, in order).
class NodeContext {
 public:
  NodeContext(const onnx::NodeProto& node, int64_t opset, std::vector<const OnnxValue*> inputs, ImportContext& ctx)
      : node_(node), opset_(opset), inputs_(std::move(inputs)), ctx_(ctx) {}

  const onnx::NodeProto& node() const { return node_; }
  const std::string& op_type() const { return node_.op_type(); }
  int64_t opset() const { return opset_; }
  ImportContext& ctx() { return ctx_; }

  size_t num_inputs() const { return inputs_.size(); }
  // Input i, or null when it is absent (an optional input left empty).
  const OnnxValue* input(size_t i) const { return i < inputs_.size() ? inputs_[i] : nullptr; }
  // Input i, required: an error naming the node otherwise.
  StatusOr<const OnnxValue*> Required(size_t i) const;
  // Input i as a graph expression (constants become graph constants).
  StatusOr<Expr> InputExpr(size_t i);

  bool HasAttr(const std::string& name) const;
  int64_t IntAttr(const std::string& name, int64_t default_value) const;
  float FloatAttr(const std::string& name, float default_value) const;
  std::string StringAttr(const std::string& name, const std::string& default_value) const;
  std::vector<int64_t> IntsAttr(const std::string& name) const;
  const onnx::TensorProto* TensorAttr(const std::string& name) const;

  // "node 'Conv_3' (Conv, opset 17): <message>"; a valid model Strata cannot
  // import yet is kUnimplemented, a malformed one kInvalidArgument.
  Status Error(const std::string& message, StatusCode code = StatusCode::kInvalidArgument) const;
  Status Unsupported(const std::string& message) const { return Error(message, StatusCode::kUnimplemented); }

  std::vector<OnnxValue> outputs;

 private:
  const onnx::NodeProto& node_;
  int64_t opset_;
  std::vector<const OnnxValue*> inputs_;
  ImportContext& ctx_;
};

// Emits the bindings of @main while the graph is converted.
class ImportContext {
 public:
  virtual ~ImportContext() = default;
  // Binds `op(args, attrs)` to a fresh variable named after `name_hint`, with
  // its struct info inferred now (so later shape computations see it).
  virtual StatusOr<Expr> Call(const std::string& op, std::vector<Expr> args, ir::Attrs attrs,
                              const std::string& name_hint) = 0;
  // Binds an arbitrary expression (a tuple item) to a fresh variable.
  virtual StatusOr<Expr> Bind(Expr value, const std::string& name_hint) = 0;
  // The graph constant for host data (shared for the same data).
  virtual Expr Constant(std::shared_ptr<const graph::HostTensor> data) = 0;
  // Where external tensor data is read from (empty: nowhere).
  virtual const std::string& external_data_dir() const = 0;
};

// Host tensor helpers.
// Data stored outside the model (data_location EXTERNAL) is read from the file
// `location` names under `external_data_dir`, at `offset`, `length` bytes.
StatusOr<std::shared_ptr<const graph::HostTensor>> TensorFromProto(const onnx::TensorProto& proto,
                                                                   const std::string& external_data_dir);
StatusOr<DataType> DataTypeFromOnnx(int32_t onnx_type);
// The elements of a constant as int64: integers and bool exactly (u64 above
// INT64_MAX keeps its bits), floats truncated toward zero and saturated.
std::vector<int64_t> ConstantInts(const graph::HostTensor& tensor);
// Element `i` of a constant of any dtype (f16, f32, f64, integers, bool) as a
// double: scalar operands such as Clip's bounds or Pad's fill value.
double ConstantElement(const graph::HostTensor& tensor, size_t i);
std::shared_ptr<const graph::HostTensor> MakeInt64Tensor(const std::vector<int64_t>& values, bool scalar);
std::shared_ptr<const graph::HostTensor> MakeScalarTensor(DataType dtype, double value);

using Converter = std::function<Status(NodeContext& node)>;

struct OpConverter {
  Converter convert;
  // Every attribute the converter honours: any other attribute on a node is an
  // error, never silently ignored (it could change the result).
  std::vector<std::string> attributes;
};
// The converter of an ONNX op type (default domain), or null.
const OpConverter* FindConverter(const std::string& op_type);

}  // namespace strata::frontend::onnx_import
