// Buffers, dimension mapping and the baseline loop schedule; see kernel_builder.h.
#include "compiler/op/kernel_builder.h"

#include "compiler/analysis/struct_info_util.h"
#include "compiler/ir/arith/simplify.h"
#include "compiler/ir/tir_visitor.h"

namespace strata::op {
namespace {

// Rank-1 elementwise loops run in chunks of this many elements per parallel task.
constexpr int64_t kParallelChunk = 16384;

}  // namespace

PrimExpr KernelBuilder::MapDim(const PrimExpr& graph_dim, bool bind_fresh) {
  PrimExpr dim = analysis::SimplifyDim(graph_dim);
  if (tir::AsConstInt(dim)) return dim;
  for (const auto& [from, to] : dims_) {
    if (from.same_as(dim) || (!from.as<tir::VarNode>() && analysis::ProveDimEqual(from, dim))) return to;
  }
  if (const auto* var = dim.as<tir::VarNode>()) {
    tir::Var local(var->name);
    dims_.emplace_back(dim, local);
    if (!bind_fresh) {
      scalars_.push_back(tir::PrimFuncParam{nullptr, local});
      tir_var_args_.push_back(dim);
    }
    return local;
  }
  std::vector<tir::Var> vars;
  analysis::CollectVars(dim, &vars);
  bool all_mapped = true;
  for (const tir::Var& v : vars) {
    bool mapped = false;
    for (const auto& entry : dims_) mapped = mapped || entry.first.same_as(v);
    all_mapped = all_mapped && mapped;
  }
  if (!all_mapped && bind_fresh) {
    // An input dimension such as n * 2 whose n nothing else binds: bind it whole.
    tir::Var local("d" + std::to_string(dims_.size()));
    dims_.emplace_back(dim, local);
    return local;
  }
  for (const tir::Var& v : vars) MapDim(v, /*bind_fresh=*/false);
  return arith::Simplify(tir::Substitute(dim, [&](const tir::VarNode* v) -> PrimExpr {
    for (const auto& [from, to] : dims_) {
      if (from.get() == v) return to;
    }
    return PrimExpr();
  }));
}

PrimExpr KernelBuilder::Dim(const PrimExpr& graph_dim) { return MapDim(graph_dim, /*bind_fresh=*/false); }

StatusOr<tir::Buffer> KernelBuilder::Input(const graph::Expr& arg, const std::string& buffer_name,
                                           const std::string& what) {
  const graph::StructInfo& sinfo = arg->struct_info;
  const auto* tensor = sinfo ? sinfo.as<graph::TensorStructInfoNode>() : nullptr;
  if (tensor == nullptr || !tensor->shape || tensor->dtype.is_void()) {
    return ErrorStatus() << op_name_ << ": cannot generate a kernel: " << what << ": "
                         << analysis::StructInfoText(sinfo ? sinfo : graph::ObjectStructInfoNode::make())
                         << " has no known rank and dtype; give it a shape with match_cast";
  }
  // Plain variables first, so that a compound dimension after them (n * 2 next
  // to n) is checked against them rather than bound on its own.
  std::vector<PrimExpr> shape(tensor->shape->size());
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t d = 0; d < shape.size(); ++d) {
      const PrimExpr dim = analysis::SimplifyDim((*tensor->shape)[d]);
      const bool plain = dim.as<tir::VarNode>() != nullptr || tir::AsConstInt(dim) != nullptr;
      if (plain == (pass == 0)) shape[d] = MapDim(dim, /*bind_fresh=*/true);
    }
  }
  tir::Buffer buffer = tir::MakeBuffer(buffer_name, tensor->dtype, std::move(shape));
  inputs_.push_back(tir::PrimFuncParam{buffer, tir::Var()});
  call_args_.push_back(arg);
  return buffer;
}

StatusOr<tir::Buffer> KernelBuilder::Output(const graph::StructInfo& sinfo, const std::string& buffer_name) {
  const auto* tensor = sinfo.as<graph::TensorStructInfoNode>();
  if (tensor == nullptr || !tensor->shape || tensor->dtype.is_void()) {
    return ErrorStatus() << op_name_ << ": cannot generate a kernel whose result " << analysis::StructInfoText(sinfo)
                         << " has no known shape; give the inputs known shapes with match_cast";
  }
  std::vector<PrimExpr> shape;
  for (const PrimExpr& dim : *tensor->shape) shape.push_back(Dim(dim));
  tir::Buffer buffer = tir::MakeBuffer(buffer_name, tensor->dtype, std::move(shape));
  outputs_.push_back(tir::PrimFuncParam{buffer, tir::Var()});
  output_sinfo_.push_back(sinfo);
  return buffer;
}

tir::Buffer KernelBuilder::Local(const std::string& name, DataType dtype, std::vector<PrimExpr> shape) {
  return tir::MakeBuffer(name, dtype, std::move(shape));
}

graph::StructInfo KernelBuilder::OutputStructInfo() const {
  if (output_sinfo_.size() == 1) return output_sinfo_[0];
  return graph::TupleStructInfoNode::make(output_sinfo_);
}

tir::PrimFunc KernelBuilder::Finish(tir::Stmt body, ir::Attrs attrs) const {
  std::vector<tir::PrimFuncParam> params = inputs_;
  params.insert(params.end(), outputs_.begin(), outputs_.end());
  params.insert(params.end(), scalars_.begin(), scalars_.end());
  return tir::MakePrimFunc(std::move(params), std::move(body), std::move(attrs));
}

