// Semantic verification of a flatbuffers-verified executable (see verifier.h).
#include "serialization/verifier.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "serialization/checksum.h"
#include "serialization/executable_spec.h"
#include "support/data_type.h"
#include "support/printable_text.h"

namespace strata::serialization {
namespace {

namespace fbs = ::flatbuffers;

template <typename T>
bool IsAligned(const fbs::Vector<T>* vec) {
  // flatbuffers does not align an empty vector (the shape of a 0-d tensor); no
  // element is ever read from it.
  return vec == nullptr || vec->size() == 0 || reinterpret_cast<uintptr_t>(vec->data()) % alignof(T) == 0;
}

// A damaged file: every verifier error is DATA_LOSS.
ErrorStatus Corrupt() { return ErrorStatus(StatusCode::kDataLoss); }

// Names end up in lookups and error messages: control bytes or broken UTF-8
// mean the file is damaged (kMaxNameBytes: executable_spec.h).

Status CheckName(const std::string& where, const char* what, const fbs::String* name) {
  if (name == nullptr || IsPrintableText(name->string_view(), kMaxNameBytes)) return Status::Ok();
  return Status(Corrupt() << where << ": " << what << " is not printable text or longer than " << kMaxNameBytes
                          << " bytes ('" << PrintableText(name->string_view(), 64) << "')");
}

bool IsValidElementType(uint8_t code, uint8_t bits) {
  switch (static_cast<DataType::Code>(code)) {
    case DataType::Code::kInt:
    case DataType::Code::kUInt: return bits == 8 || bits == 16 || bits == 32 || bits == 64;
    case DataType::Code::kFloat: return bits == 16 || bits == 32 || bits == 64;
    case DataType::Code::kBool: return bits == 1 || bits == 8;
    default: return false;
  }
}

std::string DataTypeText(uint8_t code, uint8_t bits) {
  return "(code " + std::to_string(code) + ", bits " + std::to_string(bits) + ")";
}

// The structure of a bytecode function; its instruction stream is the bytecode
// verifier's (vm/bytecode/verifier.h).
Status VerifyBytecodeFunctionLayout(const std::string& label, const fb::Function* f) {
  int32_t num_params = f->num_params(), num_registers = f->num_registers();
  if (num_registers < 0 || num_registers > kMaxRegisters) {
    return Status(Corrupt() << label << ": num_registers " << num_registers << " out of range (0 to " << kMaxRegisters
                            << ")");
  }
  if (num_params < 0 || num_params > num_registers) {
    return Status(Corrupt() << label << ": num_params " << num_params << " out of range (0 to num_registers "
                            << num_registers << ")");
  }
  if (f->param_names() != nullptr && f->param_names()->size() != static_cast<uint32_t>(num_params)) {
    return Status(Corrupt() << label << ": " << f->param_names()->size() << " param_names for " << num_params
                            << " parameters");
  }
  const fbs::Vector<int64_t>* code = f->code();
  if (code == nullptr || code->size() == 0) return Status(Corrupt() << label << ": bytecode function has no code");
  if (!IsAligned(code)) return Status(Corrupt() << label << ": code is not 8-byte aligned");
  return Status::Ok();
}

// The descriptive memory plan: printable text and storage indices in range.
Status VerifyMemoryPlan(const std::string& label, const fb::MemoryPlan* plan) {
  const std::string where = label + ": memory_plan";
  uint32_t num_storages = SizeOf(plan->storages());
  for (uint32_t i = 0; i < num_storages; ++i) {
    const fb::PlannedStorage* s = plan->storages()->Get(i);
    std::string at = where + ".storages[" + std::to_string(i) + "]";
    STRATA_RETURN_IF_ERROR(CheckName(at, "name", s->name()));
    STRATA_RETURN_IF_ERROR(CheckName(at, "size", s->size()));
    STRATA_RETURN_IF_ERROR(CheckName(at, "device", s->device()));
  }
  for (uint32_t i = 0; i < SizeOf(plan->tensors()); ++i) {
    const fb::PlannedTensor* t = plan->tensors()->Get(i);
    std::string at = where + ".tensors[" + std::to_string(i) + "]";
    STRATA_RETURN_IF_ERROR(CheckName(at, "name", t->name()));
    STRATA_RETURN_IF_ERROR(CheckName(at, "type", t->type()));
    if (t->storage() < 0 || static_cast<uint32_t>(t->storage()) >= num_storages) {
      return Status(Corrupt() << at << ": storage " << t->storage() << " out of range (" << num_storages
                              << " storages)");
    }
    if (t->offset() < 0) return Status(Corrupt() << at << ": negative offset " << t->offset());
  }
  for (uint32_t i = 0; i < SizeOf(plan->pooled()); ++i) {
    STRATA_RETURN_IF_ERROR(CheckName(where, ("pooled[" + std::to_string(i) + "]").c_str(), plan->pooled()->Get(i)));
  }
  for (uint32_t i = 0; i < SizeOf(plan->bounds()); ++i) {
    STRATA_RETURN_IF_ERROR(CheckName(where, ("bounds[" + std::to_string(i) + "]").c_str(), plan->bounds()->Get(i)));
  }
  return Status::Ok();
}

// A signature's annotation text holds a whole tuple of results: far longer than a name may be.
constexpr size_t kMaxSignatureTextBytes = size_t{1} << 20;

// One value of a signature and its fields: what the kind allows, consistent ranks,
// printable text. `at` names it ("functions[0] 'main': signature.params[1]").
Status VerifyValueSignature(const std::string& at, const fb::ValueSignature* v, int depth) {
  if (depth > kMaxSignatureDepth) {
    return Status(Corrupt() << at << ": nested more than " << kMaxSignatureDepth << " levels deep");
  }
  STRATA_RETURN_IF_ERROR(CheckName(at, "kind", v->kind()));
  const std::string_view kind = v->kind() ? v->kind()->string_view() : std::string_view();
  if (kind.empty()) return Status(Corrupt() << at << ": no kind");
  const bool tensor = kind == "tensor", shape = kind == "shape", prim = kind == "prim", tuple = kind == "tuple";
  if (!tensor && !shape && !prim && !tuple && kind != "object") {
    return Status(Corrupt() << at << ": unknown kind '" << PrintableText(kind, 64)
                            << "' (expected tensor, shape, prim, tuple or object)");
  }
  const std::string a_kind = (kind == "object" ? "an " : "a ") + std::string(kind);
  if (v->text() != nullptr && !IsPrintableText(v->text()->string_view(), kMaxSignatureTextBytes)) {
    return Status(Corrupt() << at << ": text is not printable text or longer than " << kMaxSignatureTextBytes
                            << " bytes ('" << PrintableText(v->text()->string_view(), 64) << "')");
  }
  if (v->dtype() != nullptr && v->dtype()->size() > 0) {
    if (!tensor && !prim) return Status(Corrupt() << at << ": " << a_kind << " has no dtype");
    std::optional<DataType> dtype = DataType::Parse(v->dtype()->string_view());
    if (!dtype || dtype->is_void()) {
      return Status(Corrupt() << at << ": dtype '" << PrintableText(v->dtype()->string_view(), 64)
                              << "' is not a data type");
    }
  }
  const uint32_t num_dims = SizeOf(v->dims());
  if (!tensor && !shape && (v->ndim() != -1 || v->dims() != nullptr)) {
    return Status(Corrupt() << at << ": " << a_kind << " has no ndim or dims");
  }
  if (v->ndim() < -1) return Status(Corrupt() << at << ": ndim " << v->ndim() << " out of range (-1 or more)");
  if (v->dims() != nullptr && static_cast<int64_t>(num_dims) != v->ndim()) {
    return Status(Corrupt() << at << ": " << num_dims << " dims for ndim " << v->ndim());
  }
  for (uint32_t i = 0; i < num_dims; ++i) {
    const std::string dim = "dims[" + std::to_string(i) + "]";
    if (v->dims()->Get(i)->size() == 0) return Status(Corrupt() << at << ": " << dim << " is empty");
    STRATA_RETURN_IF_ERROR(CheckName(at, dim.c_str(), v->dims()->Get(i)));
  }
  if (!tuple && v->fields() != nullptr) return Status(Corrupt() << at << ": " << a_kind << " has no fields");
  for (uint32_t i = 0; i < SizeOf(v->fields()); ++i) {
    STRATA_RETURN_IF_ERROR(
        VerifyValueSignature(at + ".fields[" + std::to_string(i) + "]", v->fields()->Get(i), depth + 1));
  }
  return Status::Ok();
}

// 1.6: the model's names of the parameters or result tensors (Signature.input_names /
// output_names). Servers look tensors up by them: one per `expected` value, printable,
// non-empty and distinct.
Status VerifyModelNames(const std::string& label, const char* what, const fbs::Vector<fbs::Offset<fbs::String>>* names,
                        uint32_t expected, const char* of_what) {
  if (names->size() != expected) {
    return Status(Corrupt() << label << ": signature has " << names->size() << " " << what << " for " << expected << " "
                            << of_what);
  }
  std::map<std::string_view, uint32_t> seen;
  for (uint32_t i = 0; i < names->size(); ++i) {
    const std::string at = "signature." + std::string(what) + "[" + std::to_string(i) + "]";
    const fbs::String* name = names->Get(i);
    STRATA_RETURN_IF_ERROR(CheckName(label, at.c_str(), name));
    if (name->size() == 0) return Status(Corrupt() << label << ": " << at << " is empty");
    auto [it, inserted] = seen.emplace(name->string_view(), i);
    if (!inserted) {
      return Status(Corrupt() << label << ": " << at << " '" << name->string_view() << "' repeats " << what << "["
                              << it->second << "]");
    }
  }
  return Status::Ok();
}

// The parameters' and result's annotations of a bytecode function whose layout is verified.
Status VerifySignature(const std::string& label, const fb::Function* f) {
  const fb::Signature* sig = f->signature();
  const uint32_t num_params = SizeOf(sig->params());
  if (num_params != static_cast<uint32_t>(f->num_params())) {
    return Status(Corrupt() << label << ": signature has " << num_params << " params for " << f->num_params()
                            << " parameters");
  }
  for (uint32_t i = 0; i < num_params; ++i) {
    STRATA_RETURN_IF_ERROR(
        VerifyValueSignature(label + ": signature.params[" + std::to_string(i) + "]", sig->params()->Get(i), 1));
  }
  if (sig->result() == nullptr) return Status(Corrupt() << label << ": signature has no result");
  STRATA_RETURN_IF_ERROR(VerifyValueSignature(label + ": signature.result", sig->result(), 1));
  if (sig->input_names() != nullptr) {
    STRATA_RETURN_IF_ERROR(VerifyModelNames(label, "input_names", sig->input_names(), num_params, "parameters"));
  }
  if (sig->output_names() != nullptr) {
    // One per result tensor: a tuple's fields, or the one result.
    const fb::ValueSignature* result = sig->result();
    const bool tuple = result->kind()->string_view() == "tuple";
    const uint32_t num_outputs = tuple ? SizeOf(result->fields()) : 1;
    STRATA_RETURN_IF_ERROR(VerifyModelNames(label, "output_names", sig->output_names(), num_outputs,
                                            tuple ? "result tuple fields" : "result"));
  }
  return Status::Ok();
}

Status VerifyFunction(const fb::Executable& exe, uint32_t index, const fb::Function* f) {
  const std::string index_label = "functions[" + std::to_string(index) + "]";
  STRATA_RETURN_IF_ERROR(CheckName(index_label, "name", f->name()));
  std::string label = FunctionLabel(index, f);
  STRATA_RETURN_IF_ERROR(CheckName(label, "symbol", f->symbol()));
  if (f->param_names() != nullptr) {
    for (uint32_t i = 0; i < f->param_names()->size(); ++i) {
      STRATA_RETURN_IF_ERROR(
          CheckName(label, ("param_names[" + std::to_string(i) + "]").c_str(), f->param_names()->Get(i)));
    }
  }
  if (f->memory_plan() != nullptr) STRATA_RETURN_IF_ERROR(VerifyMemoryPlan(label, f->memory_plan()));
  if (f->signature() != nullptr && f->kind() != fb::FunctionKind::Bytecode) {
    return Status(Corrupt() << label << ": only bytecode functions have a signature");
  }
  switch (f->kind()) {
    case fb::FunctionKind::Bytecode:
      STRATA_RETURN_IF_ERROR(VerifyBytecodeFunctionLayout(label, f));
      return f->signature() != nullptr ? VerifySignature(label, f) : Status::Ok();
    case fb::FunctionKind::CompiledKernel: {
      uint32_t n = SizeOf(exe.native_modules());
      if (f->module_index() < 0 || static_cast<uint32_t>(f->module_index()) >= n) {
        return Status(Corrupt() << label << ": compiled kernel module_index " << f->module_index() << " out of range ("
                                << n << " native modules)");
      }
      if (f->symbol() == nullptr || f->symbol()->size() == 0) {
        return Status(Corrupt() << label << ": compiled kernel has no symbol");
      }
      if (const int32_t of = exe.native_modules()->Get(static_cast<uint32_t>(f->module_index()))->alternative_of();
          of != -1) {
        return Status(Corrupt() << label << ": compiled kernel names native_modules[" << f->module_index()
                                << "], an alternative of native_modules[" << of << "]; functions name the first "
                                << "module of a group");
      }
      return Status::Ok();
    }
    case fb::FunctionKind::Library:
      if (f->name() == nullptr || f->name()->size() == 0) {
        return Status(Corrupt() << label << ": library function has no name");
      }
      return Status::Ok();
    case fb::FunctionKind::Device: {
      uint32_t n = SizeOf(exe.devices());
      if (f->device_index() < 0 || static_cast<uint32_t>(f->device_index()) >= n) {
        return Status(Corrupt() << label << ": device_index " << f->device_index() << " out of range (" << n
                                << " devices)");
      }
      if (f->symbol() == nullptr || f->symbol()->size() == 0) {
        return Status(Corrupt() << label << ": device function has no device kernel name (symbol)");
      }
      return Status::Ok();
    }
  }
  return Status(Corrupt() << label << ": invalid function kind " << static_cast<int>(f->kind()));
}

Status VerifyConstant(uint32_t index, const fb::Constant* c) {
  std::string label = "constants[" + std::to_string(index) + "]";
  switch (c->value_type()) {
    case fb::ConstantValue::NONE: return Status(Corrupt() << label << ": missing value");
    case fb::ConstantValue::TensorConstant: {
      const fb::TensorConstant* t = c->value_as_TensorConstant();
      if (t == nullptr) return Status(Corrupt() << label << ": missing tensor");
      if (!IsValidElementType(t->dtype_code(), t->dtype_bits())) {
        return Status(Corrupt() << label << ": invalid tensor dtype "
                                << DataTypeText(t->dtype_code(), t->dtype_bits()));
      }
      if (!IsAligned(t->shape())) return Status(Corrupt() << label << ": shape is not 8-byte aligned");
      int64_t count = 1;
      constexpr int64_t kMax = int64_t{1} << 62;
      for (uint32_t i = 0; i < SizeOf(t->shape()); ++i) {
        int64_t d = t->shape()->Get(i);
        if (d < 0) return Status(Corrupt() << label << ": tensor dimension " << i << " is negative (" << d << ")");
        if (d != 0 && count > kMax / d) return Status(Corrupt() << label << ": tensor shape is too large");
        count *= d;
      }
      DataType dtype(static_cast<DataType::Code>(t->dtype_code()), t->dtype_bits());
      int64_t want = count * dtype.bytes();
      if (count > kMax / 8 || static_cast<int64_t>(SizeOf(t->data())) != want) {
        return Status(Corrupt() << label << ": tensor data has " << SizeOf(t->data()) << " bytes, expected " << want
                                << " (" << count << " elements of " << dtype.ToString() << ")");
      }
      return Status::Ok();
    }
    case fb::ConstantValue::ShapeConstant:
      if (c->value_as_ShapeConstant() == nullptr) return Status(Corrupt() << label << ": missing shape");
      if (!IsAligned(c->value_as_ShapeConstant()->dims())) {
        return Status(Corrupt() << label << ": shape is not 8-byte aligned");
      }
      return Status::Ok();
    case fb::ConstantValue::IntConstant:
      if (c->value_as_IntConstant() == nullptr) return Status(Corrupt() << label << ": missing int");
      return Status::Ok();
    case fb::ConstantValue::FloatConstant:
      if (c->value_as_FloatConstant() == nullptr) return Status(Corrupt() << label << ": missing float");
      return Status::Ok();
    case fb::ConstantValue::StringConstant:
      if (c->value_as_StringConstant() == nullptr) return Status(Corrupt() << label << ": missing string");
      return Status::Ok();
    case fb::ConstantValue::DataTypeConstant: {
      const fb::DataTypeConstant* d = c->value_as_DataTypeConstant();
      if (d == nullptr) return Status(Corrupt() << label << ": missing dtype");
      bool handle = d->code() == static_cast<uint8_t>(DataType::Code::kHandle) && (d->bits() == 0 || d->bits() == 64);
      if (!handle && !IsValidElementType(d->code(), d->bits())) {
        return Status(Corrupt() << label << ": invalid dtype " << DataTypeText(d->code(), d->bits()));
      }
      return Status::Ok();
    }
  }
  return Status(Corrupt() << label << ": unknown constant type " << static_cast<int>(c->value_type()));
}

// Device requirements: a plug-in name the loader can turn into a file name.
// The symbols of a module, sorted (empty when it lists none).
std::vector<std::string> SortedSymbols(const fb::NativeModule* m) {
  std::vector<std::string> symbols;
  if (m->symbols() != nullptr) {
    for (const fbs::String* s : *m->symbols()) symbols.push_back(s->str());
  }
  std::sort(symbols.begin(), symbols.end());
  return symbols;
}

// 1.7: an alternative stands in for an earlier module that is not itself one,
// with the same symbols (the loader looks functions up in whichever it loads).
Status VerifyAlternative(const fb::Executable& exe, uint32_t index) {
  const fb::NativeModule* m = exe.native_modules()->Get(index);
  const int32_t of = m->alternative_of();
  if (of == -1) return Status::Ok();
  const std::string label = "native_modules[" + std::to_string(index) + "]";
  if (of < 0 || static_cast<uint32_t>(of) >= index) {
    return Status(Corrupt() << label << ": alternative_of " << of << " must name an earlier module (0.."
                            << static_cast<int64_t>(index) - 1 << ")");
  }
  const fb::NativeModule* primary = exe.native_modules()->Get(static_cast<uint32_t>(of));
  if (primary->alternative_of() != -1) {
    return Status(Corrupt() << label << ": alternative_of names native_modules[" << of
                            << "], itself an alternative of native_modules[" << primary->alternative_of() << "]");
  }
  if (SortedSymbols(m) != SortedSymbols(primary)) {
    return Status(Corrupt() << label << ": an alternative of native_modules[" << of
                            << "] must export the same symbols");
  }
  return Status::Ok();
}

Status VerifyDevice(uint32_t index, const fb::DeviceRequirement* d) {
  const std::string label = "devices[" + std::to_string(index) + "]";
  if (d->name() == nullptr || d->name()->size() == 0) return Status(Corrupt() << label << ": device has no name");
  for (char c : d->name()->string_view()) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) {
      return Status(Corrupt() << label << ": device name '" << PrintableText(d->name()->string_view(), 64)
                              << "' may only hold letters, digits and '_'");
    }
  }
  STRATA_RETURN_IF_ERROR(CheckName(label, "name", d->name()));
  return CheckName(label, "options", d->options());
}

}  // namespace

