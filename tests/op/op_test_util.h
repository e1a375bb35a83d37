// Helpers of the operator tests: infer a binding's struct info from text IR,
// and get the error a program gives at compile time.
#pragma once

#include <string>

namespace strata::op::testing {

// Parses `program` (text IR with a graph function @main), runs Normalize, and
// returns the struct info of the binding named `var` in @main as text
// ("Tensor[(n, 4), f32]"), or "error: <message>" when normalization fails.
std::string InferredStructInfo(const std::string& program, const std::string& var);

// Runs the default pipeline (through LegalizeOps, CallTIRRewrite, ...) on
// `program` and returns the error message, or "" when it compiles.
std::string CompileError(const std::string& program);

// A one-binding program: @main with `params` ("x: Tensor[(n, 4), f32], ...")
// binding `y = <call>` and returning it.
std::string OneCallProgram(const std::string& params, const std::string& call);

}  // namespace strata::op::testing
