// Lowering of tensor-program statements to LLVM IR (parallel loops: parallel_for.cc).
//
// Loop schedules become loop metadata, so LLVM's own vectorizer and unroller do
// the transformation with their cost models and legality checks: a vectorized
// loop that cannot be vectorized safely still runs correctly as a scalar loop.
#include <algorithm>
#include <cassert>
#include <optional>

#include <llvm/IR/Constants.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/Metadata.h>

#include "compiler/codegen/llvm/function_lowering.h"
#include "compiler/codegen/llvm/speculate_loads.h"
#include "compiler/ir/tir_visitor.h"

namespace strata::codegen {
namespace {

// A constant the expression cannot exceed, for the shapes trip counts take
// (constants, x % c, min(c, x)); nullopt when there is none.
std::optional<int64_t> ConstantUpperBound(const tir::PrimExpr& e) {
  if (const int64_t* value = tir::AsConstInt(e)) return *value;
  const auto* op = e.as<tir::BinaryOpNode>();
  if (op == nullptr) return std::nullopt;
  if (op->kind == tir::PrimExprKind::kFloorMod) {
    const int64_t* divisor = tir::AsConstInt(op->b);
    if (divisor != nullptr && *divisor > 0) return *divisor - 1;
  }
  if (op->kind == tir::PrimExprKind::kMin) {
    std::optional<int64_t> a = ConstantUpperBound(op->a), b = ConstantUpperBound(op->b);
    if (a && b) return std::min(*a, *b);
    return a ? a : b;
  }
  return std::nullopt;
}

// Local buffers up to this size live on the stack; larger or symbolic ones use
// the runtime workspace. Worker threads have at least 2 MiB of stack, so the
// per-function budget keeps several allocations well clear of it.
constexpr int64_t kMaxStackAllocBytes = 128 * 1024;
constexpr int64_t kStackBudgetBytes = 256 * 1024;

// The narrowest element accessed in a loop body decides how many lanes fill a
// vector register.
class NarrowestElementVisitor : public tir::StmtVisitor {
 public:
  int bits = 0;

 protected:
  void VisitBufferLoad(const tir::BufferLoadNode* op) override {
    Use(op->buffer->dtype);
    tir::StmtVisitor::VisitBufferLoad(op);
  }
  void VisitBufferStore(const tir::BufferStoreNode* op) override {
    Use(op->buffer->dtype);
    tir::StmtVisitor::VisitBufferStore(op);
  }

 private:
  void Use(DataType dtype) {
    int b = dtype.bytes() * 8;
    bits = bits == 0 ? b : std::min(bits, b);
  }
};

// Whether a loop body holds a loop the program vectorized itself.
class HasVectorizedLoop : public tir::StmtVisitor {
 public:
  bool found = false;

