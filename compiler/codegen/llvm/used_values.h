// UsedValues: the variables and buffers a statement reads, in first-use order.
//
// Outlining a region (the body of a parallel loop, or a kernel's body behind its
// argument checks) passes exactly these values into the new function. The order
// is the order of first use, so generated code is deterministic. Buffer shapes
// count as uses: indexing a buffer needs its dimensions.
#pragma once

#include <vector>

#include "compiler/ir/tir.h"

namespace strata::codegen {

struct UsedValues {
  std::vector<const tir::VarNode*> vars;
  std::vector<const tir::BufferNode*> buffers;
};

UsedValues CollectUsedValues(const tir::Stmt& stmt);
UsedValues CollectUsedValues(const tir::PrimExpr& expr);

}  // namespace strata::codegen
