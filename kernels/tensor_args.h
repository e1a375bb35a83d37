// Argument checks shared by the library kernels of kernels/ (registry calling
// convention, vm/registry.h): every error names the function and the argument.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>

#include "support/status.h"
#include "vm/registry.h"
#include "vm/value.h"

namespace strata::kernels {

using vm::CheckArgCount;

// Argument `index` as a CPU f32 tensor of rank >= min_rank (exactly `exact_rank` when >= 0).
Status GetF32(const char* fn, const vm::Value* const* args, int index, const char* param, int min_rank, int exact_rank,
              vm::Tensor** out_tensor);

// Whether the bytes of two tensors overlap.
bool Overlaps(const vm::Tensor* x, const vm::Tensor* y);

// The destination `out` (called `name`) is writable and overlaps none of
// `inputs` (null entries, such as an absent bias, are skipped).
Status CheckOutput(const char* fn, const char* name, const vm::Tensor* out,
                   std::initializer_list<const vm::Tensor*> inputs, const char* input_names);

int64_t Product(std::span<const int64_t> dims);

// The checked operands of a dense call (X[..., k], W[n, k], optional bias[n], out[..., n]).
struct DenseArgs {
  vm::Tensor *x = nullptr, *w = nullptr, *bias = nullptr, *out = nullptr;
  int64_t m = 0, n = 0, k = 0;  // m: the product of X's leading dims
};
// Checks (X, W[, bias], out) in that order; `bias_name` / `out_name` are the
// names errors use for them.
Status GetDenseArgs(const char* fn, const vm::Value* const* args, int32_t num_args, bool with_bias,
                    const char* bias_name, const char* out_name, DenseArgs* out_args);

// The checked operands of a matmul: A[..., m, k], B[..., k, n], C (rank >= 2),
// with the inner dimensions agreeing. Batch dims are the caller's to check.
struct MatmulArgs {
  vm::Tensor *a = nullptr, *b = nullptr, *c = nullptr;
  int64_t m = 0, n = 0, k = 0;
};
Status GetMatmulArgs(const char* fn, const vm::Value* const* args, int32_t num_args, MatmulArgs* out_args);
// C is [batch..., m, n] (batch: A's leading dims), writable, and overlaps neither A nor B.
Status CheckMatmulOutput(const char* fn, const MatmulArgs& mm, std::span<const int64_t> batch);

}  // namespace strata::kernels
