// The layout of a GEMM weight packed at compile time (PackWeights; the
// `panels` argument of packed_matmul).
//
// A weight that is a constant K x N matrix B (matmul's y; dense's weight is
// its transpose) is stored as panels[t, k, c] = B[k, t * kGemmPanelWidth + c]
// for t < ceil(N / kGemmPanelWidth), zero where t * kGemmPanelWidth + c >= N:
// the column tiles of the GEMM kernel's register tile, each contiguous over
// the whole reduction. The kernel then streams one panel per column tile
// instead of packing it from the weight on every call.
#pragma once

#include <cstdint>

namespace strata::op {

// Columns per panel: the register tile's width (two AVX-512 vectors of f32).
inline constexpr int64_t kGemmPanelWidth = 32;

}  // namespace strata::op