std::string FunctionLabel(uint32_t index, const fb::Function* f) {
  std::string label = "functions[" + std::to_string(index) + "]";
  if (f->name() != nullptr && f->name()->size() > 0) label += " '" + PrintableText(f->name()->string_view(), 256) + "'";
  return label;
}

Status VerifyExecutableSemantics(const fb::Executable& exe, std::span<const uint8_t> bytes) {
  for (uint32_t i = 0; i < SizeOf(exe.devices()); ++i) STRATA_RETURN_IF_ERROR(VerifyDevice(i, exe.devices()->Get(i)));
  uint32_t num_functions = SizeOf(exe.functions());
  for (uint32_t i = 0; i < num_functions; ++i) {
    STRATA_RETURN_IF_ERROR(VerifyFunction(exe, i, exe.functions()->Get(i)));
  }
  for (uint32_t i = 0; i < SizeOf(exe.constants()); ++i) {
    STRATA_RETURN_IF_ERROR(VerifyConstant(i, exe.constants()->Get(i)));
  }
  for (uint32_t i = 0; i < SizeOf(exe.native_modules()); ++i) {
    const fb::NativeModule* m = exe.native_modules()->Get(i);
    std::string label = "native_modules[" + std::to_string(i) + "]";
    STRATA_RETURN_IF_ERROR(CheckName(label, "format", m->format()));
    STRATA_RETURN_IF_ERROR(CheckName(label, "target_triple", m->target_triple()));
    STRATA_RETURN_IF_ERROR(CheckName(label, "cpu", m->cpu()));
    for (const auto* list : {m->symbols(), m->cpu_features()}) {
      if (list == nullptr) continue;
      for (uint32_t k = 0; k < list->size(); ++k) {
        STRATA_RETURN_IF_ERROR(CheckName(label, list == m->symbols() ? "a symbol" : "a cpu feature", list->Get(k)));
      }
    }
    if (m->format() != nullptr && m->format()->str() != "elf-shared-object") {
      return Status(Corrupt() << label << ": unsupported format '" << m->format()->string_view()
                              << "' (expected 'elf-shared-object')");
    }
    if (m->code() == nullptr || m->code()->size() == 0) return Status(Corrupt() << label << ": no code");
    STRATA_RETURN_IF_ERROR(VerifyAlternative(exe, i));
    // Even when the file's checksums were not verified: damaged machine code could crash the process.
    STRATA_RETURN_IF_ERROR(VerifyNativeCodeChecksum(bytes, exe, i));
  }
  for (uint32_t i = 0; i < SizeOf(exe.entry_points()); ++i) {
    int32_t index = exe.entry_points()->Get(i);
    if (index < 0 || static_cast<uint32_t>(index) >= num_functions) {
      return Status(Corrupt() << "entry_points[" << i << "]: function " << index << " out of range (" << num_functions
                              << " functions)");
    }
    const fb::Function* f = exe.functions()->Get(static_cast<uint32_t>(index));
    if (f->kind() != fb::FunctionKind::Bytecode) {
      return Status(Corrupt() << "entry_points[" << i << "]: " << FunctionLabel(static_cast<uint32_t>(index), f)
                              << " is not a bytecode function");
    }
    if (f->name() == nullptr || f->name()->size() == 0) {
      return Status(Corrupt() << "entry_points[" << i << "]: function " << index << " has no name");
    }
  }
  return Status::Ok();
}

}  // namespace strata::serialization
