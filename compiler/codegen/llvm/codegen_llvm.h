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

// The CPU kernels are compiled for, resolved once per compile: the host's CPU
// and features, or the ones CodegenOptions name (checked against LLVM's lists).
// Plain data: each thread that compiles makes its own LLVM target machine from
// it (host_target.h), and the passes read the facts they need from it
// (driver/compile_context.h).
struct CpuTarget {
  std::string triple;
  std::string cpu;       // LLVM's name: "skylake-avx512", "x86-64-v3"
  std::string features;  // "+avx2,+fma,..." as LLVM spells them
  int opt_level = 3;
  // The widest vector register the loops should use (512 with AVX-512, 256 with
  // AVX2, 128 otherwise; LLVM's cost model, which knows CPUs that prefer 256-bit
  // vectors despite AVX-512): the layout passes size their blocks by it.
  int vector_bits = 128;
  // The features of abi::kCheckableCpuFeatures this CPU and feature string enable.
  std::vector<std::string> required_cpu_features;
  // glibc's vector math library (libmvec) is available: vectorized loops call
  // its exp/log/pow/tanh/erf (AVX-512 variants on avx512f targets) instead of
  // the scalar libm function once per lane.
  bool vector_math_library = false;
};

// Resolves and checks the target of `options`: an unknown CPU or feature name is
// an error listing the known CPUs.
StatusOr<CpuTarget> ResolveCpuTarget(const CodegenOptions& options);

// Compiles `funcs` (name, program) into one shared object for `target`. Errors
// name the tensor program and what could not be compiled.
StatusOr<CompiledKernels> CompileTensorPrograms(const std::vector<std::pair<std::string, tir::PrimFunc>>& funcs,
                                                const CpuTarget& target, const CodegenOptions& options = {});
// The same, for the target `options` name (resolved here).
StatusOr<CompiledKernels> CompileTensorPrograms(const std::vector<std::pair<std::string, tir::PrimFunc>>& funcs,
                                                const CodegenOptions& options = {});

// The target triple kernels are compiled for by default (this machine's).
std::string DefaultTargetTriple();

}  // namespace strata::codegen