tir::Stmt KernelBuilder::Elementwise(const std::vector<PrimExpr>& shape,
                                     const std::function<tir::Stmt(const std::vector<PrimExpr>& index)>& body) {
  using tir::ForKind;
  using tir::ForNode;
  const size_t rank = shape.size();
  if (rank == 0) return body({});
  if (rank == 1) {
    // Parallel chunks of a vectorized loop; the last chunk may be short.
    tir::Var chunk = LoopVar("i0_outer"), lane = LoopVar("i0_inner");
    PrimExpr n = shape[0];
    PrimExpr chunks = arith::Simplify(tir::FloorDiv(n + (kParallelChunk - 1), kParallelChunk));
    PrimExpr start = chunk * kParallelChunk;
    PrimExpr extent = tir::Min(PrimExpr(kParallelChunk), n - start);
    tir::Stmt inner = ForNode::make(lane, 0, extent, ForKind::kVectorized, body({start + lane}));
    return ForNode::make(chunk, 0, chunks, ForKind::kParallel, inner);
  }
  std::vector<tir::Var> vars;
  std::vector<PrimExpr> index;
  for (size_t d = 0; d < rank; ++d) {
    vars.push_back(LoopVar("i" + std::to_string(d)));
    index.push_back(vars.back());
  }
  // The leading dimensions share one parallel loop, split back into indices:
  // all but the last up to rank 3 ((1, 128, 768) runs 128 rows in parallel
  // rather than one image), all but the last two beyond (the division per
  // iteration is paid once per row of (n, c, h, w) or (n, c/16, h, w, 16)).
  const size_t fused = rank == 2 ? 1 : rank == 3 ? 2 : rank - 2;
  tir::Stmt nest = body(index);
  for (size_t d = rank; d-- > fused;) {
    nest = ForNode::make(vars[d], 0, shape[d], d == rank - 1 ? ForKind::kVectorized : ForKind::kSerial, nest);
  }
  if (fused == 1) return ForNode::make(vars[0], 0, shape[0], ForKind::kParallel, nest);
  tir::Var flat = LoopVar("i_fused");
  PrimExpr stride = 1;
  for (size_t d = fused; d-- > 0;) {
    PrimExpr value = d + 1 == fused ? PrimExpr(flat) : tir::FloorDiv(flat, stride);
    if (d > 0) value = tir::FloorMod(value, shape[d]);
    nest = tir::LetStmtNode::make(vars[d], arith::Simplify(value), nest);
    stride = arith::Simplify(stride * shape[d]);
  }
  return ForNode::make(flat, 0, stride, ForKind::kParallel, nest);
}

std::vector<PrimExpr> BroadcastIndex(const std::vector<PrimExpr>& dims, const std::vector<PrimExpr>& out_dims,
                                     const std::vector<PrimExpr>& out_index) {
  std::vector<PrimExpr> index;
  const size_t offset = out_dims.size() - dims.size();
  for (size_t d = 0; d < dims.size(); ++d) {
    const PrimExpr& i = out_index[d + offset];
    if (analysis::ProveDimEqual(dims[d], out_dims[d + offset])) {
      index.push_back(i);
    } else if (arith::AsConstant(dims[d]) == 1) {
      index.push_back(0);
    } else {
      index.push_back(tir::SelectNode::make(tir::BinaryOpNode::make(tir::PrimExprKind::kEQ, dims[d], 1), 0, i));
    }
  }
  return index;
}

void BroadcastChecks(const std::string& what, const std::vector<PrimExpr>& dims, const std::vector<PrimExpr>& out_dims,
                     std::vector<tir::Stmt>* checks) {
  using tir::BinaryOpNode;
  using tir::PrimExprKind;
  const size_t offset = out_dims.size() - dims.size();
  for (size_t d = 0; d < dims.size(); ++d) {
    const PrimExpr& dim = dims[d];
    const PrimExpr& out_dim = out_dims[d + offset];
    if (analysis::ProveDimEqual(dim, out_dim) || arith::AsConstant(dim) == 1) continue;
    PrimExpr ok = BinaryOpNode::make(PrimExprKind::kOr, BinaryOpNode::make(PrimExprKind::kEQ, dim, 1),
                                     BinaryOpNode::make(PrimExprKind::kEQ, dim, out_dim));
    checks->push_back(tir::AssertStmtNode::make(ok, what + " dimension " + std::to_string(d) + " must be 1 or " +
                                                        analysis::DimText(out_dim) + " to broadcast"));
  }
}

PrimExpr IndexAsI64(const tir::Buffer& indices, const std::vector<PrimExpr>& at) {
  PrimExpr v = tir::BufferLoadNode::make(indices, at);
  return v.dtype() == DataType::I64() ? v : tir::CastNode::make(DataType::I64(), v);
}

tir::Stmt CheckIndicesInRange(KernelBuilder& b, const tir::Buffer& indices, const PrimExpr& extent,
                              const std::string& range_of) {
  using tir::BinaryOpNode;
  using tir::PrimExprKind;
  std::vector<tir::Var> vars;
  std::vector<PrimExpr> at;
  for (size_t d = 0; d < indices->shape.size(); ++d) {
    vars.push_back(b.LoopVar("j" + std::to_string(d)));
    at.push_back(vars.back());
  }
  const PrimExpr v = IndexAsI64(indices, at);
  const std::string e = analysis::DimText(extent);
  tir::Stmt check = tir::AssertStmtNode::make(
      BinaryOpNode::make(PrimExprKind::kAnd, BinaryOpNode::make(PrimExprKind::kLE, -extent, v),
                         BinaryOpNode::make(PrimExprKind::kLT, v, extent)),
      "argument 'indices' holds an index out of range for " + range_of + "; indices must lie in [-" + e + ", " + e +
          ")");
  for (size_t d = vars.size(); d-- > 0;) {
    check = tir::ForNode::make(vars[d], 0, indices->shape[d], tir::ForKind::kSerial, check);
  }
  return check;
}

}  // namespace strata::op
