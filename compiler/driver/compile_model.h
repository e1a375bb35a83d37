// The compiler's front door: a model (a file, standard input, or bytes in
// memory; text IR or ONNX) and the user's options in, an executable out.
//
// `strata compile` and the Python package's `strata.compile` both come in
// here, so they read the same inputs, choose the same importer, check targets
// and dimension names the same way, and refuse the same mistakes with the same
// messages. Everything below (Lower, Compile) takes an IRModule and options
// that are already checked.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "compiler/driver/compile.h"
#include "compiler/ir/module.h"
#include "support/status.h"

namespace strata::driver {

enum class ModelFormat {
  kAuto,    // from the file name (.onnx, .sir), else from the contents
  kTextIR,  // Strata's text IR (.sir)
  kOnnx,    // an ONNX model (protobuf)
};

// A model, read into memory (or, for an ONNX file, left on disk to be mapped).
struct ModelSource {
  std::string name;  // what messages call it: the path, "<stdin>", or the caller's name
  ModelFormat format = ModelFormat::kAuto;
  std::string path;  // an ONNX file to map; empty when `contents` holds the model
  std::optional<std::string> contents;
};

// Reads `path` ("-" is standard input). Fails only when the file cannot be
// read (missing, a directory, no permission), with the reason: callers tell
// that kind of failure apart from a model the compiler refuses.
StatusOr<ModelSource> ReadModelSource(const std::string& path, ModelFormat format = ModelFormat::kAuto);
// A model already in memory (ONNX bytes, or text IR), called `name` in messages.
ModelSource ModelSourceFromBytes(std::string contents, std::string name, ModelFormat format = ModelFormat::kAuto);

struct CompileRequest {
  // Bounds of an ONNX model's dynamic dimensions by name: {"batch", {1, 64}}.
  std::map<std::string, std::pair<int64_t, int64_t>> dynamic;
  // Where the model runs: must include "cpu" (what devices cannot run stays
  // there); "npu" offloads what the simulated NPU supports. Empty: the CPU.
  std::vector<std::string> targets;
  // Registered dispatch passes to run before LegalizeOps ("cpu-blas").
  std::vector<std::string> dispatch;
  // Everything else (pass insertions, BYOC, dumps, the CPU to compile for).
  // Its device_targets and the dispatch passes are filled from the fields above.
  CompileOptions options;
};

// The importer for the source's format, then the checks every compile makes:
// targets known and cpu among them, --dynamic only for ONNX, and a module with
// at least one graph function (an executable with no entry point is refused).
StatusOr<ir::IRModule> ImportModel(const ModelSource& source, const CompileRequest& request);

// The options Lower and Compile take, from the request (targets and dispatch
// folded in). Fails on an unknown or incomplete target list.
StatusOr<CompileOptions> ResolveCompileOptions(const CompileRequest& request);

// "where: error: message", the form compilers print: where is the source
// position of the binding the error is about (file:line:col, or the ONNX node)
// when it has one, else `name` (the model's).
std::string ErrorText(const Status& status, const std::string& name);

// ImportModel + Compile, written to `path` ("-" is standard output).
Status CompileModelToFile(const ModelSource& source, const CompileRequest& request, const std::string& path);

}  // namespace strata::driver
