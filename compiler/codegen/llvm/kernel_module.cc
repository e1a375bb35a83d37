// KernelModule: see kernel_module.h.
#include "compiler/codegen/llvm/kernel_module.h"

#include <cassert>
#include <cstddef>

#include <llvm/IR/Constants.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/GlobalVariable.h>

#include "abi/kernel_abi.h"

namespace strata::codegen {
namespace {

// The LLVM struct {i32, ptr, ptr, ptr, ptr} must lay out like StrataRuntimeApi.
static_assert(offsetof(StrataRuntimeApi, parallel_for) == 8 && offsetof(StrataRuntimeApi, set_error) == 16 &&
                  offsetof(StrataRuntimeApi, alloc_workspace) == 24 && offsetof(StrataRuntimeApi, free_workspace) == 32,
              "StrataRuntimeApi layout changed: update KernelModule");

constexpr int kErrorBufferBytes = 512;

unsigned FieldIndex(RuntimeApiSlot slot) {
  switch (slot) {
    case RuntimeApiSlot::kParallelFor: return 1;
    case RuntimeApiSlot::kSetError: return 2;
    case RuntimeApiSlot::kAllocWorkspace: return 3;
    case RuntimeApiSlot::kFreeWorkspace: return 4;
  }
  assert(false && "unknown runtime API slot");
  return 0;
}

}  // namespace

KernelModule::KernelModule(llvm::Module& module, TargetInfo target, bool defines_globals)
    : module_(module), context_(module.getContext()), target_(std::move(target)) {
  llvm::Type* ptr = llvm::PointerType::getUnqual(context_);
  api_type_ =
      llvm::StructType::create(context_, {llvm::Type::getInt32Ty(context_), ptr, ptr, ptr, ptr}, "StrataRuntimeApi");
  // const StrataRuntimeApi* strata_runtime_api: written by the loader, read by kernels.
  api_global_ = new llvm::GlobalVariable(module_, ptr, /*isConstant=*/false, llvm::GlobalValue::ExternalLinkage,
                                         llvm::ConstantPointerNull::get(llvm::PointerType::getUnqual(context_)),
                                         STRATA_RUNTIME_API_SYMBOL);
  api_global_->setAlignment(llvm::Align(8));
  if (!defines_globals) {
    api_global_->setInitializer(nullptr);  // a declaration: another module defines it
    return;
  }
  // const uint32_t strata_kernel_abi_version = STRATA_KERNEL_ABI_VERSION.
  auto* i32 = llvm::Type::getInt32Ty(context_);
  auto* version =
      new llvm::GlobalVariable(module_, i32, /*isConstant=*/true, llvm::GlobalValue::ExternalLinkage,
                               llvm::ConstantInt::get(i32, STRATA_KERNEL_ABI_VERSION), STRATA_ABI_VERSION_SYMBOL);
  version->setAlignment(llvm::Align(4));
  // const uint32_t strata_vm_value_layout: the Value layout the VM entries read.
  auto* layout = new llvm::GlobalVariable(module_, i32, /*isConstant=*/true, llvm::GlobalValue::ExternalLinkage,
                                          llvm::ConstantInt::get(i32, STRATA_VM_VALUE_LAYOUT_VERSION),
                                          STRATA_VM_VALUE_LAYOUT_SYMBOL);
  layout->setAlignment(llvm::Align(4));
}

llvm::Type* KernelModule::ValueType(DataType dtype) {
  switch (dtype.code()) {
    case DataType::Code::kBool: return llvm::Type::getInt1Ty(context_);
    case DataType::Code::kInt:
    case DataType::Code::kUInt: return llvm::Type::getIntNTy(context_, dtype.bits());
    case DataType::Code::kFloat:
      if (dtype.bits() == 16) return llvm::Type::getHalfTy(context_);
      if (dtype.bits() == 32) return llvm::Type::getFloatTy(context_);
      return llvm::Type::getDoubleTy(context_);
    case DataType::Code::kHandle: return llvm::PointerType::getUnqual(context_);
  }
  assert(false && "unknown dtype code");
  return nullptr;
}

llvm::Type* KernelModule::MemoryType(DataType dtype) {
  return dtype.is_bool() ? llvm::Type::getInt8Ty(context_) : ValueType(dtype);
}

llvm::FunctionType* KernelModule::ParallelBodyType() {
  auto* i64 = llvm::Type::getInt64Ty(context_);
  return llvm::FunctionType::get(llvm::Type::getInt32Ty(context_), {i64, i64, llvm::PointerType::getUnqual(context_)},
                                 false);
}

llvm::FunctionType* KernelModule::ParallelForType() {
  llvm::Type* ptr = llvm::PointerType::getUnqual(context_);
  return llvm::FunctionType::get(llvm::Type::getInt32Ty(context_), {llvm::Type::getInt64Ty(context_), ptr, ptr}, false);
}

llvm::FunctionType* KernelModule::SetErrorType() {
  return llvm::FunctionType::get(llvm::Type::getVoidTy(context_), {llvm::PointerType::getUnqual(context_)}, false);
}

llvm::FunctionType* KernelModule::AllocWorkspaceType() {
  return llvm::FunctionType::get(llvm::PointerType::getUnqual(context_), {llvm::Type::getInt64Ty(context_)}, false);
}

llvm::FunctionType* KernelModule::FreeWorkspaceType() { return SetErrorType(); }

llvm::Value* KernelModule::LoadApiFunction(llvm::IRBuilder<>& b, RuntimeApiSlot slot) {
  llvm::Type* ptr = llvm::PointerType::getUnqual(context_);
  llvm::Value* api = b.CreateAlignedLoad(ptr, api_global_, llvm::Align(8), "api");
  llvm::Value* field = b.CreateStructGEP(api_type_, api, FieldIndex(slot));
  return b.CreateAlignedLoad(ptr, field, llvm::Align(8));
}

void KernelModule::EmitSetError(llvm::IRBuilder<>& b, const std::string& message) {
  EmitSetError(b, StringConstant(message));
}

void KernelModule::EmitSetError(llvm::IRBuilder<>& b, llvm::Value* message) {
  llvm::Value* set_error = LoadApiFunction(b, RuntimeApiSlot::kSetError);
  b.CreateCall(SetErrorType(), set_error, {message});
}

void KernelModule::EmitSetErrorFormatted(llvm::IRBuilder<>& b, const std::string& format, llvm::Value* a,
                                         llvm::Value* v1, llvm::Value* v2) {
  auto* i64 = b.getInt64Ty();
  auto widen = [&](llvm::Value* v) -> llvm::Value* {
    if (v == nullptr) return b.getInt64(0);
    return v->getType() == i64 ? v : b.CreateSExt(v, i64);
  };
  b.CreateCall(FormattedErrorHelper(), {StringConstant(format), widen(a), widen(v1), widen(v2)});
}

void KernelModule::EmitSetErrorDtype(llvm::IRBuilder<>& b, const std::string& prefix, llvm::Value* code,
                                     llvm::Value* bits, llvm::Value* lanes) {
  auto* i32 = b.getInt32Ty();
  b.CreateCall(DtypeErrorHelper(),
               {StringConstant(prefix), b.CreateZExt(code, i32), b.CreateZExt(bits, i32), b.CreateZExt(lanes, i32)});
}

llvm::Constant* KernelModule::StringConstant(const std::string& text) {
  auto it = strings_.find(text);
  if (it != strings_.end()) return it->second;
  llvm::Constant* data = llvm::ConstantDataArray::getString(context_, text, /*AddNull=*/true);
  auto* global = new llvm::GlobalVariable(module_, data->getType(), /*isConstant=*/true,
                                          llvm::GlobalValue::PrivateLinkage, data, ".str");
  global->setUnnamedAddr(llvm::GlobalValue::UnnamedAddr::Global);
  global->setAlignment(llvm::Align(1));
  strings_.emplace(text, global);
  return global;
}

llvm::FunctionCallee KernelModule::MathFunction(const std::string& name, llvm::Type* type) {
  llvm::FunctionCallee callee = module_.getOrInsertFunction(name, llvm::FunctionType::get(type, {type}, false));
  if (auto* fn = llvm::dyn_cast<llvm::Function>(callee.getCallee())) {
    // tanh and erf never fail for finite or infinite inputs, so no errno to keep.
    fn->setDoesNotThrow();
    fn->setDoesNotAccessMemory();
    fn->setWillReturn();
  }
  return callee;
}

void KernelModule::SetFunctionAttributes(llvm::Function* fn) {
  if (!target_.cpu.empty()) fn->addFnAttr("target-cpu", target_.cpu);
  if (!target_.features.empty()) fn->addFnAttr("target-features", target_.features);
  fn->setDoesNotThrow();
}

std::string KernelModule::UniqueName(const std::string& base) {
  int& count = name_counts_[base];
  std::string name = count == 0 ? base : base + "." + std::to_string(count);
  ++count;
  return name;
}

llvm::Function* KernelModule::CreateHelper(const std::string& name, llvm::FunctionType* type) {
  auto* fn = llvm::Function::Create(type, llvm::GlobalValue::InternalLinkage, name, module_);
  SetFunctionAttributes(fn);
  // Error paths: keep them out of the hot code.
  fn->addFnAttr(llvm::Attribute::Cold);
  fn->addFnAttr(llvm::Attribute::NoInline);
  return fn;
}

// void strata.error_fmt(ptr format, i64 a, i64 b, i64 c):
//   char buf[512]; snprintf(buf, sizeof buf, format, a, b, c); api->set_error(buf);
llvm::Function* KernelModule::FormattedErrorHelper() {
  if (formatted_error_helper_ != nullptr) return formatted_error_helper_;
  llvm::Type* ptr = llvm::PointerType::getUnqual(context_);
  auto* i64 = llvm::Type::getInt64Ty(context_);
  llvm::Function* fn = CreateHelper(
      "strata.error_fmt", llvm::FunctionType::get(llvm::Type::getVoidTy(context_), {ptr, i64, i64, i64}, false));
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(context_, "entry", fn));
  llvm::Value* buffer = b.CreateAlloca(b.getInt8Ty(), b.getInt64(kErrorBufferBytes), "buf");
  llvm::FunctionCallee snprintf = module_.getOrInsertFunction(
      "snprintf", llvm::FunctionType::get(b.getInt32Ty(), {ptr, i64, ptr}, /*isVarArg=*/true));
  b.CreateCall(snprintf,
               {buffer, b.getInt64(kErrorBufferBytes), fn->getArg(0), fn->getArg(1), fn->getArg(2), fn->getArg(3)});
  b.CreateCall(SetErrorType(), LoadApiFunction(b, RuntimeApiSlot::kSetError), {buffer});
  b.CreateRetVoid();
  formatted_error_helper_ = fn;
  return fn;
}

