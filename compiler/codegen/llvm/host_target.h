// HostTarget: the LLVM target machine for the CPU kernels run on, the
// optimization pipeline, and object-file emission.
//
// Kernels are compiled for the machine that compiles them unless CodegenOptions
// name a CPU: the triple from sys::getDefaultTargetTriple, the CPU and features
// from the host, position-independent code (the object becomes a shared
// object), no fast-math.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include "compiler/codegen/llvm/codegen_llvm.h"
#include "compiler/codegen/llvm/kernel_module.h"
#include "support/status.h"

namespace strata::codegen {

struct HostTarget {
  std::unique_ptr<llvm::TargetMachine> machine;
  std::string triple;
  TargetInfo info;
  // The features of abi::kCheckableCpuFeatures this CPU and feature string enable.
  std::vector<std::string> required_cpu_features;
  // glibc's vector math library (libmvec) is available: vectorized loops call
  // its exp/log/pow/tanh/erf/sin/cos (AVX-512 variants on avx512f targets)
  // instead of the scalar libm function once per lane.
  bool vector_math_library = false;
};

StatusOr<HostTarget> CreateHostTarget(const CodegenOptions& options);

// Sets the module's triple and data layout to the target's.
void ConfigureModule(llvm::Module& module, const HostTarget& target);

// The standard per-module pipeline at `opt_level` (0-3), vectorizers included.
void OptimizeModule(llvm::Module& module, const HostTarget& target, int opt_level);

// The module as a relocatable ELF object.
StatusOr<std::vector<uint8_t>> EmitObjectFile(llvm::Module& module, const HostTarget& target);

}  // namespace strata::codegen
