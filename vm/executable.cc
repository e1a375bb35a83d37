// Loading an executable: read or map, verify, build the function table, resolve.
#include "vm/executable.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>
#include <unordered_map>

#include <sys/mman.h>
#include <sys/stat.h>

#include "serialization/format_version.h"
#include "serialization/reader.h"
#include "support/printable_text.h"
#include "support/suggest.h"
#include "vm/bytecode/bytecode.h"
#include "vm/bytecode/verifier.h"
#include "vm/cpu_features.h"
#include "vm/native_module.h"
#include "vm/plugged_device.h"

namespace strata::vm {

static_assert(std::endian::native == std::endian::little, "the executable format is little-endian");

namespace fbs = ::flatbuffers;

// The file bytes: an aligned heap copy or a mapping.
struct Executable::Buffer {
  uint8_t* data = nullptr;
  size_t size = 0;
  bool mmapped = false;
  ~Buffer() {
    if (mmapped) {
      munmap(data, size);
    } else {
      std::free(data);
    }
  }
};

namespace {

std::string Str(const fbs::String* s) { return s ? s->str() : std::string(); }

serialization::MemoryPlanSpec ReadMemoryPlan(const fb::MemoryPlan& plan) {
  serialization::MemoryPlanSpec out;
  if (plan.storages()) {
    for (const fb::PlannedStorage* s : *plan.storages()) {
      out.storages.push_back({Str(s->name()), Str(s->size()), s->static_bytes(), Str(s->device())});
    }
  }
  if (plan.tensors()) {
    for (const fb::PlannedTensor* t : *plan.tensors()) {
      out.tensors.push_back({Str(t->name()), Str(t->type()), t->storage(), t->offset()});
    }
  }
  if (plan.pooled()) {
    for (const fbs::String* p : *plan.pooled()) out.pooled.push_back(Str(p));
  }
  if (plan.bounds()) {
    for (const fbs::String* b : *plan.bounds()) out.bounds.push_back(Str(b));
  }
  return out;
}

// Recursion is bounded: the verifier refused nesting deeper than kMaxSignatureDepth.
ValueSignature ReadValueSignature(const fb::ValueSignature& v) {
  ValueSignature out;
  out.kind = Str(v.kind());
  out.dtype = Str(v.dtype());
  out.ndim = v.ndim();
  if (v.dims()) {
    for (const fbs::String* d : *v.dims()) out.dims.push_back(Str(d));
  }
  if (v.fields()) {
    for (const fb::ValueSignature* field : *v.fields()) out.fields.push_back(ReadValueSignature(*field));
  }
  out.text = Str(v.text());
  return out;
}

constexpr size_t kAlignment = serialization::kConstantAlignment;

StatusOr<uint8_t*> AllocateAligned(size_t size) {
  size_t rounded = (size + kAlignment - 1) / kAlignment * kAlignment;
  if (rounded == 0) rounded = kAlignment;
  void* p = std::aligned_alloc(kAlignment, rounded);
  if (p == nullptr)
    return Status(ErrorStatus(StatusCode::kResourceExhausted)
                  << "out of memory: cannot allocate " << size << " bytes for the executable");
  return static_cast<uint8_t*>(p);
}

std::string ErrnoText() { return std::strerror(errno); }

// Closes a file descriptor on scope exit.
struct FdCloser {
  int fd;
  ~FdCloser() {
    if (fd >= 0) close(fd);
  }
};

StatusOr<size_t> FileSize(int fd, const std::string& path) {
  struct stat st;
  if (fstat(fd, &st) != 0) return Status(ErrorStatus() << path << ": cannot stat: " << ErrnoText());
  if (!S_ISREG(st.st_mode)) return Status(ErrorStatus() << path << ": not a regular file");
  return static_cast<size_t>(st.st_size);
}

}  // namespace

std::vector<std::string> DefaultOutputNames(size_t count) {
  std::vector<std::string> names;
  names.reserve(count);
  for (size_t i = 0; i < count; ++i) names.push_back("output" + std::to_string(i));
  return names;
}

const char* FunctionKindName(FunctionKind kind) {
  switch (kind) {
    case FunctionKind::kBytecode: return "bytecode";
    case FunctionKind::kCompiledKernel: return "compiled kernel";
    case FunctionKind::kLibrary: return "library";
    case FunctionKind::kDevice: return "device kernel";
  }
  return "<invalid>";
}

Executable::~Executable() = default;

StatusOr<std::shared_ptr<const Executable>> Executable::LoadFromBytes(std::span<const uint8_t> bytes,
                                                                      const LoadOptions& options) {
  auto buffer = std::make_shared<Buffer>();
  STRATA_ASSIGN_OR_RETURN(buffer->data, AllocateAligned(bytes.size()));
  buffer->size = bytes.size();
  if (!bytes.empty()) std::memcpy(buffer->data, bytes.data(), bytes.size());
  return Load(std::move(buffer), /*mapped=*/false, options);
}

StatusOr<std::shared_ptr<const Executable>> Executable::LoadFromFile(const std::string& path,
                                                                     const LoadOptions& options) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status(ErrorStatus(StatusCode::kNotFound) << path << ": cannot open: " << ErrnoText());
  FdCloser closer{fd};
  STRATA_ASSIGN_OR_RETURN(size_t size, FileSize(fd, path));
  auto buffer = std::make_shared<Buffer>();
  STRATA_ASSIGN_OR_RETURN(buffer->data, AllocateAligned(size));
  buffer->size = size;
  size_t done = 0;
  while (done < size) {
    ssize_t n = read(fd, buffer->data + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status(ErrorStatus() << path << ": read failed: " << ErrnoText());
    if (n == 0)
      return Status(ErrorStatus(StatusCode::kDataLoss)
                    << path << ": file shrank while reading (" << done << " of " << size << " bytes)");
    done += static_cast<size_t>(n);
  }
  auto exe = Load(std::move(buffer), /*mapped=*/false, options);
  if (!exe.ok()) return Status(exe.status()).WithContext(path + ": ");
  return exe;
}

StatusOr<std::shared_ptr<const Executable>> Executable::MapFile(const std::string& path, const LoadOptions& options) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status(ErrorStatus(StatusCode::kNotFound) << path << ": cannot open: " << ErrnoText());
  FdCloser closer{fd};
  STRATA_ASSIGN_OR_RETURN(size_t size, FileSize(fd, path));
  if (size == 0)
    return Status(ErrorStatus(StatusCode::kDataLoss) << path << ": not a Strata executable: file too small (0 bytes)");
  void* addr = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (addr == MAP_FAILED) return Status(ErrorStatus() << path << ": mmap failed: " << ErrnoText());
  auto buffer = std::make_shared<Buffer>();
  buffer->data = static_cast<uint8_t*>(addr);
  buffer->size = size;
  buffer->mmapped = true;
  auto exe = Load(std::move(buffer), /*mapped=*/true, options);
  if (!exe.ok()) return Status(exe.status()).WithContext(path + ": ");
  return exe;
}

