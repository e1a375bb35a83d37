// Helpers of the operator tests: infer a binding's struct info from text IR,
// and get the error a program gives at compile time.
#pragma once

#include <string>
#include <vector>

#include "support/status.h"
#include "vm/value.h"

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

// InferredStructInfo of `y` in OneCallProgram(params, call).
std::string Infer(const std::string& params, const std::string& call);

// The tensor program `name` that Normalize + LegalizeOps generate for the call,
// printed, or "error: <message>".
std::string Kernel(const std::string& params, const std::string& call, const std::string& name);

// Compiles `program` through the default pipeline and runs @main on inline
// tensors ("2x3xf32=1,2,3,4,5,6"); any error on the way is returned.
StatusOr<vm::Value> RunMain(const std::string& program, const std::vector<std::string>& inputs);
// Runs OneCallProgram(params, call) on inline tensors: the one tensor result as
// inline text ("2x3xf32=..."), or "error: <message>".
std::string RunTensorOnce(const std::string& params, const std::string& call, const std::vector<std::string>& inputs);

// The error of the binding `y` of OneCallProgram(params, call), without the
// location prefix every message shares ("no error: <struct info>" if none).
std::string InferError(const std::string& params, const std::string& call);

// Compiles OneCallProgram(params, call) and runs it on inline tensors; returns
// the run-time error, or "ok".
std::string RunError(const std::string& params, const std::string& call, const std::vector<std::string>& inputs);

}  // namespace strata::op::testing
