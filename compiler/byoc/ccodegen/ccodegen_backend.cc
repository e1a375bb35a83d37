// The "ccodegen" BYOC backend: C source that calls an external library.
//
// This is the backend docs/byoc.md walks through, the flow a user's C codegen
// for a vendor library takes: the
// composites dense+bias+relu and dense+bias go to the functions
// sample_dense_bias_relu / sample_dense_bias of the sample library
// (kernels/sample_byoc). For each composite the codegen writes one C function with
// the kernel ABI (abi/kernel_abi.h) that checks the tensors it is given and calls
// the library; the C compiler turns the file into a shared object with the
// library linked in, and the executable carries it. Each composite call becomes
// a destination-passing call of its function, so the tensor between two
// composites is allocated by the VM like any other.
#include <filesystem>
#include <string>
#include <vector>

#include "compiler/analysis/struct_info_util.h"
#include "compiler/byoc/backend.h"
#include "compiler/byoc/builtin_backends.h"
#include "compiler/codegen/llvm/codegen_llvm.h"
#include "compiler/codegen/llvm/system_linker.h"

#ifndef STRATA_SOURCE_DIR
#error "STRATA_SOURCE_DIR must name the source tree (for abi/kernel_abi.h and the sample library's header)"
#endif
#ifndef STRATA_SAMPLE_BYOC_LIBRARY
#error "STRATA_SAMPLE_BYOC_LIBRARY must name the sample library archive"
#endif
#ifndef STRATA_CCODEGEN_INSTALL_DIR
#error "STRATA_CCODEGEN_INSTALL_DIR must name where `cmake --install` puts ccodegen's files, relative to the prefix"
#endif

