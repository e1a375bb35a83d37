// VM entry: operands read in place from the VM's registers; see vm_entry.h.
#include "compiler/codegen/llvm/vm_entry.h"

#include <algorithm>
#include <cstddef>

#include <dlpack/dlpack.h>
#include <llvm/IR/IRBuilder.h>

#include "abi/kernel_abi.h"

namespace strata::codegen {

std::string VmEntrySymbol(const std::string& symbol) { return symbol + STRATA_VM_ENTRY_SUFFIX; }

llvm::Function* EmitVmEntry(KernelModule& km, const std::string& symbol, const tir::PrimFunc& func,
                            llvm::Function* main_entry) {
  llvm::LLVMContext& ctx = km.context();
  llvm::Type* ptr = llvm::PointerType::getUnqual(ctx);
  auto* i8 = llvm::Type::getInt8Ty(ctx);
  auto* i32 = llvm::Type::getInt32Ty(ctx);
  auto* i64 = llvm::Type::getInt64Ty(ctx);
  auto* fn_type = llvm::FunctionType::get(i32, {ptr, ptr, i32}, false);
  llvm::Function* fn =
      llvm::Function::Create(fn_type, llvm::GlobalValue::ExternalLinkage, VmEntrySymbol(symbol), km.module());
  km.SetFunctionAttributes(fn);
  llvm::Argument* registers = fn->getArg(0);
  llvm::Argument* operands = fn->getArg(1);
  llvm::Argument* num_operands = fn->getArg(2);
  registers->setName("registers");
  operands->setName("operands");
  num_operands->setName("num_operands");
  for (llvm::Argument* array : {registers, operands}) {
    array->addAttr(llvm::Attribute::NoCapture);
    array->addAttr(llvm::Attribute::ReadOnly);
  }

  const auto& params = func->params;
  const size_t n = params.size();
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", fn));
  llvm::BasicBlock* fallback = llvm::BasicBlock::Create(ctx, "fallback", fn);
  // The main entry's arguments, built as the generic path would; once it is
  // inlined, SROA turns both arrays into values.
  llvm::Value* args = b.CreateAlloca(i64, b.getInt64(static_cast<int64_t>(std::max<size_t>(n, 1))), "args");
  llvm::Value* codes = b.CreateAlloca(i32, b.getInt64(static_cast<int64_t>(std::max<size_t>(n, 1))), "type_codes");

  // Continues in a new block when `ok`, else leaves for the fallback.
  auto require = [&](llvm::Value* ok, const std::string& name) {
    llvm::BasicBlock* next = llvm::BasicBlock::Create(ctx, name, fn);
    b.CreateCondBr(ok, next, fallback);
    b.SetInsertPoint(next);
  };
  require(b.CreateICmpEQ(num_operands, b.getInt32(static_cast<int32_t>(n))), "count.ok");

  for (size_t k = 0; k < n; ++k) {
    const std::string name = params[k].name();
    // The operand word: a register index (>= 0) or a tagged Value address.
    llvm::Value* word = b.CreateLoad(i64, b.CreateConstInBoundsGEP1_64(i64, operands, k), name + ".operand");
    llvm::Value* in_register = b.CreateGEP(i8, registers, b.CreateMul(word, b.getInt64(STRATA_VM_VALUE_SIZE)));
    llvm::Value* held =
        b.CreateIntToPtr(b.CreateAnd(word, b.getInt64(static_cast<int64_t>(~STRATA_VM_OPERAND_VALUE_TAG))), ptr);
    llvm::Value* value = b.CreateSelect(b.CreateICmpSGE(word, b.getInt64(0)), in_register, held, name + ".value");
    llvm::Value* kind =
        b.CreateLoad(i8, b.CreateConstInBoundsGEP1_64(i8, value, STRATA_VM_VALUE_KIND_OFFSET), name + ".kind");
    llvm::Value* payload_address = b.CreateConstInBoundsGEP1_64(i8, value, STRATA_VM_VALUE_PAYLOAD_OFFSET);
    llvm::Value* slot = b.CreateConstInBoundsGEP1_64(i64, args, k);
    llvm::Value* code_slot = b.CreateConstInBoundsGEP1_64(i32, codes, k);
    if (params[k].is_buffer()) {
      require(b.CreateICmpEQ(kind, b.getInt8(STRATA_VM_VALUE_KIND_TENSOR)), name + ".is_tensor");
      llvm::Value* object = b.CreateLoad(ptr, payload_address, name + ".object");
      llvm::Value* tensor = b.CreateConstInBoundsGEP1_64(i8, object, STRATA_VM_TENSOR_DLTENSOR_OFFSET, name + ".dl");
      llvm::Value* device_type = b.CreateLoad(
          i32, b.CreateConstInBoundsGEP1_64(i8, tensor, offsetof(DLTensor, device) + offsetof(DLDevice, device_type)));
      require(b.CreateICmpEQ(device_type, b.getInt32(kDLCPU)), name + ".on_cpu");
      b.CreateStore(tensor, slot);
      b.CreateStore(b.getInt32(STRATA_ARG_TENSOR), code_slot);
      continue;
    }
    // A scalar: the payload word is the int64 or the double's bits, as the
    // matching StrataKernelArg member holds it.
    llvm::Value* is_int = b.CreateICmpEQ(kind, b.getInt8(STRATA_VM_VALUE_KIND_INT));
    llvm::Value* code = b.getInt32(STRATA_ARG_INT);
    if (params[k].scalar->dtype.is_float()) {
      llvm::Value* is_float = b.CreateICmpEQ(kind, b.getInt8(STRATA_VM_VALUE_KIND_FLOAT));
      require(b.CreateOr(is_int, is_float), name + ".is_number");
      code = b.CreateSelect(is_float, b.getInt32(STRATA_ARG_FLOAT), code);
    } else {
      require(is_int, name + ".is_int");
    }
    b.CreateStore(b.CreateLoad(i64, payload_address, name + ".payload"), slot);
    b.CreateStore(code, code_slot);
  }
  llvm::CallInst* call = b.CreateCall(main_entry, {args, codes, b.getInt32(static_cast<int32_t>(n))});
  call->addFnAttr(llvm::Attribute::AlwaysInline);
  b.CreateRet(call);

  b.SetInsertPoint(fallback);
  b.CreateRet(b.getInt32(STRATA_VM_ENTRY_FALLBACK));
  return fn;
}

}  // namespace strata::codegen
