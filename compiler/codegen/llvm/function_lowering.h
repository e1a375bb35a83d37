// FunctionLowering: emits the LLVM IR of tensor-program statements and
// expressions into one llvm::Function.
//
// A kernel becomes several functions: the exported entry (argument checks,
// kernel_entry.h), the kernel body, and one outlined function per parallel loop.
// Each body-like function gets its own FunctionLowering, whose scope maps IR
// variables and buffers to the LLVM values that hold them. Every such function
// returns i32: 0, or non-zero after api->set_error, so errors from any depth,
// parallel chunks included, travel back to the entry as a return value.
//
// Lowering problems (an unbound variable, an unsupported dtype) are recorded in
// status() rather than asserted: they are errors in the program being compiled.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include <llvm/IR/IRBuilder.h>

#include "compiler/codegen/llvm/kernel_module.h"
#include "compiler/codegen/llvm/used_values.h"
#include "compiler/ir/tir.h"
#include "support/status.h"

namespace strata::codegen {

class FunctionLowering {
 public:
  // `program` names the tensor program in error messages; `in_parallel` is true
  // inside an outlined parallel body, where nested parallel loops run serially.
  FunctionLowering(KernelModule& km, std::string program, llvm::Function* fn, bool in_parallel);

  llvm::IRBuilder<>& builder() { return b_; }
  llvm::Function* function() const { return fn_; }
  const std::string& program() const { return program_; }

  void BindVar(const tir::VarNode* var, llvm::Value* value) { vars_[var] = value; }
  void BindBuffer(const tir::BufferNode* buffer, llvm::Value* data) { buffers_[buffer] = data; }
  bool IsBound(const tir::VarNode* var) const { return vars_.count(var) != 0; }

  void LowerStmt(const tir::Stmt& stmt);
  llvm::Value* LowerExpr(const tir::PrimExpr& expr);
  // LowerExpr converted to i64 (sign- or zero-extended by the expression's dtype).
  llvm::Value* LowerIndex(const tir::PrimExpr& expr);

  // Returns `code` from the function, freeing the workspace of every enclosing
  // allocation first. The builder continues in a fresh (unreachable) block.
  void EmitReturn(llvm::Value* code);
  // Branches to a cold block that runs `report` (which calls set_error) and
  // returns 1 when `ok` is false; continues where `ok` is true.
  void EmitCheck(llvm::Value* ok, const std::function<void(llvm::IRBuilder<>&)>& report);
  // Emits `for (iv = begin; iv < end; ++iv) body(iv)` over i64, tagging the back
  // edge with `loop_md` (may be null).
  void EmitLoop(llvm::Value* begin, llvm::Value* end, const std::function<void(llvm::Value*)>& body,
                llvm::MDNode* loop_md, const std::string& name);

  // Creates `i32 name(i64 extra..., captured values...)`, internal, whose pointer
  // parameters (buffer data) are noalias, and fills it by running `emit_body` on
  // a new FunctionLowering in which the captured values of this scope are bound.
  // The captures are the variables and buffers of `used` bound in this scope.
  // Returns the function; CallRegion passes the matching values.
  struct Region {
    llvm::Function* fn = nullptr;
    std::vector<const tir::VarNode*> vars;
    std::vector<const tir::BufferNode*> buffers;
  };
  Region OutlineRegion(
      const std::string& name, int num_extra, const UsedValues& used, bool in_parallel,
      const std::function<void(FunctionLowering& inner, llvm::ArrayRef<llvm::Value*> extra)>& emit_body);
  // The values this scope passes for `region`'s captures, in parameter order.
  std::vector<llvm::Value*> CaptureValues(const Region& region);

  // A compile-time error in the program (first one wins).
  void Fail(const std::string& message);
  const Status& status() const { return status_; }

 private:
  // Expressions (lower_expr.cc).
  llvm::Value* LowerBinary(const tir::BinaryOpNode* op);
  llvm::Value* LowerShortCircuit(const tir::BinaryOpNode* op);
  llvm::Value* LowerCast(DataType to, DataType from, llvm::Value* value);
  llvm::Value* LowerExp(llvm::Value* x, DataType t);
  llvm::Value* LowerCall(const tir::CallNode* op);
  llvm::Value* BufferAddress(const tir::Buffer& buffer, const std::vector<tir::PrimExpr>& indices);
  llvm::Value* Undef(DataType dtype);

  // Statements (lower_stmt.cc, parallel_for.cc).
  void LowerFor(const tir::Stmt& stmt);
  void LowerParallelFor(const tir::ForNode* op);
  void LowerAllocate(const tir::AllocateNode* op);
  void LowerIfThenElse(const tir::IfThenElseNode* op);
  llvm::MDNode* LoopMetadata(const tir::ForNode* op);
  // An alloca in the entry block, so it is allocated once per call.
  llvm::AllocaInst* EntryAlloca(llvm::Type* type, uint64_t count, uint64_t align, const std::string& name);

  KernelModule& km_;
  std::string program_;
  llvm::Function* fn_;
  llvm::IRBuilder<> b_;
  bool in_parallel_;
  std::unordered_map<const tir::VarNode*, llvm::Value*> vars_;
  std::unordered_map<const tir::BufferNode*, llvm::Value*> buffers_;
  // Workspace of the enclosing large allocations, freed on every return path.
  std::vector<llvm::Value*> live_workspaces_;
  int64_t stack_bytes_ = 0;
  Status status_;
};

}  // namespace strata::codegen
