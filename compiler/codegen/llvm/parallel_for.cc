// Lowering of parallel loops: outlining the body and calling api->parallel_for.
//
//   for i in parallel(min, extent) { body }
// becomes
//   closure = {min, captured values...}            (a stack struct)
//   rc = work < kMinParallelWork ? chunk(0, extent, &closure)   (parallel_work.h)
//                                : api->parallel_for(extent, chunk, &closure)
//   if (rc != 0) return rc                          (the message is already set)
// with
//   i32 chunk(i64 begin, i64 end, ptr closure)      unpacks the closure and calls
//   i32 body(i64 begin, i64 end, i64 min, values...) runs i = min + [begin, end).
// The body takes its buffers as noalias parameters; once LLVM inlines it into the
// chunk function that becomes alias metadata, so the chunk's loops vectorize
// without runtime overlap checks. Parallel loops inside the body run serially
// (the runtime would run a nested parallel_for serially anyway).
#include <algorithm>
#include <optional>
#include <vector>

#include <llvm/IR/Constants.h>

#include "compiler/codegen/llvm/function_lowering.h"
#include "compiler/codegen/llvm/parallel_work.h"
#include "compiler/codegen/llvm/used_values.h"
#include "compiler/ir/arith/simplify.h"

namespace strata::codegen {
namespace {

// The multi-index of a flattened parallel loop (build::ParallelOver) is
//   let t0 = t // (h * 6); let t1 = t // h % 6; let t2 = t % h
// two hardware divisions by a symbolic extent per iteration, tens of cycles
// each, where an iteration may be a depthwise convolution's row (about 150
// cycles of work) or a row of 7 elements. A chunk runs consecutive
// iterations, so such values are counted instead: divided once at the
// chunk's first iteration, then stepped (the remainder wraps to 0 and carries
// into the quotient, which steps its own remainder modulo d).
struct CountedIndex {
  const tir::VarNode* var;
  tir::PrimExpr divisor;  // c of t // c, t % c or t // c % d
  tir::PrimExpr modulus;  // d of t // c % d; undefined otherwise
  bool quotient;          // t // c or t // c % d, rather than t % c
};

bool IsVar(const tir::PrimExpr& e, const tir::VarNode* var) { return e.get() == var; }

// c is the same in every iteration and positive whenever the loop runs (a
// division by it would fault otherwise), so floor division is the unsigned one.
bool InvariantDivisor(const tir::PrimExpr& c, const tir::VarNode* loop_var, const std::vector<CountedIndex>& counted) {
  if (c.dtype() != DataType::I64() || !arith::ProveNonNegative(c)) return false;
  for (const tir::VarNode* used : CollectUsedValues(c).vars) {
    if (used == loop_var) return false;
    for (const CountedIndex& index : counted) {
      if (used == index.var) return false;
    }
  }
  return true;
}

// The counted lets at the head of `body`; `rest` is what follows them.
std::vector<CountedIndex> CountedIndices(const tir::Stmt& body, const tir::VarNode* loop_var, tir::Stmt* rest) {
  std::vector<CountedIndex> counted;
  tir::Stmt stmt = body;
  while (const auto* let = stmt.as<tir::LetStmtNode>()) {
    const auto* op = let->value.as<tir::BinaryOpNode>();
    if (op == nullptr || let->var.dtype() != DataType::I64()) break;
    std::optional<CountedIndex> index;
    const auto* inner = op->a.as<tir::BinaryOpNode>();
    if (op->kind == tir::PrimExprKind::kFloorDiv && IsVar(op->a, loop_var)) {
      index = CountedIndex{let->var.get(), op->b, {}, true};
    } else if (op->kind == tir::PrimExprKind::kFloorMod && IsVar(op->a, loop_var)) {
      index = CountedIndex{let->var.get(), op->b, {}, false};
    } else if (op->kind == tir::PrimExprKind::kFloorMod && inner != nullptr &&
               inner->kind == tir::PrimExprKind::kFloorDiv && IsVar(inner->a, loop_var)) {
      index = CountedIndex{let->var.get(), inner->b, op->b, true};
    }
    if (!index || !InvariantDivisor(index->divisor, loop_var, counted) ||
        (index->modulus.defined() && !InvariantDivisor(index->modulus, loop_var, counted))) {
      break;
    }
    counted.push_back(*index);
    stmt = let->body;
  }
  *rest = stmt;
  return counted;
}

}  // namespace

void FunctionLowering::LowerParallelFor(const tir::ForNode* op) {
  llvm::LLVMContext& ctx = km_.context();
  llvm::Value* min = LowerIndex(op->min);
  llvm::Value* extent = LowerIndex(op->extent);
  const tir::VarNode* loop_var = op->loop_var.get();
  UsedValues used = CollectUsedValues(op->body);
  used.vars.erase(std::remove(used.vars.begin(), used.vars.end(), loop_var), used.vars.end());

  // Counting needs the iteration values to start non-negative.
  tir::Stmt rest = op->body;
  std::vector<CountedIndex> counted;
  if (std::optional<int64_t> lowest = arith::AsConstant(op->min); lowest && *lowest >= 0) {
    counted = CountedIndices(op->body, loop_var, &rest);
  }

  Region region = OutlineRegion(
      program_ + ".parallel", /*num_extra=*/3, used, /*in_parallel=*/true,
      [&](FunctionLowering& inner, llvm::ArrayRef<llvm::Value*> extra) {
        llvm::IRBuilder<>& b = inner.builder();
        llvm::Value* body_min = extra[2];
        // Per counted index: its divisor and modulus, the
        // remainder t % c and the quotient t // c (modulo d).
        struct Counter {
          llvm::Value *c, *d;
          llvm::AllocaInst *r, *m;
        };
        std::vector<Counter> counters;
        llvm::Value* first = b.CreateNSWAdd(body_min, extra[0]);
        llvm::Value* one = b.getInt64(1);
        // An empty chunk (n = 0) may have a zero divisor: divide by 1 then.
        auto nonzero = [&](llvm::Value* v) { return b.CreateSelect(b.CreateICmpEQ(v, b.getInt64(0)), one, v); };
        for (const CountedIndex& index : counted) {
          Counter k;
          k.c = inner.LowerIndex(index.divisor);
          k.d = index.modulus.defined() ? inner.LowerIndex(index.modulus) : nullptr;
          k.r = inner.EntryAlloca(b.getInt64Ty(), 1, 8, index.var->name + ".r");
          k.m = inner.EntryAlloca(b.getInt64Ty(), 1, 8, index.var->name + ".m");
          llvm::Value* c = nonzero(k.c);
          llvm::Value* q = b.CreateUDiv(first, c);
          b.CreateStore(b.CreateURem(first, c), k.r);
          b.CreateStore(k.d != nullptr ? b.CreateURem(q, nonzero(k.d)) : q, k.m);
          counters.push_back(k);
        }
        inner.EmitLoop(
            extra[0], extra[1],
            [&](llvm::Value* iv) {
              inner.BindVar(loop_var, b.CreateNSWAdd(body_min, iv, loop_var->name));
              for (size_t i = 0; i < counted.size(); ++i) {
                const Counter& k = counters[i];
                llvm::AllocaInst* held = !counted[i].quotient ? k.r : k.m;
                inner.BindVar(counted[i].var, b.CreateLoad(b.getInt64Ty(), held, counted[i].var->name));
              }
              inner.LowerStmt(rest);
              for (const Counter& k : counters) {
                llvm::Value* r = b.CreateAdd(b.CreateLoad(b.getInt64Ty(), k.r), one);
                llvm::Value* wraps = b.CreateICmpEQ(r, k.c);
                llvm::Value* carry = b.CreateZExt(wraps, b.getInt64Ty());
                b.CreateStore(b.CreateSelect(wraps, b.getInt64(0), r), k.r);
                llvm::Value* m = b.CreateAdd(b.CreateLoad(b.getInt64Ty(), k.m), carry);
                if (k.d != nullptr) m = b.CreateSelect(b.CreateICmpEQ(m, k.d), b.getInt64(0), m);
                b.CreateStore(m, k.m);
              }
            },
            nullptr, loop_var->name + ".chunk");
      });

  // The closure: min, then the captured values in the body's parameter order.
  std::vector<llvm::Value*> fields = {min};
  for (llvm::Value* value : CaptureValues(region)) fields.push_back(value);
  std::vector<llvm::Type*> field_types;
  for (llvm::Value* value : fields) field_types.push_back(value->getType());
  llvm::StructType* closure_type = llvm::StructType::get(ctx, field_types);
  llvm::AllocaInst* closure = EntryAlloca(closure_type, 1, 8, "closure");
  for (unsigned i = 0; i < fields.size(); ++i) b_.CreateStore(fields[i], b_.CreateStructGEP(closure_type, closure, i));

  llvm::Function* chunk = llvm::Function::Create(km_.ParallelBodyType(), llvm::GlobalValue::InternalLinkage,
                                                 km_.UniqueName(region.fn->getName().str() + ".chunk"), km_.module());
  km_.SetFunctionAttributes(chunk);
  {
    llvm::IRBuilder<> cb(llvm::BasicBlock::Create(ctx, "entry", chunk));
    llvm::Value* closure_arg = chunk->getArg(2);
    std::vector<llvm::Value*> args = {chunk->getArg(0), chunk->getArg(1)};
    for (unsigned i = 0; i < fields.size(); ++i) {
      args.push_back(cb.CreateLoad(field_types[i], cb.CreateStructGEP(closure_type, closure_arg, i)));
    }
    cb.CreateRet(cb.CreateCall(region.fn, args));
  }

  // Small loops run on this thread: waking the pool would cost more than the loop.
  llvm::Value* small = nullptr;
  if (std::optional<tir::PrimExpr> work = ParallelLoopWork(*op)) {
    bool computable = true;
    for (const tir::VarNode* var : CollectUsedValues(*work).vars) computable = computable && IsBound(var);
    if (computable) small = b_.CreateICmpSLT(LowerIndex(*work), b_.getInt64(kMinParallelWork), "small");
  }
  llvm::Value* rc;
  if (small == nullptr) {
    llvm::Value* parallel_for = km_.LoadApiFunction(b_, RuntimeApiSlot::kParallelFor);
    rc = b_.CreateCall(km_.ParallelForType(), parallel_for, {extent, chunk, closure}, "rc");
  } else {
    llvm::BasicBlock* serial = llvm::BasicBlock::Create(ctx, "parallel.serial", fn_);
    llvm::BasicBlock* pooled = llvm::BasicBlock::Create(ctx, "parallel.pool", fn_);
    llvm::BasicBlock* joined = llvm::BasicBlock::Create(ctx, "parallel.joined", fn_);
    b_.CreateCondBr(small, serial, pooled);
    b_.SetInsertPoint(serial);
    llvm::Value* serial_rc = b_.CreateCall(chunk, {b_.getInt64(0), extent, closure}, "serial.rc");
    b_.CreateBr(joined);
    b_.SetInsertPoint(pooled);
    llvm::Value* parallel_for = km_.LoadApiFunction(b_, RuntimeApiSlot::kParallelFor);
    llvm::Value* pool_rc = b_.CreateCall(km_.ParallelForType(), parallel_for, {extent, chunk, closure}, "pool.rc");
    b_.CreateBr(joined);
    b_.SetInsertPoint(joined);
    llvm::PHINode* phi = b_.CreatePHI(b_.getInt32Ty(), 2, "rc");
    phi->addIncoming(serial_rc, serial);
    phi->addIncoming(pool_rc, pooled);
    rc = phi;
  }
  llvm::BasicBlock* failed = llvm::BasicBlock::Create(ctx, "parallel.fail", fn_);
  llvm::BasicBlock* done = llvm::BasicBlock::Create(ctx, "parallel.done", fn_);
  b_.CreateCondBr(b_.CreateICmpEQ(rc, b_.getInt32(0)), done, failed);
  b_.SetInsertPoint(failed);
  EmitReturn(rc);
  b_.CreateUnreachable();
  b_.SetInsertPoint(done);
}

}  // namespace strata::codegen
