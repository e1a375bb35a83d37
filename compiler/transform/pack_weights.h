// PackWeights: constant GEMM weights packed at compile time.
//
//   matmul(x, W)        W: K x N constant      ->  packed_matmul(x, P, n=N)
//   dense(x, W[, b])    W: N x K constant      ->  packed_matmul(x, P[, b], n=N)
//
// P holds W (dense's transposed) in the layout of compiler/op/gemm_panels.h:
// column panels of kGemmPanelWidth, each contiguous over the reduction, the
// last one zero-padded. packed_matmul's kernel reads its panels in place, so a
// constant weight is no longer re-packed (dense's: transposed) on every call;
// with few rows it streams each panel once per row.
//
// It fires on f32 calls whose weight is a constant (inline, or a variable
// bound to one) with constant dimensions, x having a known rank (at least 2 for
// matmul: a 1-D x is a vector product). LegalizeOps runs it as its first step,
// after target dispatch and BYOC, so calls they took over are not touched. A
// weight used by several calls is packed once. A weight constant that nothing
// else uses is dropped with the call's old argument.
//
// Tied embeddings: a constant table E read by take(E, ids, axis=0) that is
// also a packed weight (dense(x, E), or matmul(x, T) with T equal to E's
// transpose, compared element by element) is looked up in the panels,
//   take(E, ids, axis=0)  ->  take_panel_columns(P, ids, n=N)
// so the executable holds it once (GPT-2: 154 MB less).
#pragma once

#include <set>
#include <string>

#include "compiler/ir/module.h"
#include "support/status.h"

namespace strata::transform {

// `except`: operators (matmul, dense) to leave alone.
StatusOr<ir::IRModule> PackWeights(ir::IRModule module, const std::set<std::string>& except = {});

}  // namespace strata::transform
