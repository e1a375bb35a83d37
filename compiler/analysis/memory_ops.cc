// Graph-level memory and device operators (see memory_ops.h).
#include "compiler/analysis/memory_ops.h"

#include <utility>
#include <vector>

#include "compiler/analysis/graph_util.h"
#include "compiler/analysis/struct_info_util.h"

namespace strata::analysis {

using namespace graph;  // NOLINT: graph-level helpers

namespace {

StructInfo SinfoOf(const Expr& expr) { return expr->struct_info ? expr->struct_info : ObjectStructInfoNode::make(); }

const int64_t* ConstInt(const Expr& expr) {
  const auto* value = expr.as<PrimValueNode>();
  return value ? tir::AsConstInt(value->value) : nullptr;
}

// Checks one call's arguments, naming the operator and the argument in errors.
class ArgChecker {
 public:
  explicit ArgChecker(const CallNode& call) : call_(call), name_(call.op.as<OpNode>()->name) {}

  Status Count(size_t lo, size_t hi, const char* signature) const {
    if (call_.args.size() >= lo && call_.args.size() <= hi) return Status::Ok();
    return ErrorStatus() << name_ << " takes " << signature << ", got " << call_.args.size() << " argument"
                         << (call_.args.size() == 1 ? "" : "s");
  }
  StatusOr<int64_t> ConstantInt(size_t i, const char* what) const {
    const int64_t* value = ConstInt(call_.args[i]);
    if (!value) return ErrorStatus() << name_ << ": " << what << " must be an integer constant";
    return *value;
  }
  StatusOr<std::vector<PrimExpr>> Shape(size_t i, const char* what) const {
    StructInfo sinfo = SinfoOf(call_.args[i]);
    const auto* shape = sinfo.as<ShapeStructInfoNode>();
    if (!shape || !shape->values) {
      return ErrorStatus() << name_ << ": " << what << " must be a shape with known dimensions, got "
                           << StructInfoText(sinfo);
    }
    return *shape->values;
  }
  StatusOr<DataType> DType(size_t i) const {
    const auto* dtype = call_.args[i].as<DataTypeImmNode>();
    if (!dtype) return ErrorStatus() << name_ << ": argument " << i + 1 << " must be a dtype(...)";
    return dtype->value;
  }
  Status String(size_t i, const char* what) const {
    if (call_.args[i].as<StringImmNode>()) return Status::Ok();
    return ErrorStatus() << name_ << ": " << what << " must be a string";
  }
  Status Tensor(size_t i) const {
    StructInfo sinfo = SinfoOf(call_.args[i]);
    if (sinfo.as<TensorStructInfoNode>()) return Status::Ok();
    return ErrorStatus() << name_ << " copies a tensor, got a value of struct info " << StructInfoText(sinfo);
  }