StatusOr<std::shared_ptr<const Executable>> Executable::Load(std::shared_ptr<Buffer> buffer, bool mapped,
                                                             const LoadOptions& options) {
  // The verifier refuses unprintable names, but messages also quote string
  // constants and dynamic-loader text; one place guarantees a one-line message.
  auto exe = LoadChecked(std::move(buffer), mapped, options);
  if (!exe.ok()) return Status::Error(exe.status().code(), PrintableText(exe.status().message()));
  return exe;
}

StatusOr<std::shared_ptr<const Executable>> Executable::LoadChecked(std::shared_ptr<Buffer> buffer, bool mapped,
                                                                    const LoadOptions& options) {
  std::span<const uint8_t> bytes(buffer->data, buffer->size);
  serialization::ReadOptions read_options;
  read_options.verify_checksums = options.verify_checksums;
  STRATA_ASSIGN_OR_RETURN(const fb::Executable* root, serialization::ReadExecutable(bytes, read_options));
  STRATA_RETURN_IF_ERROR(VerifyBytecode(*root));

  std::shared_ptr<Executable> exe(new Executable());
  exe->buffer_ = buffer;
  exe->bytes_ = bytes;
  exe->mapped_ = mapped;
  exe->format_major_ = root->format_major();
  exe->format_minor_ = root->format_minor();
  exe->has_checksums_ = root->checksums() != nullptr;
  exe->checksums_verified_ = exe->has_checksums_ && options.verify_checksums;
  if (root->producer()) exe->producer_ = root->producer()->str();

  // Functions (the verifier proved every field used here is present and in range).
  if (const auto* functions = root->functions()) {
    exe->functions_.resize(functions->size());
    for (fbs::uoffset_t i = 0; i < functions->size(); ++i) {
      const fb::Function* f = functions->Get(i);
      VMFunction& out = exe->functions_[i];
      if (f->name()) out.name = f->name()->str();
      out.kind = static_cast<FunctionKind>(f->kind());
      if (f->backend()) out.backend = f->backend()->str();
      if (const fb::MemoryPlan* plan = f->memory_plan()) out.memory_plan = ReadMemoryPlan(*plan);
      if (out.kind == FunctionKind::kBytecode) {
        out.num_params = f->num_params();
        out.num_registers = f->num_registers();
        for (int32_t p = 0; p < out.num_params; ++p) {
          out.param_names.push_back(f->param_names() ? f->param_names()->Get(static_cast<fbs::uoffset_t>(p))->str()
                                                     : "arg" + std::to_string(p));
        }
        out.code = std::span<const int64_t>(f->code()->data(), f->code()->size());
        if (const fb::Signature* sig = f->signature()) {
          out.has_signature = true;
          if (sig->params()) {  // absent when there are no parameters
            for (const fb::ValueSignature* p : *sig->params()) out.param_signatures.push_back(ReadValueSignature(*p));
          }
          out.result_signature = ReadValueSignature(*sig->result());
          // The verifier proved the counts: one per parameter, one per result tensor.
          if (sig->input_names()) {
            for (const fbs::String* n : *sig->input_names()) out.input_names.push_back(Str(n));
          }
          if (sig->output_names()) {
            for (const fbs::String* n : *sig->output_names()) out.output_names.push_back(Str(n));
          } else {
            const bool tuple = out.result_signature.kind == "tuple";
            out.output_names = DefaultOutputNames(tuple ? out.result_signature.fields.size() : 1);
          }
        }
        if (out.input_names.empty()) out.input_names = out.param_names;
      } else if (out.kind == FunctionKind::kCompiledKernel) {
        out.module_index = f->module_index();
        out.symbol = f->symbol()->str();
      } else if (out.kind == FunctionKind::kDevice) {
        out.device_index = f->device_index();
        out.symbol = f->symbol()->str();
      }
    }
  }

  // Constants. Tensors view one storage that wraps the whole file and keeps it alive.
  if (const auto* constants = root->constants()) {
    Ref<Storage> file_storage = Storage::WrapExternal(buffer->data, static_cast<int64_t>(buffer->size), kCpuDevice,
                                                      std::shared_ptr<const void>(buffer, buffer->data));
    exe->constants_.reserve(constants->size());
    for (fbs::uoffset_t i = 0; i < constants->size(); ++i) {
      const fb::Constant* c = constants->Get(i);
      switch (c->value_type()) {
        case fb::ConstantValue::TensorConstant: {
          const fb::TensorConstant* t = c->value_as_TensorConstant();
          std::vector<int64_t> shape;
          if (t->shape()) shape.assign(t->shape()->begin(), t->shape()->end());
          DataType dtype(static_cast<DataType::Code>(t->dtype_code()), t->dtype_bits());
          int64_t offset = t->data() && t->data()->size() > 0 ? t->data()->data() - buffer->data : 0;
          auto tensor = Tensor::View(file_storage, offset, shape, dtype);
          if (!tensor.ok()) return Status(tensor.status()).WithContext("constants[" + std::to_string(i) + "]: ");
          tensor.value()->MarkReadOnly();
          exe->constants_.push_back(Value::FromTensor(std::move(tensor).value()));
          break;
        }
        case fb::ConstantValue::ShapeConstant: {
          const auto* dims = c->value_as_ShapeConstant()->dims();
          std::vector<int64_t> shape;
          if (dims) shape.assign(dims->begin(), dims->end());
          exe->constants_.push_back(Value::FromShape(shape));
          break;
        }
        case fb::ConstantValue::IntConstant:
          exe->constants_.push_back(Value::FromInt(c->value_as_IntConstant()->value()));
          break;
        case fb::ConstantValue::FloatConstant:
          exe->constants_.push_back(Value::FromFloat(c->value_as_FloatConstant()->value()));
          break;
        case fb::ConstantValue::StringConstant: {
          const auto* s = c->value_as_StringConstant()->value();
          exe->constants_.push_back(Value::FromString(s ? s->string_view() : std::string_view()));
          break;
        }
        case fb::ConstantValue::DataTypeConstant: {
          const auto* d = c->value_as_DataTypeConstant();
          exe->constants_.push_back(Value::FromDataType(DataType(static_cast<DataType::Code>(d->code()), d->bits())));
          break;
        }
        default:
          return Status(ErrorStatus() << "constants[" << i
                                      << "]: unknown constant type");  // unreachable after verification
      }
    }
  }

  if (const auto* modules = root->native_modules()) {
    for (fbs::uoffset_t i = 0; i < modules->size(); ++i) {
      const fb::NativeModule* m = modules->Get(i);
      NativeModuleInfo info;
      info.format = m->format() ? m->format()->str() : "elf-shared-object";
      if (m->target_triple()) info.target_triple = m->target_triple()->str();
      if (m->cpu()) info.cpu = m->cpu()->str();
      info.code_size = m->code()->size();
      if (m->symbols()) {
        for (const fbs::String* s : *m->symbols()) info.symbols.push_back(s ? s->str() : std::string());
      }
      if (m->backend()) info.backend = m->backend()->str();
      if (m->cpu_features()) {
        for (const fbs::String* s : *m->cpu_features()) info.cpu_features.push_back(s ? s->str() : std::string());
      }
      info.alternative_of = m->alternative_of();
      exe->module_info_.push_back(std::move(info));
      exe->module_code_.emplace_back(m->code()->data(), m->code()->size());
    }
  }
  if (root->entry_points()) exe->entry_points_.assign(root->entry_points()->begin(), root->entry_points()->end());
  if (const auto* devices = root->devices()) {
    for (const fb::DeviceRequirement* d : *devices) exe->devices_.push_back({Str(d->name()), Str(d->options())});
  }

  if (options.resolve) {
    // Options for a device the executable does not use are a mistake (a typo, or the wrong file), not a no-op.
    std::vector<std::string> used;
    for (const auto& device : exe->devices_) used.push_back(device.name);
    for (const auto& [name, text] : options.device_options) {
      if (std::find(used.begin(), used.end(), name) == used.end()) {
        return Status(ErrorStatus() << "device options name device '" << name
                                    << "', which the executable does not use (it uses: "
                                    << (used.empty() ? std::string("the CPU only") : JoinNames(used)) << ")"
                                    << DidYouMean(name, used));
      }
    }
    for (auto& device : exe->devices_) {
      auto override = options.device_options.find(device.name);
      if (override != options.device_options.end()) device.options = override->second;
    }
    STRATA_RETURN_IF_ERROR(exe->Resolve(options));
  }
  return std::shared_ptr<const Executable>(std::move(exe));
}

