// Compile driver: parse -> pipeline -> VM codegen + LLVM codegen -> executable.
#include "compiler/driver/compile.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>

#include "compiler/backend/vm/vm_codegen.h"
#include "compiler/byoc/backend.h"
#include "compiler/codegen/llvm/codegen_llvm.h"
#include "compiler/driver/pipeline.h"
#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"
#include "compiler/transform/dispatch_tir.h"
#include "serialization/writer.h"

namespace strata::driver {
namespace {

Status WriteTextFile(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out) return ErrorStatus() << "cannot write '" << path.string() << "'";
  return Status::Ok();
}

// The large constants of --dump-ir files: written once into DIR/constants.bin
// (shared by every dump of the run) and referenced as file("constants.bin", offset),
// so dumps of a real model stay readable and still parse back.
class DumpConstants {
 public:
  static constexpr int64_t kMaxInlineBytes = 1024;

  explicit DumpConstants(std::filesystem::path dir) : path_(std::move(dir) / "constants.bin") {}

  ir::PrintOptions Options() {
    ir::PrintOptions options;
    options.max_inline_constant_bytes = kMaxInlineBytes;
    options.external_constant = [this](const graph::HostTensor& data) { return Reference(data); };
    return options;
  }
  const Status& status() const { return status_; }

 private:
  std::string Reference(const graph::HostTensor& data) {
    auto it = offsets_.find(&data);
    if (it == offsets_.end()) {
      std::ofstream out(path_, std::ios::binary | std::ios::app);
      out.write(reinterpret_cast<const char*>(data.bytes.data()), static_cast<std::streamsize>(data.bytes.size()));
      if (!out && status_.ok()) status_ = ErrorStatus() << "cannot write '" << path_.string() << "'";
      it = offsets_.emplace(&data, size_).first;
      size_ += data.bytes.size();
    }
    return "file(\"constants.bin\", " + std::to_string(it->second) + ")";
  }

  std::filesystem::path path_;
  std::map<const graph::HostTensor*, uint64_t> offsets_;
  uint64_t size_ = 0;
  Status status_;
};

StatusOr<transform::Pipeline> BuildPipeline(const CompileOptions& options) {
  RegisterCompilerPasses();
  std::vector<std::string> pass_names = DefaultPipelinePassNames();
  if (!options.plan_memory) std::erase(pass_names, "PlanMemory");
  if (!options.fold_constants) std::erase(pass_names, "FoldConstants");
  if (!options.fuse) {
    std::erase(pass_names, "FuseOps");
    std::erase(pass_names, "FuseTIR");
  }
  STRATA_ASSIGN_OR_RETURN(transform::Pipeline pipeline, transform::Pipeline::FromNames(pass_names));
  std::vector<std::string> backends = options.byoc_backends;
  for (const std::string& target : options.device_targets) {
    if (target != "npu") {
      return ErrorStatus() << "unknown device target '" << target << "' (known: npu, the simulated NPU)";
    }
    backends.push_back("sim_npu");
  }
  if (!options.device_targets.empty()) {
    STRATA_ASSIGN_OR_RETURN(transform::Pass place, transform::GetPass("PlaceOnDevices"));
    STRATA_RETURN_IF_ERROR(pipeline.InsertAfter("CallTIRRewrite", std::move(place)));
  }
  if (!backends.empty()) {
    std::vector<std::string> names;
    for (const std::string& backend : backends) {
      STRATA_RETURN_IF_ERROR(byoc::GetBackend(backend).status());
      names.push_back(byoc::FusePassName(backend));
    }
    names.push_back("MergeCompositeFunctions");
    names.push_back("RunCodegen");
    // Inserted after DispatchTIR in reverse, so they run in order.
    for (auto it = names.rbegin(); it != names.rend(); ++it) {
      STRATA_ASSIGN_OR_RETURN(transform::Pass pass, transform::GetPass(*it));
      STRATA_RETURN_IF_ERROR(pipeline.InsertAfter("DispatchTIR", std::move(pass)));
    }
  }
  for (const auto& [anchor, name] : options.passes_before) {
    STRATA_ASSIGN_OR_RETURN(transform::Pass pass, transform::GetPass(name));
    STRATA_RETURN_IF_ERROR(pipeline.InsertBefore(anchor, std::move(pass)));
  }
  for (const auto& [anchor, name] : options.passes_after) {
    STRATA_ASSIGN_OR_RETURN(transform::Pass pass, transform::GetPass(name));
    STRATA_RETURN_IF_ERROR(pipeline.InsertAfter(anchor, std::move(pass)));
  }
  return pipeline;
}

}  // namespace

