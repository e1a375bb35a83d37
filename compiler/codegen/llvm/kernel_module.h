// KernelModule: the LLVM module all tensor programs of one compile are lowered into.
//
// Owns what every kernel shares: the two ABI globals (kernel_abi.h), the type of
// the runtime API table and calls through it, the cold error-reporting helpers,
// string constants and the libm declarations. Everything a kernel calls at run
// time goes through the API table or libc/libm, so the shared object needs no
// symbol from the process that loads it.
#pragma once

#include <map>
#include <string>

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include "support/data_type.h"

namespace strata::codegen {

// What the lowering needs to know about the target.
struct TargetInfo {
  std::string cpu;
  std::string features;   // "+avx2,+fma,..." as LLVM spells them
  int vector_bits = 128;  // widest vector register the loops should use
};

enum class RuntimeApiSlot { kParallelFor, kSetError, kAllocWorkspace, kFreeWorkspace };

class KernelModule {
 public:
  // `defines_globals`: this module defines the runtime API slot and the ABI and
  // layout version symbols; the other modules linked into the same shared
  // object (parallel compilation) only declare them.
  KernelModule(llvm::Module& module, TargetInfo target, bool defines_globals = true);

  llvm::LLVMContext& context() { return context_; }
  llvm::Module& module() { return module_; }
  const TargetInfo& target() const { return target_; }

  // The type of a value in registers (bool is i1) and in memory (bool is i8).
  llvm::Type* ValueType(DataType dtype);
  llvm::Type* MemoryType(DataType dtype);

  // Loads the function pointer in `slot` of the runtime API table. Signatures:
  // ParallelForType(), SetErrorType(), AllocWorkspaceType(), FreeWorkspaceType().
  llvm::Value* LoadApiFunction(llvm::IRBuilder<>& b, RuntimeApiSlot slot);
  llvm::FunctionType* ParallelForType();
  llvm::FunctionType* ParallelBodyType();
  llvm::FunctionType* SetErrorType();
  llvm::FunctionType* AllocWorkspaceType();
  llvm::FunctionType* FreeWorkspaceType();

  // api->set_error(message) with a constant message.
  void EmitSetError(llvm::IRBuilder<>& b, const std::string& message);
  // api->set_error(message) with a message chosen at run time (a C string).
  void EmitSetError(llvm::IRBuilder<>& b, llvm::Value* message);
  // api->set_error(snprintf(format, a, b, c)); `format` takes up to three
  // `%lld` in order (unused trailing values are ignored, as in C).
  void EmitSetErrorFormatted(llvm::IRBuilder<>& b, const std::string& format, llvm::Value* a, llvm::Value* v1 = nullptr,
                             llvm::Value* v2 = nullptr);
  // api->set_error(prefix + name of the DLDataType {code, bits, lanes}).
  void EmitSetErrorDtype(llvm::IRBuilder<>& b, const std::string& prefix, llvm::Value* code, llvm::Value* bits,
                         llvm::Value* lanes);

  // A private constant C string, shared by equal texts.
  llvm::Constant* StringConstant(const std::string& text);

  // A libm function taking and returning `type` (tanhf, erf, ...).
  llvm::FunctionCallee MathFunction(const std::string& name, llvm::Type* type);

  // Target CPU/features and the attributes every generated function carries.
  void SetFunctionAttributes(llvm::Function* fn);

  // `base` made unique among the module's internal functions ("tir_f.par", "tir_f.par.1").
  std::string UniqueName(const std::string& base);

 private:
  llvm::Function* FormattedErrorHelper();
  llvm::Function* DtypeErrorHelper();
  llvm::Function* CreateHelper(const std::string& name, llvm::FunctionType* type);

  llvm::Module& module_;
  llvm::LLVMContext& context_;
  TargetInfo target_;
  llvm::StructType* api_type_;
  llvm::GlobalVariable* api_global_;
  llvm::Function* formatted_error_helper_ = nullptr;
  llvm::Function* dtype_error_helper_ = nullptr;
  std::map<std::string, llvm::Constant*> strings_;
  std::map<std::string, int> name_counts_;
};

}  // namespace strata::codegen