std::vector<int32_t> ChooseNativeModules(std::span<const NativeModuleInfo> modules, const CpuFeatureProbe& probe) {
  std::vector<int32_t> chosen(modules.size(), -1);
  for (size_t i = 0; i < modules.size(); ++i) {
    if (modules[i].alternative_of != -1) continue;
    for (size_t k = i; k < modules.size() && chosen[i] < 0; ++k) {
      const bool in_group = k == i || modules[k].alternative_of == static_cast<int32_t>(i);
      if (in_group && CheckCpuFeatures(modules[k].cpu_features, modules[k].cpu, probe).ok()) {
        chosen[i] = static_cast<int32_t>(k);
      }
    }
  }
  return chosen;
}

namespace {

// Why no module of group `first` runs on this CPU: the one module's reason, or
// each alternative's.
Status NoModuleRuns(std::span<const NativeModuleInfo> modules, size_t first, const std::string& name,
                    const CpuFeatureProbe& probe, const std::vector<std::string>& disabled) {
  std::string reasons;
  size_t members = 0;
  for (size_t k = first; k < modules.size(); ++k) {
    if (k != first && modules[k].alternative_of != static_cast<int32_t>(first)) continue;
    ++members;
    Status cpu = CheckCpuFeatures(modules[k].cpu_features, modules[k].cpu, probe);
    reasons += (reasons.empty() ? "" : "; ") + ("native_modules[" + std::to_string(k) + "]: ") + cpu.message();
  }
  std::string message = members == 1 ? name + reasons.substr(reasons.find(']') + 1)
                                     : name + " and its alternatives: none runs on this CPU (" + reasons + ")";
  if (!disabled.empty()) message += " (treated as absent: " + JoinNames(disabled) + ")";
  return Status::Error(StatusCode::kFailedPrecondition, message);
}

}  // namespace