namespace strata::byoc {

using namespace graph;    // NOLINT: patterns over graph expressions
using namespace pattern;  // NOLINT

namespace {

// What the generated C is compiled with: the directory its #includes are found
// in (abi/kernel_abi.h, kernels/sample_byoc/sample_byoc.h) and the sample library.
struct CCodegenFiles {
  std::string include_dir;
  std::string library;
};

// An installed strata finds them under its own prefix (bin/strata ->
// share/strata/ccodegen), so it works wherever the prefix is, with the source
// tree gone; a strata in its build tree uses the source and build trees.
StatusOr<CCodegenFiles> FindCCodegenFiles() {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  std::vector<std::string> looked;
  if (!ec) {
    const std::filesystem::path installed = self.parent_path().parent_path() / STRATA_CCODEGEN_INSTALL_DIR;
    const CCodegenFiles files{(installed / "include").string(),
                              (installed / "lib" / "libstrata_sample_byoc.a").string()};
    if (std::filesystem::exists(installed / "include" / "abi" / "kernel_abi.h", ec) &&
        std::filesystem::exists(files.library, ec)) {
      return files;
    }
    looked.push_back(installed.string());
  }
  const CCodegenFiles built{STRATA_SOURCE_DIR, STRATA_SAMPLE_BYOC_LIBRARY};
  if (std::filesystem::exists(std::filesystem::path(built.include_dir) / "abi" / "kernel_abi.h", ec) &&
      std::filesystem::exists(built.library, ec)) {
    return built;
  }
  looked.push_back(built.include_dir + " and " + built.library);
  ErrorStatus error(StatusCode::kFailedPrecondition);
  error << "ccodegen: cannot find the headers and the sample library the generated C is compiled with; looked in:";
  for (const std::string& place : looked) error << " " << place << ";";
  return error << " install strata (cmake --install) or run it from its build tree";
}

bool IsF32(const Expr& e, int rank) {
  const auto* t = e->struct_info ? e->struct_info.as<TensorStructInfoNode>() : nullptr;
  return t != nullptr && t->dtype == DataType::F32() && t->ndim == rank;
}

// 1. Patterns: what the library can run. x: [m, k], w: [n, k], b: [n].
std::vector<FusionPattern> Patterns() {
  DFPattern x = Wildcard().Where([](const Expr& e) { return IsF32(e, 2); }, "f32 rank 2");
  DFPattern w = Wildcard().Where([](const Expr& e) { return IsF32(e, 2); }, "f32 rank 2");
  DFPattern b = Wildcard().Where([](const Expr& e) { return IsF32(e, 1); }, "f32 rank 1");
  DFPattern dense = IsOp("dense", {x, w});
  DFPattern biased = IsOp("add", {dense, b}) | IsOp("dense", {x, w, b});
  return {
      {"ccodegen.dense_bias_relu", IsOp("relu", {biased}), {}, nullptr},
      {"ccodegen.dense_bias", biased, {}, nullptr},
  };
}

// Which parameter of the composite plays each role (x, w, b).
StatusOr<std::vector<int>> Roles(const CompositeCall& composite) {
  const CallNode* dense = FindOpCall(composite.function, "dense");
  const CallNode* add = FindOpCall(composite.function, "add");
  if (dense == nullptr) return Status(ErrorStatus() << "composite '" << composite.function_name << "' has no dense");
  std::vector<Expr> roles = {dense->args[0], dense->args[1]};
  if (dense->args.size() == 3) {
    roles.push_back(dense->args[2]);
  } else if (add != nullptr) {
    roles.push_back(add->args[1]);
  } else {
    return Status(ErrorStatus() << "composite '" << composite.function_name << "' has no bias");
  }
  std::vector<int> indices;
  for (const Expr& role : roles) {
    int index = -1;
    for (size_t p = 0; p < composite.function->params.size(); ++p) {
      if (composite.function->params[p].get() == role.get()) index = static_cast<int>(p);
    }
    if (index < 0) {
      return Status(ErrorStatus() << "composite '" << composite.function_name
                                  << "': an operand of dense is computed inside the composite, not a parameter");
    }
    indices.push_back(index);
  }
  return indices;
}

constexpr const char* kPrologue = R"(/* Generated by the Strata "ccodegen" BYOC backend. */
#include <stdint.h>
#include <stdio.h>

#include "kernels/sample_byoc/sample_byoc.h"
#include "abi/kernel_abi.h"

const StrataRuntimeApi* strata_runtime_api;
const uint32_t strata_kernel_abi_version = STRATA_KERNEL_ABI_VERSION;

static int32_t fail(const char* message) {
  strata_runtime_api->set_error(message);
  return 1;
}

/* Whether t is a compact row-major f32 tensor of rank ndim. */
static int is_f32(const DLTensor* t, int ndim) {
  if (t->ndim != ndim || t->dtype.code != kDLFloat || t->dtype.bits != 32 || t->dtype.lanes != 1) return 0;
  if (t->strides == NULL) return 1;
  int64_t expected = 1;
  for (int d = ndim - 1; d >= 0; --d) {
    if (t->shape[d] != 1 && t->strides[d] != expected) return 0;
    expected *= t->shape[d];
  }
  return 1;
}

static float* data_of(const DLTensor* t) { return (float*)((char*)t->data + t->byte_offset); }
)";

// 2. Code: one kernel-ABI function per composite.
std::string CompositeFunction(const CompositeCall& composite, const std::vector<int>& roles,
                              const std::string& library_function) {
  const std::string& name = composite.function_name;
  const size_t num_args = composite.function->params.size() + 1;  // + the output
  std::string out_index = std::to_string(num_args - 1);
  std::string c;
  c += "\n/* " + name + " (" + composite.pattern_name + "): calls " + library_function + ". */\n";
  c += "int32_t " + name + "(const StrataKernelArg* args, const int32_t* type_codes, int32_t num_args) {\n";
  c += "  char message[256];\n";
  c += "  if (num_args != " + std::to_string(num_args) + ") return fail(\"" + name + ": expected " +
       std::to_string(num_args) + " arguments\");\n";
  c += "  for (int i = 0; i < num_args; ++i) {\n";
  c += "    if (type_codes[i] != STRATA_ARG_TENSOR) return fail(\"" + name + ": every argument must be a tensor\");\n";
  c += "  }\n";
  c += "  const DLTensor* x = args[" + std::to_string(roles[0]) + "].tensor;\n";
  c += "  const DLTensor* w = args[" + std::to_string(roles[1]) + "].tensor;\n";
  c += "  const DLTensor* b = args[" + std::to_string(roles[2]) + "].tensor;\n";
  c += "  DLTensor* y = args[" + out_index + "].tensor;\n";
  c += "  if (!is_f32(x, 2) || !is_f32(w, 2) || !is_f32(b, 1) || !is_f32(y, 2)) {\n";
  c += "    return fail(\"" + name + ": expects compact f32 tensors x[m, k], w[n, k], b[n] and out[m, n]\");\n";
  c += "  }\n";
  c += "  const int64_t m = x->shape[0], k = x->shape[1], n = w->shape[0];\n";
  c += "  if (w->shape[1] != k || b->shape[0] != n || y->shape[0] != m || y->shape[1] != n) {\n";
  c += "    snprintf(message, sizeof(message), \"" + name +
       ": shapes disagree: x[%lld, %lld], w[%lld, %lld], b[%lld], out[%lld, %lld]\", (long long)m, (long long)k,\n";
  c += "             (long long)w->shape[0], (long long)w->shape[1], (long long)b->shape[0], (long long)y->shape[0],\n";
  c += "             (long long)y->shape[1]);\n";
  c += "    return fail(message);\n";
  c += "  }\n";
  c += "  " + library_function + "(data_of(x), data_of(w), data_of(b), data_of(y), m, k, n);\n";
  c += "  return 0;\n";
  c += "}\n";
  return c;
}

StatusOr<CodegenResult> Codegen(const OffloadedFunction& offloaded) {
  CodegenResult result;
  std::string source = kPrologue;
  for (const CompositeCall& composite : offloaded.composites) {
    std::string library_function;
    if (composite.pattern_name == "ccodegen.dense_bias_relu") {
      library_function = "sample_dense_bias_relu";
    } else if (composite.pattern_name == "ccodegen.dense_bias") {
      library_function = "sample_dense_bias";
    } else {
      return Status(ErrorStatus() << "no library function for pattern '" << composite.pattern_name << "'");
    }
    STRATA_ASSIGN_OR_RETURN(std::vector<int> roles, Roles(composite));
    source += CompositeFunction(composite, roles, library_function);
    result.composite_calls[composite.function_name] = ExternalCall{composite.function_name, {}};
    result.module.symbols.push_back(composite.function_name);
  }
  // 3. Compile, with the library linked in: the executable carries everything.
  STRATA_ASSIGN_OR_RETURN(CCodegenFiles files, FindCCodegenFiles());
  STRATA_ASSIGN_OR_RETURN(result.module.code,
                          codegen::CompileCSharedObject(source, {files.include_dir}, {files.library}));
  result.module.format = "elf-shared-object";
  result.module.target_triple = codegen::DefaultTargetTriple();
  return result;
}

}  // namespace

Backend CCodegenBackend() {
  Backend backend;
  backend.name = "ccodegen";
  backend.description = "tutorial backend: C code calling the sample library kernels/sample_byoc (dense+bias(+relu))";
  backend.patterns = Patterns();
  backend.codegen = Codegen;
  return backend;
}

}  // namespace strata::byoc
