// How the tensor programs of one compile are dealt to the LLVM modules that
// compile on separate threads (codegen_llvm.cc): by an estimate of what each
// costs LLVM, largest first, each to the module with the least so far.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ir/tir.h"

namespace strata::codegen {

// A program's statements and expressions, each counted once per copy that an
// unrolled loop of constant extent makes of it (a vectorized loop becomes
// vector code of about its scalar body's size). LLVM's time follows it.
int64_t EstimatedCodeSize(const tir::Stmt& body);

// The indices of `sizes` dealt to `parts` lists (LPT: largest first, each to
// the list with the smallest total so far; ties to the lower list), each list
// in increasing order. Dealt round-robin instead, GPT-2's two modules took 4.3
// and 5.9 s (their largest programs, the GEMM kernels, fell to one side).
std::vector<std::vector<size_t>> BalanceParts(const std::vector<int64_t>& sizes, size_t parts);

}  // namespace strata::codegen
