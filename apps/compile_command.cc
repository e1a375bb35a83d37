// strata compile: text IR -> executable file.
#include <cstdio>

#include "apps/commands.h"
#include "apps/option_parsing.h"
#include "compiler/driver/compile.h"
#include "compiler/frontend/onnx/onnx_importer.h"

namespace strata::apps {
namespace {

// "batch=1..64" -> {"batch", {1, 64}}.
bool ParseDimBound(const std::string& text, std::pair<std::string, std::pair<int64_t, int64_t>>* out) {
  const size_t eq = text.find('='), dots = text.find("..");
  if (eq == std::string::npos || eq == 0 || dots == std::string::npos || dots < eq) return false;
  try {
    size_t used_lo = 0, used_hi = 0;
    const std::string lo = text.substr(eq + 1, dots - eq - 1), hi = text.substr(dots + 2);
    const int64_t a = std::stoll(lo, &used_lo), b = std::stoll(hi, &used_hi);
    if (used_lo != lo.size() || used_hi != hi.size() || a < 0 || b < a) return false;
    *out = {text.substr(0, eq), {a, b}};
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

// "ANCHOR:PASS" -> {ANCHOR, PASS}.
bool SplitPassInsertion(const std::string& text, std::pair<std::string, std::string>* out) {
  size_t colon = text.find(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) return false;
  *out = {text.substr(0, colon), text.substr(colon + 1)};
  return true;
}

}  // namespace

int RunCompileCommand(const std::vector<std::string>& args) {
  po::options_description options("compile options");
  options.add_options()("help,h", "show this help")("input", po::value<std::string>()->required(),
                                                    "the model to compile: text IR (.sir) or ONNX (.onnx)")(
      "dynamic", po::value<std::vector<std::string>>(), "NAME=LO..HI: bounds of a dynamic dimension of an ONNX model")(
      "output,o", po::value<std::string>()->required(), "the executable to write (.stx)")(
      "dump-ir", po::value<std::string>(), "write the module after every pass that changed it into this directory")(
      "pass-before", po::value<std::vector<std::string>>(), "ANCHOR:PASS, run registered PASS before ANCHOR")(
      "pass-after", po::value<std::vector<std::string>>(), "ANCHOR:PASS, run registered PASS after ANCHOR")(
      "dispatch", po::value<std::vector<std::string>>(),
      "run a registered dispatch pass before LegalizeOps (e.g. cpu-blas); same as --pass-before=LegalizeOps:NAME")(
      "target", po::value<std::string>(),
      "where the model runs: cpu (the default) or cpu,npu (offload what the simulated NPU supports; docs/devices.md)")(
      "byoc", po::value<std::vector<std::string>>(),
      "offload what the BYOC backend NAME supports (dnnl, ccodegen): FuseOpsByPattern, MergeCompositeFunctions "
      "and RunCodegen run after DispatchTIR")(
      "tir-library", po::value<std::vector<std::string>>(),
      "add the tensor programs of this .sir file (hand-written, with attrs {dispatch = \"op\"})")(
      "time-passes", "print the wall time of every pass")(
      "no-fuse", "skip FuseOps and FuseTIR: every operator is its own kernel (docs/pipeline.md)")(
      "no-nchwc",
      "keep convolutions in NCHW: skip ConvertToNchwc, the blocked layout LegalizeOps puts convolutions with constant "
      "weights in (docs/ops/nchwc.md)")(
      "no-memory-plan", "skip PlanMemory: every tensor is its own allocation from the VM's pool (docs/memory.md)")(
      "cpu", po::value<std::string>(),
      "compile the tensor programs for this CPU (LLVM name, e.g. x86-64-v3, znver3); default: this machine")(
      "cpu-features", po::value<std::string>(),
      "LLVM feature string for the compiled kernels, e.g. +avx2,+fma,-avx512f")(
      "dump-llvm-ir", po::value<std::string>(), "write the optimized LLVM IR of the tensor programs to this file");
  po::positional_options_description positional;
  positional.add("input", 1);
  po::variables_map vm;
  int exit_code = 0;
  if (!ParseCommandLine("compile", args, options, positional, &vm, &exit_code)) return exit_code;

  driver::CompileOptions compile_options;
  if (vm.count("dump-ir")) compile_options.dump_ir_dir = vm["dump-ir"].as<std::string>();
  if (vm.count("dump-llvm-ir")) compile_options.codegen.dump_llvm_ir_path = vm["dump-llvm-ir"].as<std::string>();
  compile_options.print_pass_timing = vm.count("time-passes") != 0;
  if (vm.count("cpu")) compile_options.codegen.cpu = vm["cpu"].as<std::string>();
  if (vm.count("cpu-features")) compile_options.codegen.features = vm["cpu-features"].as<std::string>();
  if (vm.count("dispatch")) {
    for (const std::string& name : vm["dispatch"].as<std::vector<std::string>>()) {
      compile_options.passes_before.emplace_back("LegalizeOps", name);
    }
  }
  if (vm.count("byoc")) compile_options.byoc_backends = vm["byoc"].as<std::vector<std::string>>();
  if (vm.count("target")) {
    const std::string targets = vm["target"].as<std::string>();
    bool cpu = false;
    for (size_t start = 0; start <= targets.size();) {
      size_t end = targets.find(',', start);
      if (end == std::string::npos) end = targets.size();
      const std::string target = targets.substr(start, end - start);
      if (target == "cpu") {
        cpu = true;
      } else if (target == "npu") {
        compile_options.device_targets.push_back(target);
      } else {
        std::fprintf(stderr, "strata compile: --target: unknown target '%s' in '%s' (known: cpu, npu)\n",
                     target.c_str(), targets.c_str());
        return 2;
      }
      start = end + 1;
    }
    if (!cpu) {
      std::fprintf(stderr,
                   "strata compile: --target must include cpu (what the devices cannot run stays there), "
                   "e.g. --target cpu,npu\n");
      return 2;
    }
  }
  if (vm.count("tir-library")) compile_options.tir_library_paths = vm["tir-library"].as<std::vector<std::string>>();
  for (const char* key : {"pass-before", "pass-after"}) {
    if (!vm.count(key)) continue;
    for (const std::string& text : vm[key].as<std::vector<std::string>>()) {
      std::pair<std::string, std::string> insertion;
      if (!SplitPassInsertion(text, &insertion)) {
        std::fprintf(stderr, "strata compile: --%s expects ANCHOR:PASS, got '%s'\n", key, text.c_str());
        return 2;
      }
      (std::string(key) == "pass-before" ? compile_options.passes_before : compile_options.passes_after)
          .push_back(insertion);
    }
  }

  if (vm.count("no-memory-plan")) compile_options.plan_memory = false;
  if (vm.count("no-fuse")) compile_options.fuse = false;
  if (vm.count("no-nchwc")) compile_options.nchwc_layout = false;
  const std::string input = vm["input"].as<std::string>();
  const std::string output = vm["output"].as<std::string>();
  frontend::OnnxImportOptions import_options;
  if (vm.count("dynamic")) {
    for (const std::string& text : vm["dynamic"].as<std::vector<std::string>>()) {
      std::pair<std::string, std::pair<int64_t, int64_t>> bound;
      if (!ParseDimBound(text, &bound)) {
        std::fprintf(stderr, "strata compile: --dynamic expects NAME=LO..HI with 0 <= LO <= HI, got '%s'\n",
                     text.c_str());
        return 2;
      }
      import_options.dim_bounds[bound.first] = bound.second;
    }
  }
  const bool onnx = input.size() > 5 && input.compare(input.size() - 5, 5, ".onnx") == 0;
  if (!onnx && !import_options.dim_bounds.empty()) {
    std::fprintf(stderr, "strata compile: --dynamic applies to ONNX models (.onnx)\n");
    return 2;
  }
  driver::StageTimer timer(compile_options.print_pass_timing);  // --time-passes
  StatusOr<ir::IRModule> module =
      onnx ? frontend::ImportOnnxFile(input, import_options) : driver::LoadModuleFile(input);
  timer.End(onnx ? "ImportOnnx" : "Parse");
  if (!module.ok()) {
    std::fprintf(stderr, "%s\n", module.status().message().c_str());
    return 1;
  }
  Status compiled = driver::CompileToFile(std::move(module).value(), compile_options, output);
  if (!compiled.ok()) {
    // A binding's error carries where the binding was written (or the model node it came from).
    const SourceLocation* at = compiled.location();
    const std::string where = at != nullptr ? at->Text() : input;
    std::fprintf(stderr, "%s: error: %s\n", where.c_str(), compiled.message().c_str());
    return 1;
  }
  return 0;
}

}  // namespace strata::apps