StatusOr<ir::IRModule> LoadModuleFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return ErrorStatus(StatusCode::kNotFound) << "cannot open '" << path << "'";
  std::stringstream text;
  text << in.rdbuf();
  return ir::ParseModule(text.str(), path);
}

StatusOr<ir::IRModule> Lower(ir::IRModule module, const CompileOptions& options) {
  STRATA_ASSIGN_OR_RETURN(CompileContext context, MakeCompileContext(options));
  return Lower(std::move(module), options, context);
}

StatusOr<ir::IRModule> Lower(ir::IRModule module, const CompileOptions& options, const CompileContext& context) {
  for (const std::string& path : options.tir_library_paths) {
    STRATA_ASSIGN_OR_RETURN(ir::IRModule library, LoadModuleFile(path));
    Status merged = transform::MergeTensorPrograms(library, &module);
    if (!merged.ok()) return Status(merged).WithContext(path + ": ");
  }
  STRATA_ASSIGN_OR_RETURN(transform::Pipeline pipeline, BuildPipeline(options));
  Status dump_status;
  std::shared_ptr<DumpConstants> dump_constants;
  if (!options.dump_ir_dir.empty()) {
    std::filesystem::path dir(options.dump_ir_dir);
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) return ErrorStatus() << "--dump-ir: cannot create '" << dir.string() << "': " << ec.message();
    std::filesystem::remove(dir / "constants.bin", ec);
    dump_constants = std::make_shared<DumpConstants>(dir);
    STRATA_RETURN_IF_ERROR(WriteTextFile(dir / "00-Input.sir", ir::PrintModule(module, dump_constants->Options())));
    pipeline.SetAfterPassCallback([dir, &dump_status, dump_constants](size_t index, const std::string& name,
                                                                      const ir::IRModule& m, bool changed) {
      if (!changed || !dump_status.ok()) return;
      char prefix[16];
      std::snprintf(prefix, sizeof(prefix), "%02zu-", index + 1);
      dump_status = WriteTextFile(dir / (prefix + name + ".sir"), ir::PrintModule(m, dump_constants->Options()));
    });
  }
  STRATA_ASSIGN_OR_RETURN(ir::IRModule lowered, pipeline.Run(std::move(module), context.passes));
  STRATA_RETURN_IF_ERROR(dump_status);
  if (dump_constants) STRATA_RETURN_IF_ERROR(dump_constants->status());
  if (options.print_pass_timing) {
    for (const transform::PassTiming& t : pipeline.timings()) {
      std::fprintf(stderr, "%-24s %9.3f ms\n", t.name.c_str(), t.milliseconds);
    }
  }
  return lowered;
}

void StageTimer::End(const char* name) {
  const auto now = std::chrono::steady_clock::now();
  if (print_) {
    std::fprintf(stderr, "%-24s %9.3f ms\n", name, std::chrono::duration<double, std::milli>(now - start_).count());
  }
  start_ = now;
}

