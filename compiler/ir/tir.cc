// Tensor-program statement constructors.
//
// The asserts here are the typing rules of loop nests; the parser checks user
// input first, so a failed assert is a bug in a pass or a front end.
#include "compiler/ir/tir.h"

#include <cassert>
#include <memory>
#include <utility>

namespace strata::tir {

std::string_view ForKindName(ForKind kind) {
  switch (kind) {
    case ForKind::kSerial: return "range";
    case ForKind::kParallel: return "parallel";
    case ForKind::kVectorized: return "vectorized";
    case ForKind::kUnrolled: return "unrolled";
  }
  assert(false && "unknown ForKind");
  return "?";
}

namespace {

void CheckIndices(const Buffer& buffer, const std::vector<PrimExpr>& indices) {
  assert(buffer && "access to a null buffer");
  assert(indices.size() == buffer->shape.size() && "buffer access needs one index per dimension");
  for ([[maybe_unused]] const PrimExpr& index : indices) {
    assert(index.defined() && index.dtype().is_integral() && "buffer indices must be integers");
  }
}

}  // namespace

Stmt ForNode::make(Var loop_var, PrimExpr min, PrimExpr extent, ForKind for_kind, Stmt body) {
  assert(loop_var.defined() && loop_var.dtype() == DataType::I64() && "loop variables are i64");
  assert(min.defined() && min.dtype().is_integral() && "loop min must be an integer");
  assert(extent.defined() && extent.dtype().is_integral() && "loop extent must be an integer");
  assert(body.defined() && "loop without a body");
  return Stmt(std::make_shared<const ForNode>(std::move(loop_var), std::move(min), std::move(extent), for_kind,
                                              std::move(body)));
}

Stmt BufferStoreNode::make(Buffer buffer, std::vector<PrimExpr> indices, PrimExpr value) {
  CheckIndices(buffer, indices);
  assert(value.defined() && value.dtype() == buffer->dtype && "stored value must have the buffer's dtype");
  return Stmt(std::make_shared<const BufferStoreNode>(std::move(buffer), std::move(indices), std::move(value)));
}

Stmt AllocateNode::make(Buffer buffer, Stmt body) {
  assert(buffer && "allocate of a null buffer");
  assert(body.defined() && "allocate without a body");
  return Stmt(std::make_shared<const AllocateNode>(std::move(buffer), std::move(body)));
}

Stmt LetStmtNode::make(Var var, PrimExpr value, Stmt body) {
  assert(var.defined() && value.defined() && "let with a null variable or value");
  assert(var.dtype() == value.dtype() && "let value must have the variable's dtype");
  assert(body.defined() && "let without a body");
  return Stmt(std::make_shared<const LetStmtNode>(std::move(var), std::move(value), std::move(body)));
}

Stmt IfThenElseNode::make(PrimExpr condition, Stmt then_case, Stmt else_case) {
  assert(condition.defined() && condition.dtype().is_bool() && "if condition must be bool");
  assert(then_case.defined() && "if without a then branch");
  return Stmt(std::make_shared<const IfThenElseNode>(std::move(condition), std::move(then_case), std::move(else_case)));
}

// Keeping sequences flat makes structural equality independent of how a pass
// happened to group statements.
Stmt SeqStmtNode::make(std::vector<Stmt> stmts) {
  std::vector<Stmt> flat;
  flat.reserve(stmts.size());
  for (Stmt& stmt : stmts) {
    assert(stmt.defined() && "null statement in a sequence");
    if (const auto* seq = stmt.as<SeqStmtNode>()) {
      flat.insert(flat.end(), seq->stmts.begin(), seq->stmts.end());  // already flat
    } else {
      flat.push_back(std::move(stmt));
    }
  }
  if (flat.size() == 1) return flat[0];
  return Stmt(std::make_shared<const SeqStmtNode>(std::move(flat)));
}

Stmt AssertStmtNode::make(PrimExpr condition, std::string message) {
  assert(condition.defined() && condition.dtype().is_bool() && "assert condition must be bool");
  return Stmt(std::make_shared<const AssertStmtNode>(std::move(condition), std::move(message)));
}

Stmt PrefetchNode::make(PrimExpr load) {
  assert(load.defined() && load.as<BufferLoadNode>() != nullptr && "prefetch of something other than a buffer element");
  return Stmt(std::make_shared<const PrefetchNode>(std::move(load)));
}

Stmt EvaluateNode::make(PrimExpr value) {
  assert(value.defined() && "evaluate of a null expression");
  return Stmt(std::make_shared<const EvaluateNode>(std::move(value)));
}

PrimFunc MakePrimFunc(std::vector<PrimFuncParam> params, Stmt body, ir::Attrs attrs) {
  for ([[maybe_unused]] const PrimFuncParam& p : params) {
    assert((p.is_buffer() != p.scalar.defined()) && "a parameter is either a buffer or a scalar");
  }
  assert(body.defined() && "tensor program without a body");
  return std::make_shared<const PrimFuncNode>(std::move(params), std::move(body), std::move(attrs));
}

}  // namespace strata::tir
