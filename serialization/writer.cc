// Builds the executable flatbuffer from an ExecutableSpec.
#include "serialization/writer.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <type_traits>

#include <flatbuffers/flatbuffers.h>

#include "serialization/checksum.h"
#include "serialization/executable_generated.h"

namespace strata::serialization {
namespace {

namespace fbs = ::flatbuffers;

fbs::Offset<fb::MemoryPlan> WriteMemoryPlan(fbs::FlatBufferBuilder& b, const MemoryPlanSpec& plan) {
  std::vector<fbs::Offset<fb::PlannedStorage>> storages;
  for (const PlannedStorageSpec& s : plan.storages) {
    fbs::Offset<fbs::String> device;
    if (!s.device.empty()) device = b.CreateString(s.device);
    storages.push_back(
        fb::CreatePlannedStorage(b, b.CreateString(s.name), b.CreateString(s.size), s.static_bytes, device));
  }
  std::vector<fbs::Offset<fb::PlannedTensor>> tensors;
  for (const PlannedTensorSpec& t : plan.tensors) {
    tensors.push_back(fb::CreatePlannedTensor(b, b.CreateString(t.name), b.CreateString(t.type), t.storage, t.offset));
  }
  return fb::CreateMemoryPlan(b, b.CreateVector(storages), b.CreateVector(tensors),
                              b.CreateVectorOfStrings(plan.pooled), b.CreateVectorOfStrings(plan.bounds));
}

fbs::Offset<fb::ValueSignature> WriteValueSignature(fbs::FlatBufferBuilder& b, const ValueSignatureSpec& v) {
  // Children first: a table's fields must be finished before it is started.
  fbs::Offset<fbs::Vector<fbs::Offset<fbs::String>>> dims;
  if (!v.dims.empty()) dims = b.CreateVectorOfStrings(v.dims);
  fbs::Offset<fbs::Vector<fbs::Offset<fb::ValueSignature>>> fields;
  if (!v.fields.empty()) {
    std::vector<fbs::Offset<fb::ValueSignature>> offsets;
    offsets.reserve(v.fields.size());
    for (const ValueSignatureSpec& field : v.fields) offsets.push_back(WriteValueSignature(b, field));
    fields = b.CreateVector(offsets);
  }
  fbs::Offset<fbs::String> dtype;
  if (!v.dtype.empty()) dtype = b.CreateString(v.dtype);
  return fb::CreateValueSignature(b, b.CreateString(v.kind), dtype, v.ndim, dims, fields, b.CreateString(v.text));
}

fbs::Offset<fb::Signature> WriteSignature(fbs::FlatBufferBuilder& b, const SignatureSpec& sig) {
  std::vector<fbs::Offset<fb::ValueSignature>> params;
  params.reserve(sig.params.size());
  for (const ValueSignatureSpec& p : sig.params) params.push_back(WriteValueSignature(b, p));
  auto params_vec = b.CreateVector(params);
  auto result = WriteValueSignature(b, sig.result);
  return fb::CreateSignature(b, params_vec, result);
}

fbs::Offset<fb::Function> WriteFunction(fbs::FlatBufferBuilder& b, const FunctionSpec& f) {
  auto name = b.CreateString(f.name);
  fbs::Offset<fbs::Vector<fbs::Offset<fbs::String>>> param_names;
  if (!f.param_names.empty()) param_names = b.CreateVectorOfStrings(f.param_names);
  fbs::Offset<fbs::Vector<int64_t>> code;
  if (f.kind == FunctionKindSpec::kBytecode || !f.code.empty()) code = b.CreateVector(f.code);
  fbs::Offset<fbs::String> symbol;
  if (!f.symbol.empty()) symbol = b.CreateString(f.symbol);
  fbs::Offset<fbs::String> backend;
  if (!f.backend.empty()) backend = b.CreateString(f.backend);
  fbs::Offset<fb::MemoryPlan> memory_plan;
  if (!f.memory_plan.empty()) memory_plan = WriteMemoryPlan(b, f.memory_plan);
  fbs::Offset<fb::Signature> signature;
  if (f.signature) signature = WriteSignature(b, *f.signature);
  fb::FunctionBuilder fn(b);
  fn.add_name(name);
  fn.add_kind(static_cast<fb::FunctionKind>(f.kind));
  fn.add_num_params(f.num_params);
  fn.add_num_registers(f.num_registers);
  if (!param_names.IsNull()) fn.add_param_names(param_names);
  if (!code.IsNull()) fn.add_code(code);
  fn.add_module_index(f.module_index);
  if (!symbol.IsNull()) fn.add_symbol(symbol);
  if (!backend.IsNull()) fn.add_backend(backend);
  if (!memory_plan.IsNull()) fn.add_memory_plan(memory_plan);
  if (f.device_index >= 0) fn.add_device_index(f.device_index);
  if (!signature.IsNull()) fn.add_signature(signature);
  return fn.Finish();
}

fbs::Offset<fb::Constant> WriteConstant(fbs::FlatBufferBuilder& b, const ConstantSpec& c) {
  fb::ConstantValue type = fb::ConstantValue::NONE;
  fbs::Offset<void> value;
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, TensorConstantSpec>) {
          auto shape = b.CreateVector(v.shape);
          // Data last before its table, padded so its first byte is 64-byte aligned.
          b.ForceVectorAlignment(v.bytes().size(), sizeof(uint8_t), kConstantAlignment);
          auto data = b.CreateVector(v.bytes());
          type = fb::ConstantValue::TensorConstant;
          value = fb::CreateTensorConstant(b, static_cast<uint8_t>(v.dtype.code()),
                                           static_cast<uint8_t>(v.dtype.bits()), shape, data)
                      .Union();
        } else if constexpr (std::is_same_v<T, ShapeConstantSpec>) {
          type = fb::ConstantValue::ShapeConstant;
          value = fb::CreateShapeConstant(b, b.CreateVector(v.dims)).Union();
        } else if constexpr (std::is_same_v<T, int64_t>) {
          type = fb::ConstantValue::IntConstant;
          value = fb::CreateIntConstant(b, v).Union();
        } else if constexpr (std::is_same_v<T, double>) {
          type = fb::ConstantValue::FloatConstant;
          value = fb::CreateFloatConstant(b, v).Union();
        } else if constexpr (std::is_same_v<T, std::string>) {
          type = fb::ConstantValue::StringConstant;
          value = fb::CreateStringConstant(b, b.CreateString(v)).Union();
        } else {
          static_assert(std::is_same_v<T, DataTypeConstantSpec>);
          type = fb::ConstantValue::DataTypeConstant;
          value =
              fb::CreateDataTypeConstant(b, static_cast<uint8_t>(v.dtype.code()), static_cast<uint8_t>(v.dtype.bits()))
                  .Union();
        }
      },
      c);
  return fb::CreateConstant(b, type, value);
}

