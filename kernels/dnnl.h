// Library kernels backed by oneDNN (v2.6), registered by name in the function registry
// (destination passing: the last argument is the output, allocated by the caller; the
// result stays Null). These are what the BYOC "dnnl" backend calls through call_dps_packed.
// Every tensor is f32, on the CPU, compact row-major.
//
//   strata.dnnl.dense(X: f32[..., k], W: f32[n, k], Y: f32[..., n])                     Y = X @ W^T
//   strata.dnnl.dense_bias(X: f32[..., k], W: f32[n, k], b: f32[n], Y: f32[..., n])     Y = X @ W^T + b
//   strata.dnnl.dense_relu(X: f32[..., k], W: f32[n, k], Y: f32[..., n])                Y = max(X @ W^T, 0)
//   strata.dnnl.dense_bias_relu(X: f32[..., k], W: f32[n, k], b: f32[n], Y: f32[..., n])
//                                                                                       Y = max(X @ W^T + b, 0)
//       X has rank >= 1; its leading dims are one big M. W is used in place (no transposed copy).
//
//   strata.dnnl.matmul(A: f32[..., m, k], B: f32[k, n] or f32[..., k, n], C: f32[..., m, n])
//       C = A @ B, A of rank >= 2. A 2-D B is shared by every batch. A batched B has A's rank and
//       each of its batch dims equals A's or is 1 (broadcast, as numpy.matmul); C has A's batch dims.
//
//   strata.dnnl.conv2d(X: f32[N, C, H, W], Wt: f32[O, C/groups, KH, KW], strides: Shape, padding: Shape,
//                      dilation: Shape, groups: Int, Y: f32[N, O, OH, OW])
//   strata.dnnl.conv2d_bias(X, Wt, b: f32[O], strides, padding, dilation, groups, Y)     + b[o]
//   strata.dnnl.conv2d_relu(X, Wt, strides, padding, dilation, groups, Y)                max(., 0)
//   strata.dnnl.conv2d_bias_relu(X, Wt, b: f32[O], strides, padding, dilation, groups, Y)
//       The conv2d operator of docs/ops/nn.md (NCHW / OIHW cross-correlation, zero padding):
//       strides (sh, sw) > 0, padding (top, left, bottom, right) >= 0, dilation (dh, dw) > 0
//       (a tap every d elements), groups > 0 dividing C and O, C == groups * Wt.shape[1];
//       OH = (H + top + bottom - dh * (KH - 1) - 1) / sh + 1 (floor), OW alike. An input too
//       small for the dilated window (an output dim below 1) is an error.
//
// Empty tensors: an empty output is left untouched (oneDNN is not called); an empty
// reduction (k == 0, or C, H, W, KH or KW == 0 with a non-empty output) gives the bias (or
// zeros), after the ReLU.
//
// Every argument is checked; errors name the function, the argument and the shapes, e.g.
//   strata.dnnl.dense: X (2, 3) has 3 features but W (4, 5) expects 5
// oneDNN failures come back as "<function>: oneDNN: <message>".
//
// Speed: oneDNN primitives are created once per (function, dims, attributes) and kept in
// a process-wide cache (at most 1024; it is emptied when full), so a symbolic batch size
// costs one creation per distinct shape. Convolutions let oneDNN pick its blocked layouts
// and reorder the input, weights and output on every call (about twice as fast as plain
// NCHW for small CNN layers, even with the reorders); no tensor data is cached.
// Thread-safety: the kernels are reentrant. Cached primitives run with a user scratchpad, so
// they may execute on several threads at once; each calling thread keeps a growing
// workspace (scratchpad and reordered tensors) until it exits. oneDNN runs on OpenMP threads.
#pragma once

#include <cstdint>

#include "support/status.h"
#include "vm/value.h"

namespace strata::kernels {

// Registers every function of this file. Linking strata_kernels does it at
// startup; a program that links the archive without whole-archive calls it.
void RegisterDnnlFunctions();

// The library functions (registry calling convention).
Status DnnlDense(void* context, const vm::Value* const* args, int32_t num_args, vm::Value* out_result);
Status DnnlDenseBias(void* context, const vm::Value* const* args, int32_t num_args, vm::Value* out_result);
Status DnnlDenseRelu(void* context, const vm::Value* const* args, int32_t num_args, vm::Value* out_result);
Status DnnlDenseBiasRelu(void* context, const vm::Value* const* args, int32_t num_args, vm::Value* out_result);
Status DnnlMatmul(void* context, const vm::Value* const* args, int32_t num_args, vm::Value* out_result);
Status DnnlConv2d(void* context, const vm::Value* const* args, int32_t num_args, vm::Value* out_result);
Status DnnlConv2dBias(void* context, const vm::Value* const* args, int32_t num_args, vm::Value* out_result);
Status DnnlConv2dRelu(void* context, const vm::Value* const* args, int32_t num_args, vm::Value* out_result);
Status DnnlConv2dBiasRelu(void* context, const vm::Value* const* args, int32_t num_args, vm::Value* out_result);

// The primitive cache, for tests and diagnostics: entries now held, and lookups that
// found a primitive (hits) or created one (misses) since the process started.
struct DnnlCacheStats {
  int64_t entries = 0;
  int64_t hits = 0;
  int64_t misses = 0;
};
DnnlCacheStats GetDnnlCacheStats();

}  // namespace strata::kernels
