// libFuzzer target: the ONNX importer (strata compile model.onnx) followed by
// the compile pipeline (every pass, not LLVM's code generation: what the passes
// accept, codegen has compiled in the tests). Any input may be rejected with a
// Status; none may crash, hang or exhaust memory.
#include <cstdint>
#include <string>

#include "compiler/driver/compile.h"
#include "compiler/driver/pipeline.h"
#include "compiler/frontend/onnx/onnx_importer.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  strata::driver::RegisterCompilerPasses();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace strata;
  StatusOr<ir::IRModule> module =
      frontend::ImportOnnxBytes(std::string(reinterpret_cast<const char*>(data), size), "fuzz.onnx");
  if (!module.ok()) return 0;
  (void)driver::Lower(std::move(module).value(), driver::CompileOptions{});
  return 0;
}
