// BYOC backends: the fusion patterns and the codegen of one external library.
//
// A backend registers its patterns (FuseOpsByPattern groups their matches into
// composite functions named after them) and a codegen. RunCodegen hands the
// codegen one offloaded function at a time (MergeCompositeFunctions' output: a
// graph function whose body calls composite functions), and the codegen says
// what to call instead:
//
//  - per composite (the usual case): one external function per composite call.
//    Each composite call becomes call_dps_packed(symbol, (args..., extra_args...),
//    result), so the tensors between two external calls are ordinary VM tensors
//    that the VM allocates and memory planning sees;
//  - or one external function for the whole offloaded function (a backend that
//    builds one engine for a region): its call site becomes one call_dps_packed.
//
// The symbols are library functions the runtime provides (ir::ExternalModule
// format "library", e.g. oneDNN's strata.dnnl.*), or functions of native code the
// codegen produced and returns as an "elf-shared-object" module, which the
// executable carries next to the compiled tensor programs.
//
// Built-in backends: "dnnl" (oneDNN, compiler/byoc/dnnl/) and "ccodegen" (C source
// calling a sample library, compiler/byoc/ccodegen/, the tutorial in docs/byoc.md).
// A program linking the compiler can register its own before compiling.
//
// Thread-safety: registration and lookup are thread-safe; a registered backend's
// codegen may be called from several threads compiling different modules.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compiler/ir/module.h"
#include "compiler/pattern/pattern_matcher.h"
#include "support/status.h"

namespace strata::byoc {

// One composite call inside an offloaded function.
struct CompositeCall {
  std::string function_name;              // the composite function, e.g. "dnnl_dense_bias_relu_0"
  std::string pattern_name;               // its pattern, e.g. "dnnl.dense_bias_relu"
  graph::Function function;               // its body: the matched operator calls
  const graph::CallNode* call = nullptr;  // the call in the offloaded function's body
};

struct OffloadedFunction {
  std::string name;  // e.g. "dnnl_main_0"
  graph::Function function;
  std::vector<CompositeCall> composites;  // in the body's order
  const ir::IRModule* module = nullptr;
};

struct ExternalCall {
  std::string symbol;
  // Appended after the call's own arguments (attributes such as strides).
  std::vector<graph::Expr> extra_args;
};

struct CodegenResult {
  // Per composite function name; or else:
  std::map<std::string, ExternalCall> composite_calls;
  std::optional<ExternalCall> function_call;
  // The code that provides the symbols (format "library" when the runtime has them).
  ir::ExternalModule module;
};

using CodegenFn = std::function<StatusOr<CodegenResult>(const OffloadedFunction&)>;

struct Backend {
  std::string name;
  // Tried in order; every name must start with "<backend>.".
  std::vector<pattern::FusionPattern> patterns;
  CodegenFn codegen;
  std::string description;  // one line, for --help and errors
};

// Registers `backend`; an error if the name is taken or a pattern name does not
// start with "<name>.".
Status RegisterBackend(Backend backend);
// The backend `name`, or an error listing the registered ones.
StatusOr<Backend> GetBackend(const std::string& name);
std::vector<std::string> RegisteredBackendNames();
// Registers the built-in backends once (the compile driver calls it).
void RegisterBuiltinBackends();

// The registered name of FuseOpsByPattern with `backend`'s patterns:
// "FuseOpsByPattern[dnnl]". The BYOC passes of a backend, in pipeline order, are
// that, "MergeCompositeFunctions" and "RunCodegen".
std::string FusePassName(const std::string& backend);

// Helpers for codegens: the first call of op `op` in a composite's body.
const graph::CallNode* FindOpCall(const graph::Function& composite, const std::string& op);
// An integer or integer-list attribute of an operator call (conv2d's strides,
// padding, ...) as a list; `fallback` when the call has no such attribute.
std::vector<int64_t> IntsAttr(const graph::CallNode& call, const char* key, std::vector<int64_t> fallback);

}  // namespace strata::byoc
