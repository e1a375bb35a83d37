// Dynamic batching, as Triton does it: requests to a model whose inputs and
// outputs all lead with one symbolic batch dimension are concatenated along it,
// run once, and the outputs split back by each request's rows.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "support/status.h"
#include "vm/executable.h"
#include "vm/value.h"

namespace strata::server {

// Ok when `f` can be batched: every parameter and every output a tensor whose
// first dimension is the same symbolic name (the batch), per its signature.
// The error says which parameter or output is not.
Status CheckBatchable(const vm::VMFunction& f);

// The rows (first dimension) a request contributes: that of its first argument.
int64_t BatchRows(std::span<const vm::Value> args);

// True when two requests' arguments can be concatenated: same dtypes, same
// ranks, equal dimensions past the first.
bool Concatenable(std::span<const vm::Value> a, std::span<const vm::Value> b);

// Each parameter's tensors of the requests, concatenated along dimension 0.
StatusOr<std::vector<vm::Value>> ConcatenateArguments(std::span<const std::vector<vm::Value>* const> requests);

// The batched result split into one result per request, by `rows`.
StatusOr<std::vector<vm::Value>> SplitResult(const vm::Value& result, std::span<const int64_t> rows);

}  // namespace strata::server
