// A readable description of a loaded executable, for `strata inspect` (see executable_description.h).
#include "vm/executable_description.h"

#include <algorithm>
#include <iomanip>
#include <sstream>
#include <string>
#include <vector>

#include "support/suggest.h"
#include "vm/bytecode/disassembler.h"
#include "vm/cpu_features.h"
#include "vm/executable.h"

namespace strata::vm {
namespace {

std::string Quote(const std::string& text, size_t max = 60) {
  std::string out = "\"";
  for (size_t i = 0; i < text.size() && i < max; ++i) {
    char c = text[i];
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += '?';
    } else {
      out += c;
    }
  }
  if (text.size() > max) out += "...";
  return out + "\"";
}

std::string DescribeConstant(const Value& v) {
  std::ostringstream out;
  switch (v.kind()) {
    case ValueKind::kTensor: {
      const Tensor* t = v.tensor();
      out << "tensor " << t->dtype().ToString() << " " << ShapeToString(t->shape()) << ", " << t->num_bytes()
          << " bytes";
      break;
    }
    case ValueKind::kShape: out << "shape " << ShapeToString(v.shape()); break;
    case ValueKind::kInt: out << "int " << v.int_value(); break;
    case ValueKind::kFloat: out << "float " << std::setprecision(17) << v.float_value(); break;
    case ValueKind::kString: out << "string " << Quote(v.string(), 200); break;
    case ValueKind::kDataType: out << "dtype " << v.data_type().ToString(); break;
    default: out << v.Describe(); break;
  }
  return out.str();
}

}  // namespace

std::string DisassembleFunction(const Executable& exe, const VMFunction& f) {
  std::vector<std::string> names;
  names.reserve(exe.functions().size());
  for (const VMFunction& g : exe.functions()) names.push_back(g.name);
  return DisassembleCode(f.code, names);
}

namespace {

// The compiler's memory plan of one function: storages with the tensors placed in
// them, what was left to the pooled allocator, and the bounds the plan relies on.
// The model's own names of the inputs and outputs (format 1.6), when they are not
// just the parameter names and "output0", "output1", ..: what a server calls them.
void DescribeModelNames(const VMFunction& f, std::ostringstream& out) {
  auto list = [&](const char* what, const std::vector<std::string>& names) {
    out << "      " << what << ":";
    for (size_t i = 0; i < names.size(); ++i) out << (i ? ", " : " ") << Quote(names[i]);
    out << "\n";
  };
  if (f.input_names != f.param_names) list("model input names", f.input_names);
  if (f.output_names != DefaultOutputNames(f.output_names.size())) list("model output names", f.output_names);
}

void DescribeMemoryPlan(const serialization::MemoryPlanSpec& plan, std::ostringstream& out) {
  if (plan.empty()) return;
  out << "      memory plan: " << plan.storages.size() << " storage" << (plan.storages.size() == 1 ? "" : "s") << ", "
      << plan.tensors.size() << " tensor" << (plan.tensors.size() == 1 ? "" : "s") << " planned, " << plan.pooled.size()
      << " pooled\n";
  for (size_t s = 0; s < plan.storages.size(); ++s) {
    const serialization::PlannedStorageSpec& storage = plan.storages[s];
    out << "        " << storage.name << "  "
        << (storage.static_bytes >= 0 ? std::to_string(storage.static_bytes) : storage.size) << " bytes"
        << (storage.static_bytes >= 0 ? "  (static arena)" : "  (symbolic, reused)")
        << (storage.device.empty() ? "" : "  on " + storage.device) << "\n";
    for (const serialization::PlannedTensorSpec& t : plan.tensors) {
      if (t.storage != static_cast<int32_t>(s)) continue;
      out << "          +" << t.offset << "  " << t.name << ": " << t.type << "\n";
    }
  }
  for (const std::string& p : plan.pooled) out << "        pooled  " << p << "\n";
  for (const std::string& b : plan.bounds) out << "        bound checked at run time: " << b << "\n";
}

}  // namespace