// void strata.error_dtype(ptr prefix, i32 code, i32 bits, i32 lanes): appends the
// DLDataType's name ("f32", "bool", "f32x4") to prefix and calls set_error.
llvm::Function* KernelModule::DtypeErrorHelper() {
  if (dtype_error_helper_ != nullptr) return dtype_error_helper_;
  llvm::Type* ptr = llvm::PointerType::getUnqual(context_);
  auto* i32 = llvm::Type::getInt32Ty(context_);
  auto* i64 = llvm::Type::getInt64Ty(context_);
  llvm::Function* fn = CreateHelper(
      "strata.error_dtype", llvm::FunctionType::get(llvm::Type::getVoidTy(context_), {ptr, i32, i32, i32}, false));
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(context_, "entry", fn));
  llvm::Value* prefix = fn->getArg(0);
  llvm::Value* code = fn->getArg(1);
  llvm::Value* bits = fn->getArg(2);
  llvm::Value* lanes = fn->getArg(3);
  // DLPack type codes: 0 int, 1 uint, 2 float, 3 handle, 4 bfloat, 5 complex, 6 bool.
  static constexpr const char* kCodeNames[] = {"i", "u", "f", "handle", "bf", "c", "bool"};
  llvm::Value* name = StringConstant("type code ");
  for (int c = 6; c >= 0; --c) {
    name = b.CreateSelect(b.CreateICmpEQ(code, b.getInt32(c)), StringConstant(kCodeNames[c]), name);
  }
  // printf cannot skip an argument, so the values are ordered per format:
  // known codes print (bits[, lanes]), unknown ones (code, bits, lanes).
  llvm::Value* is_known = b.CreateICmpULE(code, b.getInt32(6));
  llvm::Value* format = StringConstant("%s%s%d");
  format = b.CreateSelect(b.CreateICmpEQ(code, b.getInt32(6)), StringConstant("%s%s"), format);
  format = b.CreateSelect(b.CreateICmpNE(lanes, b.getInt32(1)), StringConstant("%s%s%dx%d"), format);
  format = b.CreateSelect(is_known, format, StringConstant("%s%s%d (bits %d, lanes %d)"));
  llvm::Value* first = b.CreateSelect(is_known, bits, code);
  llvm::Value* second = b.CreateSelect(is_known, lanes, bits);
  llvm::Value* buffer = b.CreateAlloca(b.getInt8Ty(), b.getInt64(kErrorBufferBytes), "buf");
  llvm::FunctionCallee snprintf =
      module_.getOrInsertFunction("snprintf", llvm::FunctionType::get(i32, {ptr, i64, ptr}, /*isVarArg=*/true));
  b.CreateCall(snprintf, {buffer, b.getInt64(kErrorBufferBytes), format, prefix, name, first, second, lanes});
  b.CreateCall(SetErrorType(), LoadApiFunction(b, RuntimeApiSlot::kSetError), {buffer});
  b.CreateRetVoid();
  dtype_error_helper_ = fn;
  return fn;
}

}  // namespace strata::codegen
