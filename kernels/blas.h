// Library kernels backed by OpenBLAS, registered by name in the function registry
// (destination passing: the last argument is the output, allocated by the caller).
//
//   strata.blas.matmul(A: f32[..., m, k], B: f32[k, n] or f32[..., k, n], C: f32[..., m, n])
//       C = A @ B. With a 2-D B the leading dims of A are one big M (one GEMM);
//       a batched B must have exactly A's batch dims (one GEMM per batch).
//   strata.blas.dense(X: f32[..., k], W: f32[n, k], C: f32[..., n])            C = X @ W^T
//   strata.blas.dense_bias(X: f32[..., k], W: f32[n, k], b: f32[n], C: f32[..., n])  C = X @ W^T + b
//
// These are what the cpu-blas dispatch pass (compiler/transform/cpu_blas_dispatch.h)
// calls. Every shape is checked; errors name the function, the argument and the shapes.
// Thread-safety: the kernels are reentrant; OpenBLAS may use its own threads.
#pragma once

#include <cstdint>

#include "support/status.h"
#include "vm/value.h"

namespace strata::kernels {

// Registers every function of this file. Linking strata_kernels does it at
// startup; a program that links the archive without whole-archive calls it.
void RegisterBlasFunctions();

// The library functions (registry calling convention).
Status BlasMatmul(void* context, const vm::Value* const* args, int32_t num_args, vm::Value* out_result);
Status BlasDense(void* context, const vm::Value* const* args, int32_t num_args, vm::Value* out_result);
Status BlasDenseBias(void* context, const vm::Value* const* args, int32_t num_args, vm::Value* out_result);

}  // namespace strata::kernels