std::string DescribeExecutable(const Executable& exe) {
  std::ostringstream out;
  out << "Strata executable, format " << exe.format_major() << "." << exe.format_minor() << ", producer "
      << Quote(exe.producer()) << ", " << exe.bytes().size() << " bytes\n";
  out << "checksums: "
      << (!exe.has_checksums()       ? "none (written before format 1.5)"
          : exe.checksums_verified() ? "XXH3-64 over every byte, verified"
                                     : "XXH3-64 over every byte, not verified (only the native code was)")
      << "\n";
  out << "entry points: " << exe.EntryPointNames() << "\n";

  // What BYOC backends took over, before the details.
  size_t offloaded = 0;
  for (const VMFunction& f : exe.functions()) offloaded += f.backend.empty() ? 0 : 1;
  if (offloaded != 0) {
    out << "\noffloaded to BYOC backends (" << offloaded << "):\n";
    for (size_t i = 0; i < exe.functions().size(); ++i) {
      const VMFunction& f = exe.functions()[i];
      if (f.backend.empty()) continue;
      out << "  " << f.backend << "  " << f.name << "  ";
      if (f.kind == FunctionKind::kCompiledKernel) {
        out << "generated code in native_modules[" << f.module_index << "]\n";
      } else {
        out << "runtime library function\n";
      }
    }
  }

  if (!exe.devices().empty()) {
    out << "\ndevices (" << exe.devices().size() << "):\n";
    for (size_t i = 0; i < exe.devices().size(); ++i) {
      const serialization::DeviceRequirementSpec& d = exe.devices()[i];
      size_t kernels = 0;
      for (const VMFunction& f : exe.functions()) {
        kernels += f.kind == FunctionKind::kDevice && f.device_index == static_cast<int32_t>(i) ? 1 : 0;
      }
      out << "  [" << i << "] " << d.name << (d.options.empty() ? "" : "  options " + Quote(d.options)) << "  "
          << kernels << " device kernel" << (kernels == 1 ? "" : "s") << "\n";
    }
  }

  out << "\nfunctions (" << exe.functions().size() << "):\n";
  for (size_t i = 0; i < exe.functions().size(); ++i) {
    const VMFunction& f = exe.functions()[i];
    out << "  [" << i << "] " << f.name << "  " << FunctionKindName(f.kind);
    switch (f.kind) {
      case FunctionKind::kBytecode: {
        if (f.has_signature) {
          out << "  (";
          for (size_t p = 0; p < f.param_names.size(); ++p) {
            out << (p ? ", " : "") << f.param_names[p] << ": " << f.param_signatures[p].text;
          }
          out << ") -> " << f.result_signature.text;
        } else {
          out << "  params (";
          for (size_t p = 0; p < f.param_names.size(); ++p) out << (p ? ", " : "") << f.param_names[p];
          out << ")";
        }
        out << "  registers " << f.num_registers << "  code " << f.code.size() << " words\n";
        DescribeModelNames(f, out);
        DescribeMemoryPlan(f.memory_plan, out);
        out << DisassembleFunction(exe, f);
        break;
      }
      case FunctionKind::kCompiledKernel:
        out << "  native_modules[" << f.module_index << "] symbol " << f.symbol;
        out << (f.backend.empty() ? "" : "  backend " + f.backend) << "\n";
        break;
      case FunctionKind::kLibrary: out << (f.backend.empty() ? "" : "  backend " + f.backend) << "\n"; break;
      case FunctionKind::kDevice: {
        const auto& devices = exe.devices();
        out << "  " << f.symbol << " on device "
            << (static_cast<size_t>(f.device_index) < devices.size() ? devices[f.device_index].name : "?") << "\n";
        break;
      }
    }
  }

  out << "\nconstants (" << exe.constants().size() << "):\n";
  for (size_t i = 0; i < exe.constants().size(); ++i) {
    out << "  c" << i << "  " << DescribeConstant(exe.constants()[i]) << "\n";
  }

  out << "\nnative modules (" << exe.native_modules().size() << "):\n";
  for (size_t i = 0; i < exe.native_modules().size(); ++i) {
    const NativeModuleInfo& m = exe.native_modules()[i];
    out << "  [" << i << "] " << m.format << "  triple " << (m.target_triple.empty() ? "?" : m.target_triple)
        << "  cpu " << (m.cpu.empty() ? "?" : m.cpu) << "  " << m.code_size << " bytes"
        << (m.backend.empty() ? "" : "  generated by BYOC backend " + m.backend)
        << (m.alternative_of < 0 ? "" : "  alternative of [" + std::to_string(m.alternative_of) + "]") << "\n";
    out << "      symbols (" << m.symbols.size() << "):";
    for (const std::string& s : m.symbols) out << " " << s;
    out << "\n";
    if (!m.cpu_features.empty()) {
      out << "      cpu features:";
      for (const std::string& f : m.cpu_features) out << " " << f;
      out << "\n";
    }
  }
  // Multi-level executables: which module of each group this machine would load.
  const auto modules = exe.native_modules();
  if (std::any_of(modules.begin(), modules.end(), [](const NativeModuleInfo& m) { return m.alternative_of >= 0; })) {
    const std::vector<std::string> disabled = DisabledCpuFeaturesFromEnvironment();
    const std::vector<int32_t> chosen = ChooseNativeModules(modules, HostCpuFeaturesWithout(disabled));
    out << "  on this CPU" << (disabled.empty() ? "" : " (treating as absent: " + JoinNames(disabled) + ")") << ":";
    for (size_t i = 0; i < modules.size(); ++i) {
      if (modules[i].alternative_of >= 0) continue;
      out << " [" << i << "] -> " << (chosen[i] < 0 ? std::string("none runs") : "[" + std::to_string(chosen[i]) + "]");
    }
    out << "\n";
  }
  return out.str();
}

}  // namespace strata::vm
