// FunctionLowering: scopes, control-flow helpers and region outlining; the node
// lowerings live in lower_expr.cc, lower_stmt.cc and parallel_for.cc.
#include "compiler/codegen/llvm/function_lowering.h"

#include <llvm/IR/Constants.h>

namespace strata::codegen {

FunctionLowering::FunctionLowering(KernelModule& km, std::string program, llvm::Function* fn, bool in_parallel)
    : km_(km), program_(std::move(program)), fn_(fn), b_(km.context()), in_parallel_(in_parallel) {
  // IEEE arithmetic, except that a * b + c may become one fused multiply-add
  // (as C compilers do by default); it only ever removes a rounding step.
  llvm::FastMathFlags fmf;
  fmf.setAllowContract(true);
  b_.setFastMathFlags(fmf);
  if (fn_->empty()) llvm::BasicBlock::Create(km.context(), "entry", fn_);
  b_.SetInsertPoint(&fn_->getEntryBlock());
}

void FunctionLowering::Fail(const std::string& message) {
  if (status_.ok()) status_ = Status::Error(message);
}

void FunctionLowering::EmitReturn(llvm::Value* code) {
  // Innermost allocation first, as the normal exits would free them.
  for (auto it = live_workspaces_.rbegin(); it != live_workspaces_.rend(); ++it) {
    b_.CreateCall(km_.FreeWorkspaceType(), km_.LoadApiFunction(b_, RuntimeApiSlot::kFreeWorkspace), {*it});
  }
  b_.CreateRet(code);
  b_.SetInsertPoint(llvm::BasicBlock::Create(km_.context(), "after.return", fn_));
}

void FunctionLowering::EmitCheck(llvm::Value* ok, const std::function<void(llvm::IRBuilder<>&)>& report) {
  llvm::BasicBlock* fail = llvm::BasicBlock::Create(km_.context(), "check.fail", fn_);
  llvm::BasicBlock* pass = llvm::BasicBlock::Create(km_.context(), "check.ok", fn_);
  b_.CreateCondBr(ok, pass, fail);
  b_.SetInsertPoint(fail);
  report(b_);
  EmitReturn(b_.getInt32(1));
  // The block EmitReturn opened is unreachable; continue in `pass` instead.
  llvm::BasicBlock* dead = b_.GetInsertBlock();
  dead->eraseFromParent();
  b_.SetInsertPoint(pass);
}

void FunctionLowering::EmitLoop(llvm::Value* begin, llvm::Value* end, const std::function<void(llvm::Value*)>& body,
                                llvm::MDNode* loop_md, const std::string& name) {
  llvm::LLVMContext& ctx = km_.context();
  llvm::BasicBlock* preheader = b_.GetInsertBlock();
  llvm::BasicBlock* header = llvm::BasicBlock::Create(ctx, name + ".header", fn_);
  llvm::BasicBlock* body_block = llvm::BasicBlock::Create(ctx, name + ".body", fn_);
  llvm::BasicBlock* exit = llvm::BasicBlock::Create(ctx, name + ".exit", fn_);
  b_.CreateBr(header);
  b_.SetInsertPoint(header);
  llvm::PHINode* iv = b_.CreatePHI(b_.getInt64Ty(), 2, name);
  iv->addIncoming(begin, preheader);
  b_.CreateCondBr(b_.CreateICmpSLT(iv, end), body_block, exit);
  b_.SetInsertPoint(body_block);
  body(iv);
  llvm::Value* next = b_.CreateNSWAdd(iv, b_.getInt64(1), name + ".next");
  llvm::BranchInst* back_edge = b_.CreateBr(header);
  if (loop_md != nullptr) back_edge->setMetadata(llvm::LLVMContext::MD_loop, loop_md);
  iv->addIncoming(next, b_.GetInsertBlock());
  b_.SetInsertPoint(exit);
}

llvm::AllocaInst* FunctionLowering::EntryAlloca(llvm::Type* type, uint64_t count, uint64_t align,
                                                const std::string& name) {
  llvm::BasicBlock& entry = fn_->getEntryBlock();
  llvm::IRBuilder<> at_entry(&entry, entry.begin());
  llvm::AllocaInst* alloca = at_entry.CreateAlloca(type, at_entry.getInt64(count), name);
  alloca->setAlignment(llvm::Align(align));
  return alloca;
}

FunctionLowering::Region FunctionLowering::OutlineRegion(
    const std::string& name, int num_extra, const UsedValues& used, bool in_parallel,
    const std::function<void(FunctionLowering& inner, llvm::ArrayRef<llvm::Value*> extra)>& emit_body) {
  Region region;
  std::vector<llvm::Type*> param_types(num_extra, b_.getInt64Ty());
  for (const tir::VarNode* var : used.vars) {
    if (!vars_.count(var)) continue;  // bound inside the region, or not at all
    region.vars.push_back(var);
    param_types.push_back(vars_.at(var)->getType());
  }
  for (const tir::BufferNode* buffer : used.buffers) {
    if (!buffers_.count(buffer)) continue;  // allocated inside the region
    region.buffers.push_back(buffer);
    param_types.push_back(b_.getPtrTy());
  }
  auto* type = llvm::FunctionType::get(b_.getInt32Ty(), param_types, false);
  region.fn = llvm::Function::Create(type, llvm::GlobalValue::InternalLinkage, km_.UniqueName(name), km_.module());
  km_.SetFunctionAttributes(region.fn);

  FunctionLowering inner(km_, program_, region.fn, in_parallel);
  std::vector<llvm::Value*> extra;
  for (int i = 0; i < num_extra; ++i) extra.push_back(region.fn->getArg(i));
  unsigned arg = num_extra;
  for (const tir::VarNode* var : region.vars) {
    region.fn->getArg(arg)->setName(var->name);
    inner.BindVar(var, region.fn->getArg(arg++));
  }
  for (const tir::BufferNode* buffer : region.buffers) {
    // Distinct buffers never overlap (destination passing gives every output its
    // own storage), which is what lets loads and stores be reordered and vectorized.
    llvm::Argument* data = region.fn->getArg(arg++);
    data->setName(buffer->name);
    data->addAttr(llvm::Attribute::NoAlias);
    data->addAttr(llvm::Attribute::NoCapture);
    inner.BindBuffer(buffer, data);
  }
  emit_body(inner, extra);
  if (inner.builder().GetInsertBlock()->getTerminator() == nullptr) inner.EmitReturn(inner.builder().getInt32(0));
  // EmitReturn leaves an empty block behind; give it a terminator.
  inner.builder().CreateUnreachable();
  if (!inner.status().ok()) Fail(inner.status().message());
  return region;
}

std::vector<llvm::Value*> FunctionLowering::CaptureValues(const Region& region) {
  std::vector<llvm::Value*> values;
  for (const tir::VarNode* var : region.vars) values.push_back(vars_.at(var));
  for (const tir::BufferNode* buffer : region.buffers) values.push_back(buffers_.at(buffer));
  return values;
}

}  // namespace strata::codegen
