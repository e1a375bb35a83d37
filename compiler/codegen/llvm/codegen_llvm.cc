// CompileTensorPrograms: tensor programs -> LLVM modules -> one shared object.
//
// The steps, in order: lower the programs into one module per thread
// (kernel_entry.h), verify it, run the O3 pipeline (LLVM's vectorizer and
// unroller act on the loop schedules), emit an object file in memory, and link
// the objects into one shared object with the system linker (system_linker.h).
// Each module has its own LLVMContext, so threads and concurrent compiles do
// not share state.
#include "compiler/codegen/llvm/codegen_llvm.h"

#include <algorithm>
#include <set>
#include <thread>

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
#include "compiler/codegen/llvm/part_balance.h"
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

// One LLVM module compiled to an object file: programs `indices` of `funcs`,
// exported as `symbols[i]`. Each part has its own context and target machine,
// so parts compile on separate threads.
struct PartResult {
  Status status;
  std::vector<uint8_t> object;
  bool needs_mvec = false;
  std::string llvm_ir;  // when asked for
};

PartResult CompilePart(const std::vector<std::pair<std::string, tir::PrimFunc>>& funcs,
                       const std::vector<size_t>& indices, const std::vector<std::string>& symbols,
                       const CpuTarget& cpu, const CodegenOptions& options, bool defines_globals) {
  PartResult part;
  auto fail = [&](Status status) {
    part.status = std::move(status);
    return std::move(part);
  };
  StatusOr<HostTarget> target = CreateHostTarget(cpu);
  if (!target.ok()) return fail(target.status());
  llvm::LLVMContext context;
  DiagnosticSink diagnostics;
  context.setDiagnosticHandlerCallBack(&DiagnosticSink::Handle, &diagnostics);
  llvm::Module module("strata_kernels", context);
  ConfigureModule(module, *target);
  KernelModule km(module, target->info, defines_globals);
  for (size_t i : indices) {
    const auto& [name, func] = funcs[i];
    const size_t first_new_function = module.size();
    StatusOr<llvm::Function*> entry = EmitKernel(km, name, symbols[i], func);
    if (!entry.ok()) return fail(entry.status());
    EmitVmEntry(km, symbols[i], func, *entry);
    // Verify what this program added, so an error names the program.
    size_t index = 0;
    for (llvm::Function& fn : module) {
      if (index++ < first_new_function || fn.isDeclaration()) continue;
      std::string problems;
      llvm::raw_string_ostream stream(problems);
      if (llvm::verifyFunction(fn, &stream)) {
        return fail(ErrorStatus(StatusCode::kInternal)
                    << "internal error: invalid LLVM IR for tensor program '" << name << "' (function "
                    << fn.getName().str() << "): " << stream.str());
      }
    }
  }
  {
    std::string problems;
    llvm::raw_string_ostream stream(problems);
    if (llvm::verifyModule(module, &stream)) {
      return fail(ErrorStatus(StatusCode::kInternal) << "internal error: invalid LLVM module: " << stream.str());
    }
  }
  OptimizeModule(module, *target);
  if (!options.dump_llvm_ir_path.empty()) {
    llvm::raw_string_ostream out(part.llvm_ir);
    module.print(out, nullptr);
  }
  StatusOr<std::vector<uint8_t>> object = EmitObjectFile(module, *target);
  if (!object.ok()) return fail(object.status());
  if (!diagnostics.first_error.empty()) {
    return fail(ErrorStatus() << "LLVM code generation failed: " << diagnostics.first_error);
  }
  part.object = std::move(object).value();
  // Vector math calls (glibc libmvec's _ZGV* variants) need their library.
  for (const llvm::Function& fn : module) {
    part.needs_mvec = part.needs_mvec || (fn.isDeclaration() && fn.getName().startswith("_ZGV"));
  }
  return part;
}

}  // namespace

StatusOr<CompiledKernels> CompileTensorPrograms(const std::vector<std::pair<std::string, tir::PrimFunc>>& funcs,
                                                const CodegenOptions& options) {
  STRATA_ASSIGN_OR_RETURN(CpuTarget target, ResolveCpuTarget(options));
  return CompileTensorPrograms(funcs, target, options);
}

StatusOr<CompiledKernels> CompileTensorPrograms(const std::vector<std::pair<std::string, tir::PrimFunc>>& funcs,
                                                const CpuTarget& target, const CodegenOptions& options) {
  CompiledKernels result;
  result.target_triple = target.triple;
  result.cpu = target.cpu;
  result.cpu_features = target.required_cpu_features;
  std::set<std::string> taken_symbols;
  std::vector<std::string> symbols;
  for (const auto& [name, func] : funcs) {
    if (!func) return Status(ErrorStatus() << "cannot compile tensor program '" << name << "': it is null");
    if (result.symbols.count(name)) return Status(ErrorStatus() << "tensor program '" << name << "' is given twice");
    // Distinct names may sanitize alike ("a.b", "a_b"); number the later ones.
    std::string symbol = "strata_kernel_" + Sanitize(name);
    // Each kernel exports two names: its symbol and its VM entry's.
    auto taken = [&](const std::string& s) { return taken_symbols.count(s) || taken_symbols.count(VmEntrySymbol(s)); };
    for (int i = 1; taken(symbol); ++i) symbol = "strata_kernel_" + Sanitize(name) + "_" + std::to_string(i);
    taken_symbols.insert(symbol);
    taken_symbols.insert(VmEntrySymbol(symbol));
    symbols.push_back(symbol);
    result.symbols.emplace(name, symbol);
  }

  // The programs are dealt to one module per thread, balanced by their size
  // (LLVM's optimization and code generation dominate compile time and are
  // serial within a module); the objects link into one shared object.
  size_t parts = options.threads > 0 ? static_cast<size_t>(options.threads) : std::thread::hardware_concurrency();
  parts = std::clamp<size_t>(parts, 1, std::max<size_t>(1, funcs.size()));
  std::vector<int64_t> sizes;
  for (const auto& [name, func] : funcs) sizes.push_back(EstimatedCodeSize(func->body));
  const std::vector<std::vector<size_t>> indices = BalanceParts(sizes, parts);
  std::vector<PartResult> results(parts);
  std::vector<std::thread> threads;
  for (size_t p = 1; p < parts; ++p) {
    threads.emplace_back([&, p] { results[p] = CompilePart(funcs, indices[p], symbols, target, options, false); });
  }
  results[0] = CompilePart(funcs, indices[0], symbols, target, options, true);
  for (std::thread& t : threads) t.join();

  std::vector<std::vector<uint8_t>> objects;
  bool needs_mvec = false;
  std::string llvm_ir;
  for (PartResult& part : results) {
    STRATA_RETURN_IF_ERROR(part.status);
    objects.push_back(std::move(part.object));
    needs_mvec = needs_mvec || part.needs_mvec;
    llvm_ir += part.llvm_ir;
  }
  if (!options.dump_llvm_ir_path.empty()) {
    std::error_code error;
    llvm::raw_fd_ostream out(options.dump_llvm_ir_path, error, llvm::sys::fs::OF_Text);
    if (error)
      return Status(ErrorStatus() << "cannot write LLVM IR to " << options.dump_llvm_ir_path << ": "
                                  << error.message());
    out << llvm_ir;
  }
  std::vector<std::string> libraries;
  if (needs_mvec) libraries.push_back("mvec");
  STRATA_ASSIGN_OR_RETURN(result.shared_object, LinkSharedObject(objects, libraries));
  return result;
}

}  // namespace strata::codegen