 private:
  const CallNode& call_;
  const std::string& name_;
};

StatusOr<StructInfo> InferAllocStorage(const CallNode& call, const ArgChecker& check) {
  STRATA_RETURN_IF_ERROR(check.Count(2, 3, "(size, alignment[, \"device\"])"));
  StructInfo size = SinfoOf(call.args[0]);
  const auto* prim = size.as<PrimStructInfoNode>();
  const auto* shape = size.as<ShapeStructInfoNode>();
  if (!(prim && prim->dtype == DataType::I64()) && !(shape && shape->ndim == 1)) {
    return ErrorStatus() << memory_ops::kAllocStorage
                         << ": the size must be an i64 or a one-dimension shape(bytes), got " << StructInfoText(size);
  }
  STRATA_ASSIGN_OR_RETURN(int64_t alignment, check.ConstantInt(1, "the alignment"));
  if (alignment <= 0 || (alignment & (alignment - 1)) != 0) {
    return ErrorStatus() << memory_ops::kAllocStorage << ": the alignment must be a power of two, got " << alignment;
  }
  if (call.args.size() == 3) STRATA_RETURN_IF_ERROR(check.String(2, "the device"));
  return ObjectStructInfoNode::make();
}

StatusOr<StructInfo> InferAllocTensor(const CallNode& call, const ArgChecker& check) {
  STRATA_RETURN_IF_ERROR(check.Count(4, 4, "(storage, offset, shape, dtype(D))"));
  StructInfo storage = SinfoOf(call.args[0]);
  if (!storage.as<ObjectStructInfoNode>()) {
    return ErrorStatus() << memory_ops::kAllocTensor << ": the storage must be an Object from "
                         << memory_ops::kAllocStorage << ", got " << StructInfoText(storage);
  }
  STRATA_ASSIGN_OR_RETURN(int64_t offset, check.ConstantInt(1, "the offset"));
  if (offset < 0) return ErrorStatus() << memory_ops::kAllocTensor << ": the offset is negative (" << offset << ")";
  STRATA_ASSIGN_OR_RETURN(std::vector<PrimExpr> shape, check.Shape(2, "the shape"));
  STRATA_ASSIGN_OR_RETURN(DataType dtype, check.DType(3));
  return TensorStructInfoNode::make(std::move(shape), dtype);
}

StatusOr<StructInfo> InferCheckBound(const CallNode& call, const ArgChecker& check) {
  STRATA_RETURN_IF_ERROR(check.Count(4, 4, "(shape(v), lo, hi, \"context\")"));
  STRATA_ASSIGN_OR_RETURN(std::vector<PrimExpr> shape, check.Shape(0, "the checked value"));
  if (shape.size() != 1) return ErrorStatus() << memory_ops::kCheckBound << " checks one value, got " << shape.size();
  STRATA_ASSIGN_OR_RETURN(int64_t lo, check.ConstantInt(1, "the lower bound"));
  STRATA_ASSIGN_OR_RETURN(int64_t hi, check.ConstantInt(2, "the upper bound"));
  if (lo > hi) return ErrorStatus() << memory_ops::kCheckBound << ": the range " << lo << ".." << hi << " is empty";
  STRATA_RETURN_IF_ERROR(check.String(3, "the context"));
  return TupleStructInfoNode::make({});
}

StatusOr<StructInfo> InferAllocDeviceTensor(const CallNode& call, const ArgChecker& check) {
  STRATA_RETURN_IF_ERROR(check.Count(3, 3, "(shape, dtype(D), \"device\")"));
  STRATA_ASSIGN_OR_RETURN(std::vector<PrimExpr> shape, check.Shape(0, "the shape"));
  STRATA_ASSIGN_OR_RETURN(DataType dtype, check.DType(1));
  STRATA_RETURN_IF_ERROR(check.String(2, "the device"));
  return TensorStructInfoNode::make(std::move(shape), dtype);
}

Expr MakeOpCall(const char* name, std::vector<Expr> args) { return CallNode::make(OpNode::Get(name), std::move(args)); }

}  // namespace

bool IsMemoryOp(const std::string& name) {
  for (const char* op : {memory_ops::kAllocStorage, memory_ops::kAllocTensor, memory_ops::kCheckBound,
                         memory_ops::kAllocDeviceTensor, memory_ops::kToDevice, memory_ops::kToHost}) {
    if (name == op) return true;
  }
  return false;
}

StatusOr<StructInfo> InferMemoryOp(const CallNode& call) {
  const std::string& name = call.op.as<OpNode>()->name;
  ArgChecker check(call);
  if (name == memory_ops::kAllocStorage) return InferAllocStorage(call, check);
  if (name == memory_ops::kAllocTensor) return InferAllocTensor(call, check);
  if (name == memory_ops::kCheckBound) return InferCheckBound(call, check);
  if (name == memory_ops::kAllocDeviceTensor) return InferAllocDeviceTensor(call, check);
  if (name == memory_ops::kToDevice) {
    STRATA_RETURN_IF_ERROR(check.Count(2, 2, "(tensor, \"device\")"));
    STRATA_RETURN_IF_ERROR(check.Tensor(0));
    STRATA_RETURN_IF_ERROR(check.String(1, "the device"));
    return SinfoOf(call.args[0]);
  }
  if (name == memory_ops::kToHost) {
    STRATA_RETURN_IF_ERROR(check.Count(1, 1, "(tensor)"));
    STRATA_RETURN_IF_ERROR(check.Tensor(0));
    return SinfoOf(call.args[0]);
  }
  return ErrorStatus() << "'" << name << "' is not a memory or device operator";
}

const std::string* TargetDevice(const CallNode& call) {
  const auto* op = call.op.as<OpNode>();
  if (!op || call.args.empty()) return nullptr;
  const bool placing = (op->name == memory_ops::kAllocStorage && call.args.size() == 3) ||
                       op->name == memory_ops::kAllocDeviceTensor || op->name == memory_ops::kToDevice;
  const auto* device = placing ? call.args.back().as<StringImmNode>() : nullptr;
  return device ? &device->value : nullptr;
}

Expr AllocStorage(Expr size, int64_t alignment, const std::string& device) {
  std::vector<Expr> args = {std::move(size), Int64Value(alignment)};
  if (!device.empty()) args.push_back(StringImmNode::make(device));
  return MakeOpCall(memory_ops::kAllocStorage, std::move(args));
}

Expr AllocTensorInStorage(Expr storage, int64_t offset, Expr shape, Expr dtype) {
  return MakeOpCall(memory_ops::kAllocTensor,
                    {std::move(storage), Int64Value(offset), std::move(shape), std::move(dtype)});
}

Expr CheckBound(const tir::Var& var, int64_t lo, int64_t hi, const std::string& context) {
  return MakeOpCall(memory_ops::kCheckBound,
                    {ShapeExprNode::make({var}), Int64Value(lo), Int64Value(hi), StringImmNode::make(context)});
}

Expr AllocDeviceTensor(Expr shape, Expr dtype, const std::string& device) {
  return MakeOpCall(memory_ops::kAllocDeviceTensor, {std::move(shape), std::move(dtype), StringImmNode::make(device)});
}

Expr ToDevice(Expr tensor, const std::string& device) {
  return MakeOpCall(memory_ops::kToDevice, {std::move(tensor), StringImmNode::make(device)});
}

Expr ToHost(Expr tensor) { return MakeOpCall(memory_ops::kToHost, {std::move(tensor)}); }

}  // namespace strata::analysis
