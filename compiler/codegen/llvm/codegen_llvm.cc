// CompileTensorPrograms: tensor programs -> one LLVM module -> one shared object.
//
// The steps, in order: lower every program into one module (kernel_entry.h),
// verify it, run the O3 pipeline (LLVM's vectorizer and unroller act on the loop
// schedules), emit an object file in memory and link it into a shared object
// with the system linker (system_linker.h). Each call has its own LLVMContext,
// so concurrent compiles do not share state.
#include "compiler/codegen/llvm/codegen_llvm.h"

#include <set>

#include <llvm/IR/DiagnosticInfo.h>
#include <llvm/IR/DiagnosticPrinter.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/raw_ostream.h>

#include "compiler/codegen/llvm/host_target.h"
#include "compiler/codegen/llvm/kernel_entry.h"
#include "compiler/codegen/llvm/kernel_module.h"
#include "compiler/codegen/llvm/system_linker.h"
#include "compiler/codegen/llvm/vm_entry.h"

namespace strata::codegen {
namespace {

// LLVM reports problems through the context. Errors are kept for the Status;
// warnings and remarks (e.g. "loop not vectorized" for a vectorized loop whose
// body cannot be vectorized, which then simply runs as a scalar loop) are dropped
// instead of going to stderr.
struct DiagnosticSink {
  std::string first_error;

  static void Handle(const llvm::DiagnosticInfo& info, void* context) {
    if (info.getSeverity() != llvm::DS_Error) return;
    auto* sink = static_cast<DiagnosticSink*>(context);
    if (!sink->first_error.empty()) return;
    llvm::raw_string_ostream stream(sink->first_error);
    llvm::DiagnosticPrinterRawOStream printer(stream);
    info.print(printer);
  }
};

// Symbol-safe spelling of a program name: [A-Za-z0-9_] kept, the rest '_'.
std::string Sanitize(const std::string& name) {
  std::string out;
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    out += ok ? c : '_';
  }
  return out;
}

}  // namespace

StatusOr<CompiledKernels> CompileTensorPrograms(const std::vector<std::pair<std::string, tir::PrimFunc>>& funcs,
                                                const CodegenOptions& options) {
  STRATA_ASSIGN_OR_RETURN(HostTarget target, CreateHostTarget(options));
  llvm::LLVMContext context;
  DiagnosticSink diagnostics;
  context.setDiagnosticHandlerCallBack(&DiagnosticSink::Handle, &diagnostics);
  llvm::Module module("strata_kernels", context);
  ConfigureModule(module, target);
  KernelModule km(module, target.info);

  CompiledKernels result;
  result.target_triple = target.triple;
  result.cpu = target.info.cpu;
  result.cpu_features = target.required_cpu_features;
  std::set<std::string> symbols;
  for (const auto& [name, func] : funcs) {
    if (!func) return Status(ErrorStatus() << "cannot compile tensor program '" << name << "': it is null");
    if (result.symbols.count(name)) return Status(ErrorStatus() << "tensor program '" << name << "' is given twice");
    // Distinct names may sanitize alike ("a.b", "a_b"); number the later ones.
    std::string symbol = "strata_kernel_" + Sanitize(name);
    // Each kernel exports two names: its symbol and its VM entry's.
    auto taken = [&](const std::string& s) { return symbols.count(s) || symbols.count(VmEntrySymbol(s)); };
    for (int i = 1; taken(symbol); ++i) symbol = "strata_kernel_" + Sanitize(name) + "_" + std::to_string(i);
    symbols.insert(symbol);
    symbols.insert(VmEntrySymbol(symbol));
    const size_t first_new_function = module.size();
    STRATA_ASSIGN_OR_RETURN(llvm::Function * entry, EmitKernel(km, name, symbol, func));
    EmitVmEntry(km, symbol, func, entry);
    // Verify what this program added, so an error names the program.
    size_t index = 0;
    for (llvm::Function& fn : module) {
      if (index++ < first_new_function || fn.isDeclaration()) continue;
      std::string problems;
      llvm::raw_string_ostream stream(problems);
      if (llvm::verifyFunction(fn, &stream)) {
        return Status(ErrorStatus(StatusCode::kInternal)
                      << "internal error: invalid LLVM IR for tensor program '" << name << "' (function "
                      << fn.getName().str() << "): " << stream.str());
      }
    }
    result.symbols.emplace(name, symbol);
  }
  {
    std::string problems;
    llvm::raw_string_ostream stream(problems);
    if (llvm::verifyModule(module, &stream)) {
      return Status(ErrorStatus(StatusCode::kInternal) << "internal error: invalid LLVM module: " << stream.str());
    }
  }

  OptimizeModule(module, target, options.opt_level);
  if (!options.dump_llvm_ir_path.empty()) {
    std::error_code error;
    llvm::raw_fd_ostream out(options.dump_llvm_ir_path, error, llvm::sys::fs::OF_Text);
    if (error)
      return Status(ErrorStatus() << "cannot write LLVM IR to " << options.dump_llvm_ir_path << ": "
                                  << error.message());
    module.print(out, nullptr);
  }
  STRATA_ASSIGN_OR_RETURN(std::vector<uint8_t> object, EmitObjectFile(module, target));
  if (!diagnostics.first_error.empty())
    return Status(ErrorStatus() << "LLVM code generation failed: " << diagnostics.first_error);
  // Vector math calls (glibc libmvec's _ZGV* variants) need their library.
  std::vector<std::string> libraries;
  for (const llvm::Function& fn : module) {
    if (fn.isDeclaration() && fn.getName().startswith("_ZGV")) {
      libraries.push_back("mvec");
      break;
    }
  }
  STRATA_ASSIGN_OR_RETURN(result.shared_object, LinkSharedObject(object, libraries));
  return result;
}

StatusOr<int> TargetVectorBits(const CodegenOptions& options) {
  STRATA_ASSIGN_OR_RETURN(HostTarget target, CreateHostTarget(options));
  return target.info.vector_bits;
}

}  // namespace strata::codegen
