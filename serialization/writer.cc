// Builds the executable flatbuffer from an ExecutableSpec, and its checksums.
#include "serialization/writer.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
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
  // Unchecked here (the verifier checks them), so tests can write bad files.
  fbs::Offset<fbs::Vector<fbs::Offset<fbs::String>>> input_names, output_names;
  if (!sig.input_names.empty()) input_names = b.CreateVectorOfStrings(sig.input_names);
  if (!sig.output_names.empty()) output_names = b.CreateVectorOfStrings(sig.output_names);
  return fb::CreateSignature(b, params_vec, result, input_names, output_names);
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

// Bytes padded so that the first is 64-byte aligned in the file (kConstantAlignment).
fbs::Offset<fbs::Vector<uint8_t>> WriteAlignedBytes(fbs::FlatBufferBuilder& b, const std::vector<uint8_t>& bytes) {
  b.ForceVectorAlignment(bytes.size(), sizeof(uint8_t), kConstantAlignment);
  return b.CreateVector(bytes);
}

// `data`: the tensor data of a TensorConstantSpec, written before the tables (BuildExecutable).
fbs::Offset<fb::Constant> WriteConstant(fbs::FlatBufferBuilder& b, const ConstantSpec& c,
                                        fbs::Offset<fbs::Vector<uint8_t>> data) {
  fb::ConstantValue type = fb::ConstantValue::NONE;
  fbs::Offset<void> value;
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, TensorConstantSpec>) {
          auto shape = b.CreateVector(v.shape);
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

// `code`: the module's code, written before the tables (BuildExecutable). Files
// with checksums cover the code with a region of its own; older ones have code_crc32.
fbs::Offset<fb::NativeModule> WriteNativeModule(fbs::FlatBufferBuilder& b, const NativeModuleSpec& m,
                                                fbs::Offset<fbs::Vector<uint8_t>> code, bool legacy_code_crc32) {
  auto format = b.CreateString(m.format);
  auto triple = b.CreateString(m.target_triple);
  auto cpu = b.CreateString(m.cpu);
  auto symbols = b.CreateVectorOfStrings(m.symbols);
  auto features = b.CreateVectorOfStrings(m.cpu_features);
  fbs::Offset<fbs::String> backend;
  if (!m.backend.empty()) backend = b.CreateString(m.backend);
  std::optional<uint32_t> crc32;
  if (legacy_code_crc32) crc32 = LegacyCodeCrc32(m.code);
  return fb::CreateNativeModule(b, format, triple, cpu, code, symbols, crc32, features, backend, m.alternative_of);
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
  // At most two checksum regions per constant and module (its data and the padding before it).
  bytes += 2 * sizeof(fb::ChecksumRegion) * (spec.constants.size() + spec.native_modules.size());
  return bytes;
}

// A FlatBufferBuilder writes back to front: while building, a position is its
// distance from the end of the finished buffer (file offset = file size - distance).
using Distance = fbs::uoffset_t;

// The bytes of one region of the file, as distances: file bytes [size - hi, size - lo).
struct RegionSpan {
  fb::ChecksumRegionKind kind;
  uint32_t index;
  Distance hi, lo;
};

// A vector of the bulk (native code or tensor data) as written.
struct BulkVector {
  fb::ChecksumRegionKind kind;  // NativeCode or ConstantData
  uint32_t index;
  fbs::Offset<fbs::Vector<uint8_t>> vector;
  uint32_t size;
  // Its elements, after the 4-byte length the vector's offset points at.
  Distance elements_hi() const { return vector.o - static_cast<Distance>(sizeof(fbs::uoffset_t)); }
};

// Where BuildExecutable put each part: the builder's size after writing it.
struct Layout {
  std::vector<BulkVector> bulk;
  Distance data_end = 0, code_end = 0, constants_end = 0, modules_end = 0, functions_end = 0;
};

// The regions after the header, in file order: the functions, native modules and
// constants sections, then each native module's code and each tensor's data, the
// vectors' lengths and alignment padding going to their section. Empty regions
// are left out and neighbouring pieces of one section merged.
std::vector<RegionSpan> BodyRegions(const Layout& layout) {
  std::vector<RegionSpan> regions;
  auto add = [&](fb::ChecksumRegionKind kind, uint32_t index, Distance hi, Distance lo) {
    if (hi == lo) return;
    const bool section = kind != fb::ChecksumRegionKind::NativeCode && kind != fb::ChecksumRegionKind::ConstantData;
    if (section && !regions.empty() && regions.back().kind == kind && regions.back().lo == hi) {
      regions.back().lo = lo;
      return;
    }
    regions.push_back({kind, index, hi, lo});
  };
  add(fb::ChecksumRegionKind::Functions, 0, layout.functions_end, layout.modules_end);
  add(fb::ChecksumRegionKind::NativeModules, 0, layout.modules_end, layout.constants_end);
  add(fb::ChecksumRegionKind::Constants, 0, layout.constants_end, layout.code_end);
  auto add_bulk = [&](fb::ChecksumRegionKind kind, fb::ChecksumRegionKind section, Distance hi, Distance lo) {
    std::vector<BulkVector> vectors;
    for (const BulkVector& v : layout.bulk) {
      if (v.kind == kind && v.size > 0) vectors.push_back(v);
    }
    // File order: the vector written last comes first.
    std::sort(vectors.begin(), vectors.end(),
              [](const BulkVector& a, const BulkVector& b) { return a.vector.o > b.vector.o; });
    Distance cursor = hi;
    for (const BulkVector& v : vectors) {
      add(section, 0, cursor, v.elements_hi());
      add(kind, v.index, v.elements_hi(), v.elements_hi() - v.size);
      cursor = v.elements_hi() - v.size;
    }
    add(section, 0, cursor, lo);
  };
  add_bulk(fb::ChecksumRegionKind::NativeCode, fb::ChecksumRegionKind::NativeModules, layout.code_end, layout.data_end);
  add_bulk(fb::ChecksumRegionKind::ConstantData, fb::ChecksumRegionKind::Constants, layout.data_end, 0);
  return regions;
}

// The finished flatbuffer of `spec` in `b`, with its checksums unless the options
// ask for a file without them.
void BuildExecutable(const ExecutableSpec& spec, const WriteOptions& options, fbs::FlatBufferBuilder& b) {
  Layout layout;
  // The bulk first so it sits at the end of the file, away from the tables: tensor
  // data (constant 0's last), then native code. Each is a region of its own.
  std::vector<fbs::Offset<fbs::Vector<uint8_t>>> tensor_data(spec.constants.size());
  for (size_t i = 0; i < spec.constants.size(); ++i) {
    if (const auto* t = std::get_if<TensorConstantSpec>(&spec.constants[i])) {
      tensor_data[i] = WriteAlignedBytes(b, t->bytes());
      layout.bulk.push_back({fb::ChecksumRegionKind::ConstantData, static_cast<uint32_t>(i), tensor_data[i],
                             static_cast<uint32_t>(t->bytes().size())});
    }
  }
  layout.data_end = b.GetSize();
  // Shared objects are mapped page-wise by the loader; keep the code aligned too.
  std::vector<fbs::Offset<fbs::Vector<uint8_t>>> code(spec.native_modules.size());
  for (size_t i = 0; i < spec.native_modules.size(); ++i) {
    code[i] = WriteAlignedBytes(b, spec.native_modules[i].code);
    layout.bulk.push_back({fb::ChecksumRegionKind::NativeCode, static_cast<uint32_t>(i), code[i],
                           static_cast<uint32_t>(spec.native_modules[i].code.size())});
  }
  layout.code_end = b.GetSize();

  std::vector<fbs::Offset<fb::Constant>> constants;
  constants.reserve(spec.constants.size());
  for (size_t i = 0; i < spec.constants.size(); ++i) {
    constants.push_back(WriteConstant(b, spec.constants[i], tensor_data[i]));
  }
  layout.constants_end = b.GetSize();
  std::vector<fbs::Offset<fb::NativeModule>> modules;
  modules.reserve(spec.native_modules.size());
  for (size_t i = 0; i < spec.native_modules.size(); ++i) {
    modules.push_back(WriteNativeModule(b, spec.native_modules[i], code[i], /*legacy_code_crc32=*/!options.checksums));
  }
  layout.modules_end = b.GetSize();
  std::vector<fbs::Offset<fb::Function>> functions;
  functions.reserve(spec.functions.size());
  for (const FunctionSpec& f : spec.functions) functions.push_back(WriteFunction(b, f));
  layout.functions_end = b.GetSize();

  // The header: everything from here on.
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
  // The checksums are known only once the file is finished: their slots are
  // reserved now and filled in place below.
  std::vector<RegionSpan> body;
  fbs::Offset<fbs::Vector<const fb::ChecksumRegion*>> checksums;
  if (options.checksums) {
    body = BodyRegions(layout);
    fb::ChecksumRegion* slots = nullptr;
    checksums = b.CreateUninitializedVectorOfStructs<fb::ChecksumRegion>(1 + body.size(), &slots);
  }
  auto root = fb::CreateExecutable(b, options.format_major, options.format_minor, producer, functions_vec,
                                   constants_vec, modules_vec, entry_points, devices_vec, checksums);
  fb::FinishExecutableBuffer(b, root);
  if (!options.checksums) return;

  const Distance size = b.GetSize();
  const std::span<uint8_t> file(b.GetBufferPointer(), size);
  auto* slots = reinterpret_cast<fb::ChecksumRegion*>(file.data() + size - checksums.o + sizeof(fbs::uoffset_t));
  const std::span<fb::ChecksumRegion> regions(slots, 1 + body.size());
  regions[0] = fb::ChecksumRegion(0, 0, size - layout.functions_end, 0, fb::ChecksumRegionKind::Header);
  for (size_t i = 0; i < body.size(); ++i) {
    regions[1 + i] = fb::ChecksumRegion(0, size - body[i].hi, body[i].hi - body[i].lo, body[i].index, body[i].kind);
  }
  StoreChecksums(file, regions);
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