Status Executable::Resolve(const LoadOptions& options) {
  RegisterBuiltins();
  std::vector<std::string> disabled = DisabledCpuFeaturesFromEnvironment();
  disabled.insert(disabled.end(), options.disabled_cpu_features.begin(), options.disabled_cpu_features.end());
  const CpuFeatureProbe probe = HostCpuFeaturesWithout(disabled);
  // Chosen and checked before dlopen: a constructor in the code could already use the features.
  loaded_modules_ = ChooseNativeModules(module_info_, probe);
  modules_.resize(module_code_.size());
  for (size_t i = 0; i < module_code_.size(); ++i) {
    if (module_info_[i].alternative_of != -1) continue;
    const std::string backend =
        module_info_[i].backend.empty() ? "" : " (generated by BYOC backend '" + module_info_[i].backend + "')";
    const int32_t chosen = loaded_modules_[i];
    if (chosen < 0)
      return NoModuleRuns(module_info_, i, "native_modules[" + std::to_string(i) + "]" + backend, probe, disabled);
    const std::string loaded_name = "native_modules[" + std::to_string(chosen) + "]" + backend;
    auto module = NativeModule::Load(module_code_[static_cast<size_t>(chosen)], loaded_name);
    if (!module.ok()) {
      std::string message = module.status().message();
      if (message.find(loaded_name) == std::string::npos) message = loaded_name + ": " + message;
      return Status::Error(module.status().code(), message);
    }
    modules_[i] = std::move(module).value();
  }
  for (size_t i = 0; i < devices_.size(); ++i) {
    auto device = PluggedDevice::Open(devices_[i].name, devices_[i].options, static_cast<int32_t>(i));
    if (!device.ok()) return Status(device.status()).WithContext("devices[" + std::to_string(i) + "]: ");
    plugged_devices_.push_back(std::move(device).value());
  }
  for (size_t i = 0; i < functions_.size(); ++i) {
    VMFunction& f = functions_[i];
    std::string label = "functions[" + std::to_string(i) + "]";
    // Offloaded functions name their backend: that is what a user has to fix.
    std::string offloaded = f.backend.empty() ? "" : " (offloaded to BYOC backend '" + f.backend + "')";
    if (f.kind == FunctionKind::kLibrary) {
      std::optional<LibraryFunction> fn = LookupLibraryFunction(f.name);
      if (!fn) {
        return Status(ErrorStatus(StatusCode::kNotFound)
                      << label << ": library function '" << f.name << "'" << offloaded
                      << " is not registered in this runtime (link and register the library that provides "
                         "it, or check the name)");
      }
      f.library = *fn;
    } else if (f.kind == FunctionKind::kCompiledKernel) {
      auto kernel = modules_[static_cast<size_t>(f.module_index)]->Lookup(f.symbol);
      if (!kernel.ok()) return Status(kernel.status()).WithContext(label + " '" + f.name + "'" + offloaded + ": ");
      f.kernel = kernel.value();
      f.vm_kernel = modules_[static_cast<size_t>(f.module_index)]->LookupVmEntry(f.symbol);
    } else if (f.kind == FunctionKind::kDevice) {
      PluggedDevice& device = *plugged_devices_[static_cast<size_t>(f.device_index)];
      auto kernel = device.LookupKernel(f.symbol);
      if (!kernel.ok()) return Status(kernel.status()).WithContext(label + " '" + f.name + "': ");
      f.device = &device;
      f.device_kernel = kernel.value();
    }
  }
  DecodeForDispatch();
  resolved_ = true;
  return Status::Ok();
}

