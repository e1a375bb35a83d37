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

#include <llvm/IR/Constants.h>

#include "compiler/codegen/llvm/function_lowering.h"
#include "compiler/codegen/llvm/parallel_work.h"
#include "compiler/codegen/llvm/used_values.h"

namespace strata::codegen {

void FunctionLowering::LowerParallelFor(const tir::ForNode* op) {
  llvm::LLVMContext& ctx = km_.context();
  llvm::Value* min = LowerIndex(op->min);
  llvm::Value* extent = LowerIndex(op->extent);
  const tir::VarNode* loop_var = op->loop_var.get();
  UsedValues used = CollectUsedValues(op->body);
  used.vars.erase(std::remove(used.vars.begin(), used.vars.end(), loop_var), used.vars.end());

  Region region =
      OutlineRegion(program_ + ".parallel", /*num_extra=*/3, used, /*in_parallel=*/true,
                    [&](FunctionLowering& inner, llvm::ArrayRef<llvm::Value*> extra) {
                      llvm::Value* body_min = extra[2];
                      inner.EmitLoop(
                          extra[0], extra[1],
                          [&](llvm::Value* iv) {
                            inner.BindVar(loop_var, inner.builder().CreateNSWAdd(body_min, iv, loop_var->name));
                            inner.LowerStmt(op->body);
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
