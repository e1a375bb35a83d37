// Library kernels backed by OpenBLAS, registered by name in the function registry.
//
//   strata.blas.matmul(A: f32[m, k], B: f32[k, n], C: f32[m, n])   C = A @ B (destination passing)
//
// Thread-safety: the kernels are reentrant; OpenBLAS may use its own threads.
#pragma once

#include <cstdint>

#include "support/status.h"
#include "vm/value.h"

namespace strata::kernels {

// Registers every function of this file; called by vm::RegisterBuiltins().
void RegisterBlasFunctions();

// The "strata.blas.matmul" library function (registry calling convention).
Status BlasMatmul(void* context, const vm::Value* const* args, int32_t num_args, vm::Value* out_result);

}  // namespace strata::kernels
