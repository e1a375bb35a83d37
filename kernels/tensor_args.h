// Argument checks shared by the library kernels of kernels/ (registry calling
// convention, vm/registry.h): every error names the function and the argument.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>

#include "support/status.h"
#include "vm/value.h"

namespace strata::kernels {

// Argument `index` as a CPU f32 tensor of rank >= min_rank (exactly `exact_rank` when >= 0).
Status GetF32(const char* fn, const vm::Value* const* args, int index, const char* param, int min_rank,
              int exact_rank, vm::Tensor** out_tensor);

// Whether the bytes of two tensors overlap.
bool Overlaps(const vm::Tensor* x, const vm::Tensor* y);

// The destination `out` (called `name`) is writable and overlaps none of
// `inputs` (null entries, such as an absent bias, are skipped).
Status CheckOutput(const char* fn, const char* name, const vm::Tensor* out,
                   std::initializer_list<const vm::Tensor*> inputs, const char* input_names);

int64_t Product(std::span<const int64_t> dims);

}  // namespace strata::kernels
