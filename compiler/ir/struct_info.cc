// StructInfo constructors.
#include "compiler/ir/struct_info.h"

#include <cassert>
#include <memory>
#include <utility>

namespace strata::graph {

namespace {

void CheckDims(const std::vector<PrimExpr>& dims) {
  for ([[maybe_unused]] const PrimExpr& dim : dims) {
    assert(dim.defined() && dim.dtype().is_integral() && "shape dimensions must be integers");
  }
}

}  // namespace

StructInfo ObjectStructInfoNode::make() {
  // Carries no data, so one shared instance serves every use.
  static const StructInfo kObject(std::make_shared<const ObjectStructInfoNode>());
  return kObject;
}

StructInfo PrimStructInfoNode::make(DataType dtype) {
  return StructInfo(std::make_shared<const PrimStructInfoNode>(dtype));
}

StructInfo ShapeStructInfoNode::make(std::vector<PrimExpr> values) {
  CheckDims(values);
  int ndim = static_cast<int>(values.size());
  return StructInfo(std::make_shared<const ShapeStructInfoNode>(std::move(values), ndim));
}

StructInfo ShapeStructInfoNode::make_ndim(int ndim) {
  assert(ndim >= -1 && "ndim is -1 (unknown) or a rank");
  return StructInfo(std::make_shared<const ShapeStructInfoNode>(std::nullopt, ndim));
}

StructInfo TensorStructInfoNode::make(std::vector<PrimExpr> shape, DataType dtype) {
  CheckDims(shape);
  int ndim = static_cast<int>(shape.size());
  return StructInfo(std::make_shared<const TensorStructInfoNode>(std::move(shape), ndim, dtype));
}

StructInfo TensorStructInfoNode::make_ndim(int ndim, DataType dtype) {
  assert(ndim >= -1 && "ndim is -1 (unknown) or a rank");
  return StructInfo(std::make_shared<const TensorStructInfoNode>(std::nullopt, ndim, dtype));
}

StructInfo TupleStructInfoNode::make(std::vector<StructInfo> fields) {
  for ([[maybe_unused]] const StructInfo& field : fields)
    assert(field.defined() && "null field in a tuple struct info");
  return StructInfo(std::make_shared<const TupleStructInfoNode>(std::move(fields)));
}

}  // namespace strata::graph
