// StructInfo: what is statically known about a graph-level value.
//
// A tensor's struct info carries its dtype and its shape as symbolic expressions
// (n, m * 2 + 1) when known, or just its rank, or nothing. Shape inference fills
// these in; match_cast asserts them at run time. Unknown is always allowed and is
// checked at run time, never assumed.
#pragma once

#include <optional>
#include <vector>

#include "compiler/ir/node_ref.h"
#include "compiler/ir/prim_expr.h"

namespace strata::graph {

using ir::NodeRef;
using tir::PrimExpr;

enum class StructInfoKind : uint8_t { kObject, kPrim, kShape, kTensor, kTuple };

struct StructInfoNode {
  const StructInfoKind kind;

 protected:
  explicit StructInfoNode(StructInfoKind kind) : kind(kind) {}

 public:
  virtual ~StructInfoNode() = default;
};
using StructInfo = NodeRef<StructInfoNode>;

// Anything: the least known struct info (text: Object).
struct ObjectStructInfoNode : StructInfoNode {
  STRATA_NODE_KIND(StructInfoKind, kObject)
  static StructInfo make();
  ObjectStructInfoNode() : StructInfoNode(kKind) {}
};

// A scalar of dtype (text: Prim[i64]).
struct PrimStructInfoNode : StructInfoNode {
  STRATA_NODE_KIND(StructInfoKind, kPrim)
  const DataType dtype;
  static StructInfo make(DataType dtype);
  explicit PrimStructInfoNode(DataType d) : StructInfoNode(kKind), dtype(d) {}
};

// A shape value (text: Shape[(m, n)], Shape[ndim=2], Shape).
struct ShapeStructInfoNode : StructInfoNode {
  STRATA_NODE_KIND(StructInfoKind, kShape)
  const std::optional<std::vector<PrimExpr>> values;  // i64 dims when known
  const int ndim;                                     // -1 when unknown
  static StructInfo make(std::vector<PrimExpr> values);
  static StructInfo make_ndim(int ndim);  // ndim may be -1
  ShapeStructInfoNode(std::optional<std::vector<PrimExpr>> v, int ndim)
      : StructInfoNode(kKind), values(std::move(v)), ndim(ndim) {}
};

// A tensor (text: Tensor[(m, n), f32], Tensor[ndim=2, f32], Tensor[f32], Tensor).
struct TensorStructInfoNode : StructInfoNode {
  STRATA_NODE_KIND(StructInfoKind, kTensor)
  const std::optional<std::vector<PrimExpr>> shape;  // i64 dims when known
  const int ndim;                                    // -1 when unknown
  const DataType dtype;                              // DataType::Void() when unknown
  static StructInfo make(std::vector<PrimExpr> shape, DataType dtype);
  static StructInfo make_ndim(int ndim, DataType dtype);  // ndim may be -1
  TensorStructInfoNode(std::optional<std::vector<PrimExpr>> s, int ndim, DataType d)
      : StructInfoNode(kKind), shape(std::move(s)), ndim(ndim), dtype(d) {}
};

// A tuple (text: Tuple[SI, SI]; the empty tuple Tuple[] is the "no value" result).
struct TupleStructInfoNode : StructInfoNode {
  STRATA_NODE_KIND(StructInfoKind, kTuple)
  const std::vector<StructInfo> fields;
  static StructInfo make(std::vector<StructInfo> fields);
  explicit TupleStructInfoNode(std::vector<StructInfo> f) : StructInfoNode(kKind), fields(std::move(f)) {}
};

}  // namespace strata::graph
