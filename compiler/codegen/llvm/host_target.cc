// HostTarget: see host_target.h.
#include "compiler/codegen/llvm/host_target.h"

#include <algorithm>
#include <mutex>

#include <llvm/ADT/StringMap.h>
#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/Analysis/TargetTransformInfo.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/CodeGen.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/TargetParser/Triple.h>
#include <llvm/TargetParser/X86TargetParser.h>

#include "abi/cpu_feature_names.h"
#include "compiler/codegen/llvm/system_linker.h"

namespace strata::codegen {
namespace {

void InitializeLlvmTargetsOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
}

// "+avx2,+fma,-avx512f,..." in a stable (sorted) order, so the generated code and
// the function attributes do not depend on hash-map iteration order.
std::string HostFeatures() {
  llvm::StringMap<bool> features;
  if (!llvm::sys::getHostCPUFeatures(features)) return "";
  std::vector<std::string> items;
  for (const auto& entry : features) items.push_back((entry.second ? "+" : "-") + entry.first().str());
  std::sort(items.begin(), items.end(),
            [](const std::string& a, const std::string& b) { return a.substr(1) < b.substr(1); });
  std::string joined;
  for (const std::string& item : items) {
    if (!joined.empty()) joined += ",";
    joined += item;
  }
  return joined;
}

// The vector register width LLVM's cost model uses for this CPU (it accounts for
// CPUs that prefer 256-bit vectors despite having AVX-512).
int VectorRegisterBits(llvm::TargetMachine& machine, const TargetInfo& info) {
  llvm::LLVMContext context;
  llvm::Module module("probe", context);
  module.setDataLayout(machine.createDataLayout());
  auto* fn = llvm::Function::Create(llvm::FunctionType::get(llvm::Type::getVoidTy(context), false),
                                    llvm::GlobalValue::ExternalLinkage, "probe", module);
  if (!info.cpu.empty()) fn->addFnAttr("target-cpu", info.cpu);
  if (!info.features.empty()) fn->addFnAttr("target-features", info.features);
  llvm::TargetTransformInfo tti = machine.getTargetTransformInfo(*fn);
  auto bits = tti.getRegisterBitWidth(llvm::TargetTransformInfo::RGK_FixedWidthVector).getFixedValue();
  return bits >= 128 ? static_cast<int>(bits) : 128;
}

// "x86-64, x86-64-v2, ...": the CPU names LLVM accepts, for the error message.
std::string KnownCpuNames(const llvm::Triple& triple) {
  if (triple.getArch() != llvm::Triple::x86_64) return "see llc-16 -mcpu=help";
  llvm::SmallVector<llvm::StringRef, 128> names;
  llvm::X86::fillValidCPUArchList(names, /*Only64Bit=*/true);
  std::string text;
  for (llvm::StringRef name : names) text += (text.empty() ? "" : ", ") + name.str();
  return text;
}

// LLVM has no public list of feature names; a name is known when enabling and
// disabling it give different feature bits. (LLVM prints a warning of its own
// for an unknown name before this error.)
bool IsKnownFeature(const llvm::Target& llvm_target, const std::string& triple, llvm::StringRef name) {
  std::unique_ptr<llvm::MCSubtargetInfo> on(llvm_target.createMCSubtargetInfo(triple, "", ("+" + name).str()));
  std::unique_ptr<llvm::MCSubtargetInfo> off(llvm_target.createMCSubtargetInfo(triple, "", ("-" + name).str()));
  return on && off && on->getFeatureBits() != off->getFeatureBits();
}

// LLVM only warns about an unknown CPU or feature, and then may abort, so the
// names are checked before a target machine is made.
Status CheckCpuAndFeatureNames(const llvm::Target& llvm_target, const std::string& triple,
                               const CodegenOptions& options) {
  std::unique_ptr<llvm::MCSubtargetInfo> generic(llvm_target.createMCSubtargetInfo(triple, "", ""));
  if (!generic) return Status(ErrorStatus() << "LLVM has no subtarget information for " << triple);
  if (!options.cpu.empty() && !generic->isCPUStringValid(options.cpu)) {
    return Status(ErrorStatus() << "unknown CPU '" << options.cpu << "' for " << triple
                                << " (known: " << KnownCpuNames(llvm::Triple(triple)) << ")");
  }
  llvm::SmallVector<llvm::StringRef, 16> items;
  llvm::StringRef(options.features).split(items, ',', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef item : items) {
    item = item.trim();
    if (item.empty()) continue;
    if (item[0] != '+' && item[0] != '-') {
      return Status(ErrorStatus() << "CPU feature '" << item.str() << "' must start with + (enable) or - (disable)");
    }
    if (!IsKnownFeature(llvm_target, triple, item.drop_front())) {
      return Status(ErrorStatus() << "unknown CPU feature '" << item.drop_front().str() << "' for " << triple);
    }
  }
  return Status::Ok();
}

// Which of the features a runtime can check the code may use. The target
// machine's subtarget is computed from the CPU alone; the feature string
// (host features or --cpu-features) can add or remove some, so apply it too.
std::vector<std::string> EnabledCheckableFeatures(llvm::TargetMachine& machine, const TargetInfo& info) {
  llvm::Triple triple(machine.getTargetTriple());
  if (triple.getArch() != llvm::Triple::x86_64) return {};
  std::unique_ptr<llvm::MCSubtargetInfo> subtarget(
      machine.getTarget().createMCSubtargetInfo(triple.str(), info.cpu, info.features));
  std::vector<std::string> enabled;
  for (std::string_view feature : abi::kCheckableCpuFeatures) {
    if (subtarget->checkFeatures("+" + std::string(feature))) enabled.emplace_back(feature);
  }
  return enabled;
}

llvm::CodeGenOpt::Level CodeGenLevel(int opt_level) {
  switch (opt_level) {
    case 0: return llvm::CodeGenOpt::None;
    case 1: return llvm::CodeGenOpt::Less;
    case 2: return llvm::CodeGenOpt::Default;
    default: return llvm::CodeGenOpt::Aggressive;
  }
}

}  // namespace

