// Lowering of parallel loops: outlining the body and calling api->parallel_for.
//
//   for i in parallel(min, extent) { body }
// becomes
//   closure = {min, captured values...}            (a stack struct)
//   rc = api->parallel_for(extent, chunk, &closure)
//   if (rc != 0) return rc                          (the message is already set)
// with
//   i32 chunk(i64 begin, i64 end, ptr closure)      unpacks the closure and calls
//   i32 body(i64 begin, i64 end, i64 min, values...) runs i = min + [begin, end).
// The body takes its buffers as noalias parameters; once LLVM inlines it into the
// chunk function that becomes alias metadata, so the chunk's loops vectorize
// without runtime overlap checks. Parallel loops inside the body run serially
// (the runtime would run a nested parallel_for serially anyway).
#include <llvm/IR/Constants.h>

#include <algorithm>

#include "compiler/codegen/llvm/function_lowering.h"

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

  llvm::Value* parallel_for = km_.LoadApiFunction(b_, RuntimeApiSlot::kParallelFor);
  llvm::Value* rc = b_.CreateCall(km_.ParallelForType(), parallel_for, {extent, chunk, closure}, "rc");
  llvm::BasicBlock* failed = llvm::BasicBlock::Create(ctx, "parallel.fail", fn_);
  llvm::BasicBlock* done = llvm::BasicBlock::Create(ctx, "parallel.done", fn_);
  b_.CreateCondBr(b_.CreateICmpEQ(rc, b_.getInt32(0)), done, failed);
  b_.SetInsertPoint(failed);
  EmitReturn(rc);
  b_.CreateUnreachable();
  b_.SetInsertPoint(done);
}

}  // namespace strata::codegen
