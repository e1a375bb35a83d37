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

// One thread's LLVM target machine for a resolved CpuTarget (LLVM's target
// machines are not shared between threads that emit code).
struct HostTarget {
  CpuTarget cpu;
  std::unique_ptr<llvm::TargetMachine> machine;
  TargetInfo info;  // what the kernel emitter reads: cpu, features, vector_bits
};

// A target machine for `cpu` (ResolveCpuTarget, codegen_llvm.h, checked it).
StatusOr<HostTarget> CreateHostTarget(const CpuTarget& cpu);

// Sets the module's triple and data layout to the target's.
void ConfigureModule(llvm::Module& module, const HostTarget& target);

// The standard per-module pipeline at the target's opt_level (0-3), vectorizers included.
void OptimizeModule(llvm::Module& module, const HostTarget& target);

// The module as a relocatable ELF object.
StatusOr<std::vector<uint8_t>> EmitObjectFile(llvm::Module& module, const HostTarget& target);

}  // namespace strata::codegen
