// shape_to_tensor: a shape value (symbolic dimensions) as an i64 tensor.
//
// ONNX graphs compute shapes with tensor ops (Shape -> Gather -> Concat ...).
// The importer evaluates those chains symbolically; when such a value is then
// used as tensor data (scaled, compared, gathered with), it must exist at run
// time. This op materializes it from the shape variables the kernel receives
// as scalar parameters, so one program serves every shape.
#include "compiler/op/builtin_ops.h"
#include "compiler/op/kernel_builder.h"
#include "compiler/op/op_util.h"

namespace strata::op {
namespace {

StatusOr<StructInfo> InferShapeToTensor(const OpCall& call) {
  STRATA_ASSIGN_OR_RETURN(std::vector<PrimExpr> values, ShapeArg(call, 0));
  if (call.BoolAttr("scalar")) {
    if (values.size() != 1) {
      return ErrorStatus() << call.name() << ": scalar=true needs a shape of one value, got " << values.size();
    }
    return TensorStructInfoNode::make({}, DataType::I64());
  }
  return TensorStructInfoNode::make({static_cast<int64_t>(values.size())}, DataType::I64());
}

StatusOr<tir::Stmt> ShapeToTensorKernel(const OpCall& call, KernelBuilder& b) {
  STRATA_ASSIGN_OR_RETURN(std::vector<PrimExpr> values, ShapeArg(call, 0));
  STRATA_ASSIGN_OR_RETURN(tir::Buffer out, b.Output(call.call().struct_info, "Out"));
  const bool scalar = call.BoolAttr("scalar");
  std::vector<tir::Stmt> stores;
  for (size_t k = 0; k < values.size(); ++k) {
    std::vector<PrimExpr> index;
    if (!scalar) index.push_back(static_cast<int64_t>(k));
    stores.push_back(tir::BufferStoreNode::make(out, index, b.Dim(values[k])));
  }
  return tir::SeqStmtNode::make(std::move(stores));
}

}  // namespace

std::vector<OpDef> ShapeValueOps() {
  return {OpDef{"shape_to_tensor",
                {"shape"},
                0,
                {AttrDef{"scalar", AttrKind::kBool, ir::AttrValue(false)}},
                InferShapeToTensor,
                ShapeToTensorKernel}};
}

}  // namespace strata::op
