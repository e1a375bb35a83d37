// PlanMemory: static and symbolic memory planning of graph functions.
//
// Runs after CallTIRRewrite, when every intermediate tensor is an explicit
// `alloc_tensor(shape(...), dtype(D))` binding. For the top-level bindings of each
// graph function:
//
//   - Liveness: a tensor lives from its allocation to the last binding that uses
//     it or any value that may alias it (var-to-var bindings, match_cast, tuples,
//     tuple_getitem, and the result of any call that could return its argument).
//   - Tensors that may reach the function's result are outputs: they are never
//     planned, so no later call can reuse the memory a caller holds.
//   - Static sizes (and symbolic sizes whose variables have bounds) are packed
//     into one arena per block and device by offset: greedy by size, each tensor at the
//     best-fitting gap among the tensors alive at the same time. A bounded size is
//     planned at its upper bound, so one arena serves every call; the bounds are
//     checked at the function's entry.
//   - Symbolic sizes get storage tokens: a token is released when its tensors are
//     dead and reused by a later allocation whose size is provably equal
//     (`n * 64 * 4` and `n * 256`).
//   - Everything else (outputs, allocations inside if branches, shapes that are not
//     a literal shape(...)) stays `alloc_tensor`, served by the VM's pooled
//     allocator (vm/memory_pool.h).
//
// Result, in graph-level memory operators (compiler/analysis/memory_ops.h) that
// only the VM backend lowers to builtins (docs/memory.md):
//   arena: Object = memory.alloc_storage(12288, 64)
//   storage: Object = memory.alloc_storage(shape(n * 512), 64)
//   t: Tensor[(n, 128), f32] = memory.alloc_tensor(storage, 0, shape(n, 128), dtype(f32))
//   _: Tuple[] = memory.check_bound(shape(n), 1, 512, "main: dimension 'n' ...")
//
// Bounds of symbolic variables come from the function attributes
// `bound_<name> = [lo, hi]` (what `strata compile --dynamic name=lo..hi` records).
#pragma once

#include "compiler/ir/module.h"
#include "support/status.h"

namespace strata::transform {

// Alignment of planned storages and of tensor offsets inside an arena.
inline constexpr int64_t kPlanAlignment = 64;

StatusOr<ir::IRModule> PlanMemory(ir::IRModule module);

}  // namespace strata::transform