void Executable::DecodeForDispatch() {
  static_assert(sizeof(uintptr_t) == sizeof(int64_t), "dispatch operands hold a pointer in a word");
  // Calls `visit(offset)` for the offset of every Call operand of `f` (verified code).
  auto for_each_operand = [](const VMFunction& f, auto&& visit) {
    for (size_t pc = 0; pc < f.code.size();) {
      const auto op = static_cast<Opcode>(f.code[pc]);
      size_t length = static_cast<size_t>(OpcodeFixedWords(op));
      if (op == Opcode::kCall) {
        const auto nargs = static_cast<size_t>(f.code[pc + 3]);
        for (size_t i = 0; i < nargs; ++i) visit(pc + 4 + i);
        length += nargs;
      }
      pc += length;
    }
  };
  // One Value per distinct immediate / function operand word, all collected
  // before any address is taken.
  std::unordered_map<int64_t, size_t> value_index;
  size_t total_words = 0;
  for (const VMFunction& f : functions_) {
    if (f.kind != FunctionKind::kBytecode) continue;
    total_words += f.code.size();
    for_each_operand(f, [&](size_t at) {
      const OperandKind kind = DecodeOperandKind(f.code[at]);
      if (kind == OperandKind::kImmediate || kind == OperandKind::kFunction) {
        value_index.emplace(f.code[at], value_index.size());
      }
    });
  }
  operand_values_.resize(value_index.size());
  for (const auto& [word, index] : value_index) {
    const int64_t value = DecodeOperandValue(word);
    operand_values_[index] =
        DecodeOperandKind(word) == OperandKind::kImmediate ? Value::FromInt(value) : Value::FromFunction(value);
  }
  dispatch_words_.reserve(total_words);  // the spans below point into it
  for (VMFunction& f : functions_) {
    if (f.kind != FunctionKind::kBytecode) continue;
    const size_t begin = dispatch_words_.size();
    dispatch_words_.insert(dispatch_words_.end(), f.code.begin(), f.code.end());
    int64_t* words = dispatch_words_.data() + begin;
    for_each_operand(f, [&](size_t at) {
      const int64_t word = f.code[at];
      const Value* target = nullptr;
      switch (DecodeOperandKind(word)) {
        case OperandKind::kRegister: words[at] = DecodeOperandValue(word); return;
        case OperandKind::kConstant: target = &constants_[static_cast<size_t>(DecodeOperandValue(word))]; break;
        case OperandKind::kImmediate:
        case OperandKind::kFunction: target = &operand_values_[value_index.at(word)]; break;
      }
      const auto address = reinterpret_cast<uintptr_t>(target);
      assert((address & kDispatchValueTag) == 0 && "user-space addresses leave the top bit clear");
      words[at] = static_cast<int64_t>(address | kDispatchValueTag);
    });
    f.dispatch_code = std::span<const int64_t>(words, f.code.size());
  }
}

std::optional<int32_t> Executable::FindEntryPoint(std::string_view name) const {
  for (int32_t index : entry_points_) {
    if (functions_[static_cast<size_t>(index)].name == name) return index;
  }
  return std::nullopt;
}

std::string Executable::EntryPointNames() const {
  std::string out;
  for (int32_t index : entry_points_) {
    if (!out.empty()) out += ", ";
    out += functions_[static_cast<size_t>(index)].name;
  }
  return out.empty() ? "none" : out;
}

}  // namespace strata::vm