namespace {

const llvm::Target* LookupTarget(const std::string& triple, std::string* error) {
  InitializeLlvmTargetsOnce();
  return llvm::TargetRegistry::lookupTarget(triple, *error);
}

std::unique_ptr<llvm::TargetMachine> MakeMachine(const llvm::Target& llvm_target, const CpuTarget& cpu) {
  llvm::TargetOptions target_options;  // IEEE floating point: no fast-math flags
  return std::unique_ptr<llvm::TargetMachine>(llvm_target.createTargetMachine(
      cpu.triple, cpu.cpu, cpu.features, target_options, llvm::Reloc::PIC_, std::nullopt, CodeGenLevel(cpu.opt_level)));
}

}  // namespace

StatusOr<CpuTarget> ResolveCpuTarget(const CodegenOptions& options) {
  CpuTarget cpu;
  cpu.triple = llvm::sys::getDefaultTargetTriple();
  cpu.opt_level = options.opt_level;
  std::string error;
  const llvm::Target* llvm_target = LookupTarget(cpu.triple, &error);
  if (llvm_target == nullptr) {
    return Status(ErrorStatus() << "LLVM has no target for host triple " << cpu.triple << ": " << error);
  }
  // An explicit CPU brings its own features; the host CPU gets the host's.
  cpu.cpu = options.cpu.empty() ? llvm::sys::getHostCPUName().str() : options.cpu;
  cpu.features = !options.features.empty() ? options.features : options.cpu.empty() ? HostFeatures() : "";
  // LLVM only warns about unknown names (and may then abort), so check them first.
  STRATA_RETURN_IF_ERROR(CheckCpuAndFeatureNames(*llvm_target, cpu.triple, options));
  std::unique_ptr<llvm::TargetMachine> probe = MakeMachine(*llvm_target, cpu);
  if (!probe) {
    return Status(ErrorStatus() << "cannot create an LLVM target machine for " << cpu.triple << " (cpu " << cpu.cpu
                                << ")");
  }
  const TargetInfo info{cpu.cpu, cpu.features, 128};
  cpu.vector_bits = VectorRegisterBits(*probe, info);
  cpu.required_cpu_features = EnabledCheckableFeatures(*probe, info);
  llvm::Triple triple(cpu.triple);
  cpu.vector_math_library = triple.getArch() == llvm::Triple::x86_64 && triple.isOSLinux() &&
                            triple.isGNUEnvironment() && LinkerFindsLibrary("mvec");
  return cpu;
}

StatusOr<HostTarget> CreateHostTarget(const CpuTarget& cpu) {
  std::string error;
  const llvm::Target* llvm_target = LookupTarget(cpu.triple, &error);
  if (llvm_target == nullptr) {
    return Status(ErrorStatus() << "LLVM has no target for triple " << cpu.triple << ": " << error);
  }
  HostTarget target;
  target.cpu = cpu;
  target.machine = MakeMachine(*llvm_target, cpu);
  if (!target.machine) {
    return Status(ErrorStatus() << "cannot create an LLVM target machine for " << cpu.triple << " (cpu " << cpu.cpu
                                << ")");
  }
  target.info = TargetInfo{cpu.cpu, cpu.features, cpu.vector_bits};
  return target;
}

void ConfigureModule(llvm::Module& module, const HostTarget& target) {
  module.setTargetTriple(target.cpu.triple);
  module.setDataLayout(target.machine->createDataLayout());
  module.setPICLevel(llvm::PICLevel::BigPIC);
}

