// The compile driver: source file -> executable bytes.
//
// Reads a text-IR module, runs the lowering pipeline (driver/pipeline.h),
// generates bytecode for the graph functions and native code for the tensor
// programs, and writes one executable. Every step reports user errors as a
// Status; --dump-ir support writes the module after each pass that changed it.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/codegen/llvm/codegen_llvm.h"
#include "compiler/driver/compile_context.h"
#include "compiler/driver/compile_options.h"
#include "compiler/ir/module.h"
#include "compiler/transform/pass.h"
#include "support/status.h"

namespace strata::driver {

// Reads and parses a .sir file; parse errors carry file:line:col.
StatusOr<ir::IRModule> LoadModuleFile(const std::string& path);

// Lowers `module` and returns the executable file's bytes.
// Times the stages around the passes (import, code generation, writing) for
// --time-passes, printed like the passes' times: End(name) prints the time
// since construction or the previous End.
class StageTimer {
 public:
  explicit StageTimer(bool print) : print_(print) {}
  void End(const char* name);

 private:
  bool print_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

StatusOr<std::vector<uint8_t>> Compile(ir::IRModule module, const CompileOptions& options);

// Compile, written to `path` straight from the flatbuffer builder (no second
// in-memory copy of the weights); the error of a failed write names the path.
Status CompileToFile(ir::IRModule module, const CompileOptions& options, const std::string& path);

// Runs the (extended) pipeline only, returning the lowered module.
StatusOr<ir::IRModule> Lower(ir::IRModule module, const CompileOptions& options);
// The same, with the context of a compile already under way.
StatusOr<ir::IRModule> Lower(ir::IRModule module, const CompileOptions& options, const CompileContext& context);

}  // namespace strata::driver