fbs::Offset<fb::NativeModule> WriteNativeModule(fbs::FlatBufferBuilder& b, const NativeModuleSpec& m) {
  auto format = b.CreateString(m.format);
  auto triple = b.CreateString(m.target_triple);
  auto cpu = b.CreateString(m.cpu);
  // Shared objects are mapped page-wise by the loader; keep the code aligned too.
  b.ForceVectorAlignment(m.code.size(), sizeof(uint8_t), kConstantAlignment);
  auto code = b.CreateVector(m.code);
  auto symbols = b.CreateVectorOfStrings(m.symbols);
  auto features = b.CreateVectorOfStrings(m.cpu_features);
  fbs::Offset<fbs::String> backend;
  if (!m.backend.empty()) backend = b.CreateString(m.backend);
  return fb::CreateNativeModule(b, format, triple, cpu, code, symbols, CodeChecksum(m.code), features, backend);
}

// The bulk of an executable: constant data (with its alignment padding) and
// native code. The builder starts this large, so a model's hundreds of MB of
// weights are not copied again at every doubling of its buffer.
size_t BulkBytes(const ExecutableSpec& spec) {
  size_t bytes = 1 << 16;
  for (const ConstantSpec& c : spec.constants) {
    if (const auto* t = std::get_if<TensorConstantSpec>(&c)) bytes += t->bytes().size() + kConstantAlignment + 64;
  }
  for (const NativeModuleSpec& m : spec.native_modules) bytes += m.code.size() + 1024;
  return bytes;
}

// The finished flatbuffer of `spec` in `b`.
void BuildExecutable(const ExecutableSpec& spec, const WriteOptions& options, fbs::FlatBufferBuilder& b) {
  // Large data first so it sits at the end of the file, away from the tables.
  std::vector<fbs::Offset<fb::Constant>> constants;
  constants.reserve(spec.constants.size());
  for (const ConstantSpec& c : spec.constants) constants.push_back(WriteConstant(b, c));
  std::vector<fbs::Offset<fb::NativeModule>> modules;
  modules.reserve(spec.native_modules.size());
  for (const NativeModuleSpec& m : spec.native_modules) modules.push_back(WriteNativeModule(b, m));
  std::vector<fbs::Offset<fb::Function>> functions;
  functions.reserve(spec.functions.size());
  for (const FunctionSpec& f : spec.functions) functions.push_back(WriteFunction(b, f));

  auto producer = b.CreateString(options.producer);
  auto functions_vec = b.CreateVector(functions);
  auto constants_vec = b.CreateVector(constants);
  auto modules_vec = b.CreateVector(modules);
  auto entry_points = b.CreateVector(spec.entry_points);
  fbs::Offset<fbs::Vector<fbs::Offset<fb::DeviceRequirement>>> devices_vec;
  if (!spec.devices.empty()) {
    std::vector<fbs::Offset<fb::DeviceRequirement>> devices;
    for (const DeviceRequirementSpec& d : spec.devices) {
      devices.push_back(fb::CreateDeviceRequirement(b, b.CreateString(d.name), b.CreateString(d.options)));
    }
    devices_vec = b.CreateVector(devices);
  }
  auto root = fb::CreateExecutable(b, options.format_major, options.format_minor, producer, functions_vec,
                                   constants_vec, modules_vec, entry_points, devices_vec);
  fb::FinishExecutableBuffer(b, root);
}

}  // namespace

std::vector<uint8_t> WriteExecutable(const ExecutableSpec& spec, const WriteOptions& options) {
  fbs::FlatBufferBuilder b(BulkBytes(spec));
  BuildExecutable(spec, options, b);
  return std::vector<uint8_t>(b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize());
}

Status WriteExecutableFile(const ExecutableSpec& spec, const std::string& path) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "wb"), &std::fclose);
  if (!file) return ErrorStatus() << "cannot write '" << path << "': " << std::strerror(errno);
  fbs::FlatBufferBuilder b(BulkBytes(spec));
  BuildExecutable(spec, WriteOptions(), b);
  errno = 0;
  const size_t written = std::fwrite(b.GetBufferPointer(), 1, b.GetSize(), file.get());
  const int write_errno = errno;
  if (written != b.GetSize() || std::fclose(file.release()) != 0) {
    return ErrorStatus() << "cannot write '" << path << "': " << std::strerror(write_errno != 0 ? write_errno : errno);
  }
  return Status::Ok();
}

std::vector<uint8_t> WriteExecutable(const ExecutableSpec& spec) { return WriteExecutable(spec, WriteOptions()); }

}  // namespace strata::serialization