namespace {

// libmvec variants LLVM 16's preset table lacks: tanh and erf at every width
// (glibc 2.35+), and the AVX-512 ("e") variants, which only a target with
// avx512f may call. Without them a vectorized loop over exp on AVX-512 calls
// scalar expf once per lane.
std::vector<llvm::VecDesc> ExtraVectorMathFunctions(const HostTarget& target) {
  using llvm::ElementCount;
  std::vector<llvm::VecDesc> fns = {
      {"tanhf", "_ZGVbN4v_tanhf", ElementCount::getFixed(4)}, {"tanhf", "_ZGVdN8v_tanhf", ElementCount::getFixed(8)},
      {"erff", "_ZGVbN4v_erff", ElementCount::getFixed(4)},   {"erff", "_ZGVdN8v_erff", ElementCount::getFixed(8)},
      {"tanh", "_ZGVbN2v_tanh", ElementCount::getFixed(2)},   {"tanh", "_ZGVdN4v_tanh", ElementCount::getFixed(4)},
      {"erf", "_ZGVbN2v_erf", ElementCount::getFixed(2)},     {"erf", "_ZGVdN4v_erf", ElementCount::getFixed(4)},
  };
  const auto& features = target.cpu.required_cpu_features;
  if (std::find(features.begin(), features.end(), "avx512f") != features.end()) {
    const llvm::VecDesc avx512[] = {
        {"expf", "_ZGVeN16v_expf", ElementCount::getFixed(16)},
        {"llvm.exp.f32", "_ZGVeN16v_expf", ElementCount::getFixed(16)},
        {"logf", "_ZGVeN16v_logf", ElementCount::getFixed(16)},
        {"llvm.log.f32", "_ZGVeN16v_logf", ElementCount::getFixed(16)},
        {"powf", "_ZGVeN16vv_powf", ElementCount::getFixed(16)},
        {"llvm.pow.f32", "_ZGVeN16vv_powf", ElementCount::getFixed(16)},
        {"tanhf", "_ZGVeN16v_tanhf", ElementCount::getFixed(16)},
        {"erff", "_ZGVeN16v_erff", ElementCount::getFixed(16)},
        {"exp", "_ZGVeN8v_exp", ElementCount::getFixed(8)},
        {"llvm.exp.f64", "_ZGVeN8v_exp", ElementCount::getFixed(8)},
        {"log", "_ZGVeN8v_log", ElementCount::getFixed(8)},
        {"llvm.log.f64", "_ZGVeN8v_log", ElementCount::getFixed(8)},
        {"pow", "_ZGVeN8vv_pow", ElementCount::getFixed(8)},
        {"llvm.pow.f64", "_ZGVeN8vv_pow", ElementCount::getFixed(8)},
        {"tanh", "_ZGVeN8v_tanh", ElementCount::getFixed(8)},
        {"erf", "_ZGVeN8v_erf", ElementCount::getFixed(8)},
    };
    fns.insert(fns.end(), std::begin(avx512), std::end(avx512));
  }
  return fns;
}

}  // namespace

void OptimizeModule(llvm::Module& module, const HostTarget& target) {
  const int opt_level = target.cpu.opt_level;
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions tuning;
  tuning.LoopVectorization = opt_level >= 2;
  tuning.SLPVectorization = opt_level >= 2;
  tuning.LoopUnrolling = opt_level >= 1;
  tuning.LoopInterleaving = opt_level >= 2;
  llvm::PassBuilder builder(target.machine.get(), tuning);
  // Registered before the defaults, so this library info (with libmvec's vector
  // variants when available) is the one every pass sees.
  llvm::Triple triple(module.getTargetTriple());
  llvm::TargetLibraryInfoImpl library_info(triple);
  if (target.cpu.vector_math_library) {
    library_info.addVectorizableFunctionsFromVecLib(llvm::TargetLibraryInfoImpl::LIBMVEC_X86, triple);
    library_info.addVectorizableFunctions(ExtraVectorMathFunctions(target));
  }
  fam.registerPass([&] { return llvm::TargetLibraryAnalysis(library_info); });
  builder.registerModuleAnalyses(mam);
  builder.registerCGSCCAnalyses(cgam);
  builder.registerFunctionAnalyses(fam);
  builder.registerLoopAnalyses(lam);
  builder.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::OptimizationLevel level = opt_level <= 0   ? llvm::OptimizationLevel::O0
                                  : opt_level == 1 ? llvm::OptimizationLevel::O1
                                  : opt_level == 2 ? llvm::OptimizationLevel::O2
                                                   : llvm::OptimizationLevel::O3;
  llvm::ModulePassManager passes = level == llvm::OptimizationLevel::O0 ? builder.buildO0DefaultPipeline(level)
                                                                        : builder.buildPerModuleDefaultPipeline(level);
  passes.run(module, mam);
}

StatusOr<std::vector<uint8_t>> EmitObjectFile(llvm::Module& module, const HostTarget& target) {
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream stream(buffer);
  llvm::legacy::PassManager passes;
  if (target.machine->addPassesToEmitFile(passes, stream, nullptr, llvm::CGFT_ObjectFile)) {
    return Status(ErrorStatus() << "the LLVM target for " << target.cpu.triple << " cannot emit object files");
  }
  passes.run(module);
  return std::vector<uint8_t>(buffer.begin(), buffer.end());
}

std::string DefaultTargetTriple() { return llvm::sys::getDefaultTargetTriple(); }

}  // namespace strata::codegen
