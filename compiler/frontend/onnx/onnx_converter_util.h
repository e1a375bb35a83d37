// Helpers shared by the ONNX converter families (elementwise, neural network,
// tensor manipulation): reading integer inputs that may be symbolic shape
// values, emitting Strata calls, and the registration hooks of each family.
#pragma once

#include <functional>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compiler/frontend/onnx/onnx_context.h"

namespace strata::frontend::onnx_import {

using ConverterTable = std::map<std::string, OpConverter>;

// Each family adds its op types to the table (onnx_*_ops.cc).
void AddElementwiseConverters(ConverterTable& table);
void AddNeuralNetworkConverters(ConverterTable& table);
void AddTensorConverters(ConverterTable& table);
void AddIndexingConverters(ConverterTable& table);

// The elements of an integer value known at import time: a symbolic value, or
// an integer constant of rank <= 1. nullopt otherwise. `scalar` (if given) is
// set when the value is rank 0.
std::optional<std::vector<PrimExpr>> SymbolicInts(const OnnxValue* v, bool* scalar = nullptr);
// The length numpy broadcasting gives vectors of these lengths (each equal to
// it or 1; an empty vector broadcasts with 1 to empty), or nullopt when they
// do not broadcast. The index of element i of a vector of length `size` in
// the result is BroadcastIndex(size, i).
std::optional<size_t> BroadcastLength(std::initializer_list<size_t> sizes);
inline size_t BroadcastIndex(size_t size, size_t i) { return size == 1 ? 0 : i; }
// An import-time shape value with simplified elements.
OnnxValue Symbolic(std::vector<PrimExpr> elements, bool scalar);
OnnxValue FromExpr(Expr e);
// Builds shape(...) from symbolic dims for a Strata operator argument.
Expr ShapeArg(const std::vector<PrimExpr>& dims);

// Constant integer list input (axes, pads...) or an error naming it.
StatusOr<std::vector<int64_t>> ConstIntsInput(NodeContext& n, size_t i, const std::string& what);
// Integer list input computed from shapes or constants; a value that depends on
// tensor data is an error naming the input.
StatusOr<std::vector<PrimExpr>> SymbolicIntsInput(NodeContext& n, size_t i, const std::string& what);
// A scalar constant of the dtype of input `like`.
StatusOr<Expr> ScalarLike(NodeContext& n, size_t like, double value);

// Emits a call for the node's first output.
Status Emit(NodeContext& n, const std::string& op, std::vector<Expr> args, ir::Attrs attrs = {});

using SymbolicFn = std::function<PrimExpr(PrimExpr, PrimExpr)>;
// A binary elementwise op; on integer shape values known at import time it is
// evaluated symbolically with `symbolic` (numpy broadcasting of scalars and
// equal lengths).
Converter Binary(const std::string& op, SymbolicFn symbolic = nullptr);
// A unary op of one input and no attributes.
Converter Unary(const std::string& op);

}  // namespace strata::frontend::onnx_import