namespace {

// Everything but the writing: the executable as a spec.
StatusOr<serialization::ExecutableSpec> CompileToSpec(ir::IRModule module, const CompileOptions& options,
                                                      StageTimer& timer) {
  STRATA_ASSIGN_OR_RETURN(CompileContext context, MakeCompileContext(options));
  STRATA_ASSIGN_OR_RETURN(ir::IRModule lowered, Lower(std::move(module), options, context));
  timer = StageTimer(options.print_pass_timing);
  STRATA_ASSIGN_OR_RETURN(serialization::ExecutableSpec spec, backend::CodegenVM(lowered));
  timer.End("CodegenVM");

  std::vector<std::pair<std::string, tir::PrimFunc>> programs;
  for (const auto& [name, func] : lowered.functions()) {
    if (const auto* prim = std::get_if<tir::PrimFunc>(&func)) programs.emplace_back(name, *prim);
  }
  // One module per CPU, best first: the first is native_modules[0], which the
  // functions name; the others are its alternatives (NativeModule.alternative_of),
  // written after the BYOC modules because VM codegen numbered those from 1.
  std::vector<serialization::NativeModuleSpec> alternatives;
  if (!programs.empty()) {
    for (size_t level = 0; level < context.cpus.size(); ++level) {
      STRATA_ASSIGN_OR_RETURN(codegen::CompiledKernels kernels,
                              codegen::CompileTensorPrograms(programs, context.cpus[level], options.codegen));
      timer.End(level == 0 ? "CodegenLLVM" : "CodegenLLVM (alternative)");
      serialization::NativeModuleSpec native;
      native.target_triple = kernels.target_triple;
      native.cpu = kernels.cpu;
      native.cpu_features = kernels.cpu_features;
      native.code = std::move(kernels.shared_object);
      native.alternative_of = level == 0 ? -1 : 0;
      if (level == 0) {
        for (serialization::FunctionSpec& f : spec.functions) {
          if (f.kind != serialization::FunctionKindSpec::kCompiledKernel || !f.backend.empty()) continue;
          auto it = kernels.symbols.find(f.symbol);
          if (it == kernels.symbols.end()) {
            return ErrorStatus(StatusCode::kInternal)
                   << "internal: no compiled kernel for tensor program '" << f.symbol << "'";
          }
          f.symbol = it->second;
          f.module_index = 0;
        }
      }
      for (const auto& [name, symbol] : kernels.symbols) native.symbols.push_back(symbol);
      (level == 0 ? spec.native_modules : alternatives).push_back(std::move(native));
    }
  }
  // Code generated by BYOC backends, in the order VM codegen numbered it.
  for (const ir::ExternalModule& external : lowered.external_modules()) {
    if (external.format == "library" || external.format == "device") continue;
    serialization::NativeModuleSpec native;
    native.format = external.format;
    native.target_triple = external.target_triple;
    native.code = external.code;
    native.symbols = external.symbols;
    native.cpu_features = external.cpu_features;
    native.backend = external.backend;
    spec.native_modules.push_back(std::move(native));
  }
  for (serialization::NativeModuleSpec& native : alternatives) spec.native_modules.push_back(std::move(native));
  return spec;
}

}  // namespace

StatusOr<std::vector<uint8_t>> Compile(ir::IRModule module, const CompileOptions& options) {
  StageTimer timer(options.print_pass_timing);
  STRATA_ASSIGN_OR_RETURN(serialization::ExecutableSpec spec, CompileToSpec(std::move(module), options, timer));
  std::vector<uint8_t> bytes = serialization::WriteExecutable(spec);
  timer.End("WriteExecutable");
  return bytes;
}

Status CompileToFile(ir::IRModule module, const CompileOptions& options, const std::string& path) {
  StageTimer timer(options.print_pass_timing);
  STRATA_ASSIGN_OR_RETURN(serialization::ExecutableSpec spec, CompileToSpec(std::move(module), options, timer));
  STRATA_RETURN_IF_ERROR(serialization::WriteExecutableFile(spec, path));
  timer.End("WriteExecutableFile");
  return Status::Ok();
}

}  // namespace strata::driver
