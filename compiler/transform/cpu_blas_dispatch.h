// cpu-blas: a target dispatch pass (it runs before LegalizeOps) that sends large
// f32 matrix products to OpenBLAS through destination-passing library calls:
//
//   y = matmul(x, w)        ->  y = call_dps_packed("strata.blas.matmul", (x, w), Tensor[...])
//   y = dense(x, w)         ->  y = call_dps_packed("strata.blas.dense", (x, w), Tensor[...])
//   y = dense(x, w, b)      ->  y = call_dps_packed("strata.blas.dense_bias", (x, w, b), Tensor[...])
//
// (kernels/blas.h). A matmul is taken when both operands are f32, x has rank
// >= 2 and w is 2-D or has exactly x's batch dimensions (provably). A call is
// taken only when its M * N * K is at least `min_macs`, counting each symbolic
// dimension as 1 (a lower bound): small products stay with the generated
// kernels, which win there. Everything else is left for LegalizeOps; the pass
// composes with any other dispatch pass.
#pragma once

#include <cstdint>

#include "compiler/ir/module.h"
#include "support/status.h"

namespace strata::transform {

struct CpuBlasOptions {
  int64_t min_macs = 32 * 32 * 32;
};

StatusOr<ir::IRModule> CpuBlasDispatch(ir::IRModule module, const CpuBlasOptions& options = {});

}  // namespace strata::transform
