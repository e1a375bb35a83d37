// LLVM code generation of tensor programs for the host CPU.
//
// All tensor programs of a module become one position-independent shared object,
// returned as bytes to be embedded in the executable (serialization NativeModule).
// The object is linked at compile time by the system linker; the runtime needs no
// toolchain to load it (vm/native_module.h). Each kernel follows the calling
// convention of abi/kernel_abi.h.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ir/tir.h"
#include "support/status.h"

namespace strata::codegen {

struct CodegenOptions {
  // Empty: the host CPU and its features (getHostCPUName / getHostCPUFeatures).
  std::string cpu;
  std::string features;
  int opt_level = 3;
  // When non-empty, also write the LLVM IR (after optimization) to this path.
  std::string dump_llvm_ir_path;
  // Threads compiling the programs (each its own LLVM module); 0: one per
  // hardware thread, never more than there are programs.
  int threads = 0;
};

struct CompiledKernels {
  std::vector<uint8_t> shared_object;
  std::string target_triple;
  std::string cpu;
  // Extensions the code may use that a runtime can check (vm/cpu_features.h).
  std::vector<std::string> cpu_features;
  // Tensor program name -> exported symbol of its entry point.
  std::map<std::string, std::string> symbols;
};

// Compiles `funcs` (name, program) into one shared object. Errors name the
// tensor program and what could not be compiled.
StatusOr<CompiledKernels> CompileTensorPrograms(const std::vector<std::pair<std::string, tir::PrimFunc>>& funcs,
                                                const CodegenOptions& options = {});

// The target triple kernels are compiled for by default (this machine's).
std::string DefaultTargetTriple();

// The width in bits of the widest vector register the kernels compiled with
// `options` use (512 with AVX-512, 256 with AVX2, 128 otherwise): the layout
// passes size their blocks by it.
StatusOr<int> TargetVectorBits(const CodegenOptions& options);

}  // namespace strata::codegen
