// strata compile: a model (text IR or ONNX) -> an executable file, through the
// compiler's front door (compiler/driver/compile_model.h).
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <unistd.h>

#include "apps/commands.h"
#include "apps/option_parsing.h"
#include "compiler/driver/compile_model.h"

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

// The directory `path` would be written in exists and is writable: checked
// before a compile that may take minutes.
Status CheckWritable(const std::string& path) {
  if (path == "-") return Status::Ok();
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (parent.empty()) parent = ".";
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return ErrorStatus() << "cannot write '" << path << "': it is a directory; give a file name, e.g. -o model.stx";
  }
  if (!std::filesystem::is_directory(parent, ec)) {
    return ErrorStatus() << "cannot write '" << path << "': the directory '" << parent.string() << "' does not exist";
  }
  if (access(parent.c_str(), W_OK) != 0) {
    return ErrorStatus() << "cannot write '" << path << "': " << std::strerror(errno);
  }
  return Status::Ok();
}

}  // namespace

int RunCompileCommand(const std::vector<std::string>& args) {
  const std::string usage = "strata compile MODEL.onnx|MODEL.sir|- -o OUT.stx|- [options]";
  po::options_description options(
      "Compiles a model (ONNX or Strata's text IR; - reads standard input) into one executable file.\n"
      "The kernels are compiled for this machine's CPU unless --cpu says otherwise: an executable built on an\n"
      "AVX-512 machine is refused on a CPU without AVX-512. For a cluster of mixed machines, compile with\n"
      "--cpu x86-64-v3 (AVX2, FMA: Intel since 2013, AMD since 2015) or the oldest CPU you deploy to, or with\n"
      "--cpu x86-64-v4,x86-64-v3 for kernels of both levels, of which each machine loads the best it runs\n"
      "(docs/cli.md).\n\n"
      "compile options");
  options.add_options()("help,h", "show this help")("input", po::value<std::string>(),
                                                    "the model to compile: text IR (.sir) or ONNX (.onnx); - is stdin")(
      "dynamic", po::value<std::vector<std::string>>(), "NAME=LO..HI: bounds of a dynamic dimension of an ONNX model")(
      "output,o", po::value<std::string>(), "the executable to write (.stx); - is standard output")(
      "cpu", po::value<std::string>(),
      "compile the tensor programs for this CPU (LLVM name, e.g. x86-64-v3, znver3), or for each of a list, best "
      "first (x86-64-v4,x86-64-v3); default: this machine")(
      "cpu-features", po::value<std::string>(),
      "LLVM feature string for the compiled kernels, e.g. +avx2,+fma,-avx512f")(
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
      "dump-llvm-ir", po::value<std::string>(), "write the optimized LLVM IR of the tensor programs to this file");
  po::positional_options_description positional;
  positional.add("input", 1);
  po::variables_map vm;
  int exit_code = 0;
  if (!ParseCommandLine("compile", usage, args, options, positional, &vm, &exit_code)) return exit_code;
  if (!vm.count("input")) {
    std::fprintf(stderr, "strata compile: no model given\nusage: %s\n", usage.c_str());
    return kExitUsage;
  }
  if (!vm.count("output")) {
    std::fprintf(stderr, "strata compile: no output given: add -o OUT.stx (or -o - for standard output)\n");
    return kExitUsage;
  }

  driver::CompileRequest request;
  driver::CompileOptions& compile_options = request.options;
  if (vm.count("dump-ir")) compile_options.dump_ir_dir = vm["dump-ir"].as<std::string>();
  if (vm.count("dump-llvm-ir")) compile_options.codegen.dump_llvm_ir_path = vm["dump-llvm-ir"].as<std::string>();
  compile_options.print_pass_timing = vm.count("time-passes") != 0;
  if (vm.count("cpu")) compile_options.codegen.cpu = vm["cpu"].as<std::string>();
  if (vm.count("cpu-features")) compile_options.codegen.features = vm["cpu-features"].as<std::string>();
  if (vm.count("dispatch")) request.dispatch = vm["dispatch"].as<std::vector<std::string>>();
  if (vm.count("byoc")) compile_options.byoc_backends = vm["byoc"].as<std::vector<std::string>>();
  if (vm.count("target")) {
    const std::string targets = vm["target"].as<std::string>();
    for (size_t start = 0; start <= targets.size();) {
      size_t end = targets.find(',', start);
      if (end == std::string::npos) end = targets.size();
      request.targets.push_back(targets.substr(start, end - start));
      start = end + 1;
    }
  }
  if (vm.count("tir-library")) compile_options.tir_library_paths = vm["tir-library"].as<std::vector<std::string>>();
  for (const char* key : {"pass-before", "pass-after"}) {
    if (!vm.count(key)) continue;
    for (const std::string& text : vm[key].as<std::vector<std::string>>()) {
      std::pair<std::string, std::string> insertion;
      if (!SplitPassInsertion(text, &insertion)) {
        std::fprintf(stderr, "strata compile: --%s expects ANCHOR:PASS, got '%s'\n", key, text.c_str());
        return kExitUsage;
      }
      (std::string(key) == "pass-before" ? compile_options.passes_before : compile_options.passes_after)
          .push_back(insertion);
    }
  }
  if (vm.count("no-memory-plan")) compile_options.plan_memory = false;
  if (vm.count("no-fuse")) compile_options.fuse = false;
  if (vm.count("no-nchwc")) compile_options.nchwc_layout = false;
  if (vm.count("dynamic")) {
    for (const std::string& text : vm["dynamic"].as<std::vector<std::string>>()) {
      std::pair<std::string, std::pair<int64_t, int64_t>> bound;
      if (!ParseDimBound(text, &bound)) {
        std::fprintf(stderr, "strata compile: --dynamic expects NAME=LO..HI with 0 <= LO <= HI, got '%s'\n",
                     text.c_str());
        return kExitUsage;
      }
      request.dynamic[bound.first] = bound.second;
    }
  }
  // Targets and dispatch passes are part of the command line: a mistake there is bad usage.
  if (StatusOr<driver::CompileOptions> resolved = driver::ResolveCompileOptions(request); !resolved.ok()) {
    std::fprintf(stderr, "strata compile: %s\n", resolved.status().message().c_str());
    return kExitUsage;
  }
  const std::string input = vm["input"].as<std::string>();
  const std::string output = vm["output"].as<std::string>();
  if (const Status writable = CheckWritable(output); !writable.ok()) {
    std::fprintf(stderr, "strata compile: %s\n", writable.message().c_str());
    return kExitFile;
  }
  for (const std::string& library : compile_options.tir_library_paths) {
    if (access(library.c_str(), R_OK) != 0) {
      std::fprintf(stderr, "strata compile: --tir-library: cannot open '%s': %s\n", library.c_str(),
                   std::strerror(errno));
      return kExitFile;
    }
  }
  StatusOr<driver::ModelSource> source = driver::ReadModelSource(input);
  if (!source.ok()) {
    std::fprintf(stderr, "strata compile: %s\n", source.status().message().c_str());
    return source.status().code() == StatusCode::kNotFound || source.status().code() == StatusCode::kFailedPrecondition
               ? kExitFile
               : ExitCodeFor(source.status());
  }
  const Status compiled = driver::CompileModelToFile(*source, request, output);
  if (!compiled.ok()) {
    std::fprintf(stderr, "%s\n", driver::ErrorText(compiled, source->name).c_str());
    return ExitCodeFor(compiled);
  }
  return kExitOk;
}

}  // namespace strata::apps