 protected:
  void VisitFor(const tir::ForNode* op) override {
    found = found || op->for_kind == tir::ForKind::kVectorized;
    if (!found) tir::StmtVisitor::VisitFor(op);
  }
};

llvm::MDNode* LoopHint(llvm::LLVMContext& ctx, const char* name, llvm::Metadata* value) {
  std::vector<llvm::Metadata*> ops = {llvm::MDString::get(ctx, name)};
  if (value != nullptr) ops.push_back(value);
  return llvm::MDNode::get(ctx, ops);
}

}  // namespace

void FunctionLowering::LowerStmt(const tir::Stmt& stmt) {
  switch (stmt->kind) {
    case tir::StmtKind::kFor: return LowerFor(stmt);
    case tir::StmtKind::kBufferStore: {
      const auto* op = stmt.as<tir::BufferStoreNode>();
      llvm::Value* value = LowerExpr(op->value);
      llvm::Value* address = BufferAddress(op->buffer, op->indices);
      if (op->buffer->dtype.is_bool()) value = b_.CreateZExt(value, b_.getInt8Ty());
      b_.CreateAlignedStore(value, address, llvm::Align(op->buffer->dtype.bytes()));
      return;
    }
    case tir::StmtKind::kAllocate: return LowerAllocate(stmt.as<tir::AllocateNode>());
    case tir::StmtKind::kLetStmt: {
      const auto* op = stmt.as<tir::LetStmtNode>();
      llvm::Value* value = LowerExpr(op->value);
      value->setName(op->var->name);
      auto previous = vars_.find(op->var.get());
      llvm::Value* shadowed = previous == vars_.end() ? nullptr : previous->second;
      BindVar(op->var.get(), value);
      LowerStmt(op->body);
      if (shadowed != nullptr) {
        BindVar(op->var.get(), shadowed);
      } else {
        vars_.erase(op->var.get());
      }
      return;
    }
    case tir::StmtKind::kIfThenElse: return LowerIfThenElse(stmt.as<tir::IfThenElseNode>());
    case tir::StmtKind::kSeqStmt:
      for (const tir::Stmt& s : stmt.as<tir::SeqStmtNode>()->stmts) LowerStmt(s);
      return;
    case tir::StmtKind::kAssertStmt: {
      const auto* op = stmt.as<tir::AssertStmtNode>();
      std::string message = program_ + ": " + op->message;
      EmitCheck(LowerExpr(op->condition), [&](llvm::IRBuilder<>& b) { km_.EmitSetError(b, message); });
      return;
    }
    case tir::StmtKind::kEvaluate: LowerExpr(stmt.as<tir::EvaluateNode>()->value); return;
    case tir::StmtKind::kPrefetch: {
      const auto* load = stmt.as<tir::PrefetchNode>()->load.as<tir::BufferLoadNode>();
      llvm::Value* address = BufferAddress(load->buffer, load->indices);
      llvm::Function* prefetch =
          llvm::Intrinsic::getDeclaration(fn_->getParent(), llvm::Intrinsic::prefetch, {address->getType()});
      // read, locality 2 (x86: prefetcht1, into L2; see tir::PrefetchNode), data cache
      b_.CreateCall(prefetch, {address, b_.getInt32(0), b_.getInt32(2), b_.getInt32(1)});
      return;
    }
  }
  assert(false && "unknown statement kind");
}

void FunctionLowering::LowerIfThenElse(const tir::IfThenElseNode* op) {
  llvm::LLVMContext& ctx = km_.context();
  llvm::Value* condition = LowerExpr(op->condition);
  llvm::BasicBlock* then_block = llvm::BasicBlock::Create(ctx, "if.then", fn_);
  llvm::BasicBlock* else_block = op->else_case.defined() ? llvm::BasicBlock::Create(ctx, "if.else", fn_) : nullptr;
  llvm::BasicBlock* done = llvm::BasicBlock::Create(ctx, "if.end", fn_);
  b_.CreateCondBr(condition, then_block, else_block ? else_block : done);
  b_.SetInsertPoint(then_block);
  LowerStmt(op->then_case);
  b_.CreateBr(done);
  if (else_block != nullptr) {
    b_.SetInsertPoint(else_block);
    LowerStmt(op->else_case);
    b_.CreateBr(done);
  }
  b_.SetInsertPoint(done);
}

llvm::MDNode* FunctionLowering::LoopMetadata(const tir::ForNode* op) {
  llvm::LLVMContext& ctx = km_.context();
  std::vector<llvm::Metadata*> ops = {nullptr};  // operand 0: the loop id itself
  if (op->for_kind == tir::ForKind::kVectorized) {
    ops.push_back(LoopHint(ctx, "llvm.loop.vectorize.enable", llvm::ConstantAsMetadata::get(b_.getTrue())));
    NarrowestElementVisitor narrowest;
    narrowest.VisitStmt(op->body);
    if (narrowest.bits > 0) {
      int width = std::clamp(km_.target().vector_bits / narrowest.bits, 2, 64);
      // A constant trip count that a narrower power-of-two width divides (8
      // lanes of a channel block, 24 = 3 x 8) runs at that width without
      // masks: at the full width it ran masked, and an 8-lane depthwise
      // convolution was 20x slower than at width 8.
      std::optional<int64_t> bound = ConstantUpperBound(op->extent);
      const int64_t* trips = tir::AsConstInt(op->extent);
      if (trips != nullptr && *trips % width != 0) {
        int narrower = width / 2;
        while (narrower >= 4 && *trips % narrower != 0) narrower /= 2;
        if (narrower >= 4) width = narrower;
      }
      ops.push_back(LoopHint(ctx, "llvm.loop.vectorize.width", llvm::ConstantAsMetadata::get(b_.getInt32(width))));
      // A short loop (a tail such as n % 32, or a constant trip count that is
      // not a multiple of the width) runs with masked vector operations instead
      // of a scalar remainder loop: a row tail of 16 of exp(x - max) would
      // otherwise never reach the vector body (width x interleave) and call
      // expf 16 times. Long loops keep the remainder: masking every iteration
      // of a long row costs more (a 256-column matmul row is 30% slower).
      if (bound && *bound <= 4 * width && *bound % width != 0) {
        ops.push_back(
            LoopHint(ctx, "llvm.loop.vectorize.predicate.enable", llvm::ConstantAsMetadata::get(b_.getTrue())));
      }
    }
  } else if (op->for_kind == tir::ForKind::kUnrolled) {
    // A constant trip count unrolls completely; otherwise let the unroller pick a factor.
    ops.push_back(
        LoopHint(ctx, tir::AsConstInt(op->extent) ? "llvm.loop.unroll.full" : "llvm.loop.unroll.enable", nullptr));
  } else {
    // A serial loop around a vectorized one: the program chose its vector
    // dimension, so LLVM must not vectorize this loop instead once it has
    // unrolled the inner one (a conv's 16 input-channel lanes, vectorized
    // with shuffles, ran 5x slower than the broadcasts it replaced).
    HasVectorizedLoop inner;
    inner.VisitStmt(op->body);
    if (!inner.found) return nullptr;
    ops.push_back(LoopHint(ctx, "llvm.loop.vectorize.enable", llvm::ConstantAsMetadata::get(b_.getFalse())));
  }
  llvm::MDNode* loop_id = llvm::MDNode::getDistinct(ctx, ops);
  loop_id->replaceOperandWith(0, loop_id);
  return loop_id;
}

void FunctionLowering::LowerFor(const tir::Stmt& stmt) {
  const auto* op = stmt.as<tir::ForNode>();
  if (op->for_kind == tir::ForKind::kParallel && !in_parallel_) return LowerParallelFor(op);
  if (op->for_kind == tir::ForKind::kVectorized) {
    // The rewritten loop has nothing left to hoist, so this recurses once.
    tir::Stmt speculated = SpeculateInvariantLoads(stmt);
    if (!speculated.same_as(stmt)) return LowerStmt(speculated);
  }
  llvm::Value* begin = LowerIndex(op->min);
  llvm::Value* end = b_.CreateNSWAdd(begin, LowerIndex(op->extent));
  const tir::VarNode* var = op->loop_var.get();
  auto previous = vars_.find(var);
  llvm::Value* shadowed = previous == vars_.end() ? nullptr : previous->second;
  EmitLoop(
      begin, end,
      [&](llvm::Value* iv) {
        BindVar(var, iv);
        LowerStmt(op->body);
      },
      LoopMetadata(op), op->loop_var->name);
  if (shadowed != nullptr) {
    BindVar(var, shadowed);
  } else {
    vars_.erase(var);
  }
}

void FunctionLowering::LowerAllocate(const tir::AllocateNode* op) {
  const tir::Buffer& buffer = op->buffer;
  const int64_t element_bytes = buffer->dtype.bytes();
  // Constant size: product of constant dimensions (negative counts as empty).
  bool constant = true;
  int64_t elements = 1;
  for (const tir::PrimExpr& dim : buffer->shape) {
    const int64_t* value = tir::AsConstInt(dim);
    if (value == nullptr) {
      constant = false;
      break;
    }
    elements *= std::max<int64_t>(*value, 0);
    if (elements > kMaxStackAllocBytes) break;  // too big for the stack anyway; avoid overflow
  }
  if (constant && elements * element_bytes <= kMaxStackAllocBytes &&
      stack_bytes_ + elements * element_bytes <= kStackBudgetBytes) {
    stack_bytes_ += elements * element_bytes;
    llvm::AllocaInst* data =
        EntryAlloca(km_.MemoryType(buffer->dtype), std::max<int64_t>(elements, 1), 64, buffer->name);
    BindBuffer(buffer.get(), data);
    LowerStmt(op->body);
    buffers_.erase(buffer.get());
    return;
  }
  // Heap workspace, freed at the end of the body and on every early return.
  llvm::Value* bytes = b_.getInt64(element_bytes);
  for (const tir::PrimExpr& dim : buffer->shape) {
    llvm::Value* extent = LowerIndex(dim);
    extent = b_.CreateSelect(b_.CreateICmpSLT(extent, b_.getInt64(0)), b_.getInt64(0), extent);
    bytes = b_.CreateMul(bytes, extent);
  }
  llvm::Value* alloc = km_.LoadApiFunction(b_, RuntimeApiSlot::kAllocWorkspace);
  llvm::Value* data = b_.CreateCall(km_.AllocWorkspaceType(), alloc, {bytes}, buffer->name);
  // A NULL workspace means the runtime already reported the error.
  llvm::BasicBlock* failed = llvm::BasicBlock::Create(km_.context(), "workspace.fail", fn_);
  llvm::BasicBlock* ok = llvm::BasicBlock::Create(km_.context(), "workspace.ok", fn_);
  b_.CreateCondBr(b_.CreateIsNull(data), failed, ok);
  b_.SetInsertPoint(failed);
  EmitReturn(b_.getInt32(1));
  b_.CreateUnreachable();
  b_.SetInsertPoint(ok);
  live_workspaces_.push_back(data);
  BindBuffer(buffer.get(), data);
  LowerStmt(op->body);
  buffers_.erase(buffer.get());
  live_workspaces_.pop_back();
  b_.CreateCall(km_.FreeWorkspaceType(), km_.LoadApiFunction(b_, RuntimeApiSlot::kFreeWorkspace), {data});
}

}  // namespace strata::codegen
