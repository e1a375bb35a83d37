// Semantic and bytecode verification of a flatbuffers-verified executable.
#include "serialization/verifier.h"

#include <cctype>

#include <cstdio>
#include <span>
#include <string>
#include <vector>

#include "serialization/checksum.h"
#include "support/printable_text.h"
#include "support/data_type.h"
#include "vm/bytecode.h"

namespace strata::serialization {
namespace {

namespace fbs = ::flatbuffers;
using vm::DecodeOperandKind;
using vm::DecodeOperandValue;
using vm::Opcode;
using vm::OperandKind;

template <typename T>
uint32_t SizeOf(const fbs::Vector<T>* vec) {
  return vec ? vec->size() : 0;
}

template <typename T>
bool IsAligned(const fbs::Vector<T>* vec) {
  // flatbuffers does not align an empty vector (the shape of a 0-d tensor); no
  // element is ever read from it.
  return vec == nullptr || vec->size() == 0 || reinterpret_cast<uintptr_t>(vec->data()) % alignof(T) == 0;
}

std::string FunctionLabel(uint32_t index, const fb::Function* f) {
  std::string label = "functions[" + std::to_string(index) + "]";
  if (f->name() != nullptr && f->name()->size() > 0) label += " '" + PrintableText(f->name()->string_view(), 256) + "'";
  return label;
}

// Names end up in lookups and error messages: control bytes or broken UTF-8
// mean the file is damaged.
constexpr size_t kMaxNameBytes = 4096;

Status CheckName(const std::string& where, const char* what, const fbs::String* name) {
  if (name == nullptr || IsPrintableText(name->string_view(), kMaxNameBytes)) return Status::Ok();
  return Status(ErrorStatus() << where << ": " << what << " is not printable text or longer than " << kMaxNameBytes
                              << " bytes ('" << PrintableText(name->string_view(), 64) << "')");
}

bool IsValidElementType(uint8_t code, uint8_t bits) {
  switch (static_cast<DataType::Code>(code)) {
    case DataType::Code::kInt:
    case DataType::Code::kUInt:
      return bits == 8 || bits == 16 || bits == 32 || bits == 64;
    case DataType::Code::kFloat:
      return bits == 16 || bits == 32 || bits == 64;
    case DataType::Code::kBool:
      return bits == 1 || bits == 8;
    default:
      return false;
  }
}

std::string DataTypeText(uint8_t code, uint8_t bits) {
  return "(code " + std::to_string(code) + ", bits " + std::to_string(bits) + ")";
}

class FunctionVerifier {
 public:
  FunctionVerifier(const fb::Executable& exe, uint32_t index, const fb::Function* f)
      : exe_(exe), f_(f), label_(FunctionLabel(index, f)) {}

  Status Verify() {
    int32_t num_params = f_->num_params(), num_registers = f_->num_registers();
    if (num_registers < 0 || num_registers > kMaxRegisters) {
      return Status(ErrorStatus() << label_ << ": num_registers " << num_registers << " out of range (0 to "
                           << kMaxRegisters << ")");
    }
    if (num_params < 0 || num_params > num_registers) {
      return Status(ErrorStatus() << label_ << ": num_params " << num_params << " out of range (0 to num_registers "
                           << num_registers << ")");
    }
    if (f_->param_names() != nullptr && f_->param_names()->size() != static_cast<uint32_t>(num_params)) {
      return Status(ErrorStatus() << label_ << ": " << f_->param_names()->size() << " param_names for " << num_params
                           << " parameters");
    }
    const fbs::Vector<int64_t>* code = f_->code();
    if (code == nullptr || code->size() == 0) return Status(ErrorStatus() << label_ << ": bytecode function has no code");
    if (!IsAligned(code)) return Status(ErrorStatus() << label_ << ": code is not 8-byte aligned");
    code_ = code->data();
    size_ = code->size();
    num_registers_ = num_registers;
    boundary_.assign(size_, false);

    Opcode last = Opcode::kNumOpcodes;
    int64_t pc = 0;
    while (pc < size_) {
      boundary_[static_cast<size_t>(pc)] = true;
      int64_t words = 0;
      STRATA_RETURN_IF_ERROR(VerifyInstruction(pc, &last, &words));
      pc += words;
    }
    if (last != Opcode::kRet && last != Opcode::kGoto) {
      return Status(ErrorStatus() << label_ << ": the last instruction (" << vm::OpcodeName(last)
                           << ") falls off the end of the code; a function must end in ret or goto");
    }
    for (const Jump& jump : jumps_) {
      if (jump.offset < -jump.pc || jump.offset >= size_ - jump.pc) {
        return Status(ErrorStatus() << label_ << ": instruction at word " << jump.pc << " (" << vm::OpcodeName(jump.op)
                             << "): jump offset " << jump.offset << " lands outside the function (" << size_
                             << " words)");
      }
      int64_t target = jump.pc + jump.offset;
      if (!boundary_[static_cast<size_t>(target)]) {
        return Status(ErrorStatus() << label_ << ": instruction at word " << jump.pc << " (" << vm::OpcodeName(jump.op)
                             << "): jump target word " << target << " is not the start of an instruction");
      }
    }
    return Status::Ok();
  }

 private:
  struct Jump {
    int64_t pc;
    int64_t offset;
    Opcode op;
  };

  ErrorStatus At(int64_t pc, Opcode op) {
    ErrorStatus error;
    error << label_ << ": instruction at word " << pc << " (" << vm::OpcodeName(op) << "): ";
    return error;
  }

  Status CheckRegister(int64_t pc, Opcode op, int64_t reg, const char* what) {
    if (reg >= 0 && reg < num_registers_) return Status::Ok();
    return At(pc, op) << what << "register " << reg << " out of range (num_registers " << num_registers_ << ")";
  }

  Status VerifyInstruction(int64_t pc, Opcode* out_op, int64_t* out_words) {
    int64_t raw = code_[pc];
    if (raw < 0 || raw >= static_cast<int64_t>(Opcode::kNumOpcodes)) {
      return Status(ErrorStatus() << label_ << ": instruction at word " << pc << ": invalid opcode " << raw);
    }
    Opcode op = static_cast<Opcode>(raw);
    *out_op = op;
    int64_t fixed = vm::OpcodeFixedWords(op);
    int64_t left = size_ - pc;
    if (left < fixed) {
      return At(pc, op) << "truncated: needs " << fixed << " words, " << left << " left in the function";
    }
    switch (op) {
      case Opcode::kCall: {
        int64_t dst = code_[pc + 1], func = code_[pc + 2], nargs = code_[pc + 3];
        if (nargs < 0 || nargs > left - fixed) {
          return At(pc, op) << "truncated: " << nargs << " arguments but " << (left - fixed)
                            << " words left in the function";
        }
        if (dst != vm::kVoidRegister) STRATA_RETURN_IF_ERROR(CheckRegister(pc, op, dst, "destination "));
        uint32_t num_functions = SizeOf(exe_.functions());
        if (func < 0 || func >= static_cast<int64_t>(num_functions)) {
          return At(pc, op) << "function " << func << " out of range (" << num_functions << " functions)";
        }
        const fb::Function* callee = exe_.functions()->Get(static_cast<fbs::uoffset_t>(func));
        if (callee->kind() == fb::FunctionKind::Bytecode && nargs != callee->num_params()) {
          return At(pc, op) << "call to " << FunctionLabel(static_cast<uint32_t>(func), callee) << " passes "
                            << nargs << " arguments, it takes " << callee->num_params();
        }
        for (int64_t i = 0; i < nargs; ++i) STRATA_RETURN_IF_ERROR(VerifyOperand(pc, op, i, code_[pc + fixed + i]));
        *out_words = fixed + nargs;
        return Status::Ok();
      }
      case Opcode::kRet:
        STRATA_RETURN_IF_ERROR(CheckRegister(pc, op, code_[pc + 1], ""));
        break;
      case Opcode::kGoto:
        jumps_.push_back({pc, code_[pc + 1], op});
        break;
      case Opcode::kIf:
        STRATA_RETURN_IF_ERROR(CheckRegister(pc, op, code_[pc + 1], "condition "));
        jumps_.push_back({pc, code_[pc + 2], op});
        break;
      default:
        break;
    }
    *out_words = fixed;
    return Status::Ok();
  }

  Status VerifyOperand(int64_t pc, Opcode op, int64_t arg, int64_t word) {
    auto kind = static_cast<uint8_t>(DecodeOperandKind(word));
    int64_t value = DecodeOperandValue(word);
    switch (static_cast<OperandKind>(kind)) {
      case OperandKind::kRegister:
        if (value < 0 || value >= num_registers_) {
          return At(pc, op) << "argument " << arg << ": register " << value << " out of range (num_registers "
                            << num_registers_ << ")";
        }
        return Status::Ok();
      case OperandKind::kImmediate:
        return Status::Ok();
      case OperandKind::kConstant: {
        uint32_t n = SizeOf(exe_.constants());
        if (value < 0 || value >= static_cast<int64_t>(n)) {
          return At(pc, op) << "argument " << arg << ": constant " << value << " out of range (" << n
                            << " constants)";
        }
        return Status::Ok();
      }
      case OperandKind::kFunction: {
        uint32_t n = SizeOf(exe_.functions());
        if (value < 0 || value >= static_cast<int64_t>(n)) {
          return At(pc, op) << "argument " << arg << ": function " << value << " out of range (" << n
                            << " functions)";
        }
        return Status::Ok();
      }
    }
    return At(pc, op) << "argument " << arg << ": invalid operand kind " << static_cast<int>(kind);
  }

  const fb::Executable& exe_;
  const fb::Function* f_;
  std::string label_;
  const int64_t* code_ = nullptr;
  int64_t size_ = 0;
  int64_t num_registers_ = 0;
  std::vector<bool> boundary_;
  std::vector<Jump> jumps_;
};

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
      return Status(ErrorStatus() << at << ": storage " << t->storage() << " out of range (" << num_storages
                                  << " storages)");
    }
    if (t->offset() < 0) return Status(ErrorStatus() << at << ": negative offset " << t->offset());
  }
  for (uint32_t i = 0; i < SizeOf(plan->pooled()); ++i) {
    STRATA_RETURN_IF_ERROR(CheckName(where, ("pooled[" + std::to_string(i) + "]").c_str(), plan->pooled()->Get(i)));
  }
  for (uint32_t i = 0; i < SizeOf(plan->bounds()); ++i) {
    STRATA_RETURN_IF_ERROR(CheckName(where, ("bounds[" + std::to_string(i) + "]").c_str(), plan->bounds()->Get(i)));
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
      STRATA_RETURN_IF_ERROR(CheckName(label, ("param_names[" + std::to_string(i) + "]").c_str(),
                                       f->param_names()->Get(i)));
    }
  }
  if (f->memory_plan() != nullptr) STRATA_RETURN_IF_ERROR(VerifyMemoryPlan(label, f->memory_plan()));
  switch (f->kind()) {
    case fb::FunctionKind::Bytecode:
      return FunctionVerifier(exe, index, f).Verify();
    case fb::FunctionKind::Kernel: {
      uint32_t n = SizeOf(exe.native_modules());
      if (f->module_index() < 0 || static_cast<uint32_t>(f->module_index()) >= n) {
        return Status(ErrorStatus() << label << ": kernel module_index " << f->module_index() << " out of range (" << n
                             << " native modules)");
      }
      if (f->symbol() == nullptr || f->symbol()->size() == 0) {
        return Status(ErrorStatus() << label << ": kernel has no symbol");
      }
      return Status::Ok();
    }
    case fb::FunctionKind::Library:
      if (f->name() == nullptr || f->name()->size() == 0) {
        return Status(ErrorStatus() << label << ": library function has no name");
      }
      return Status::Ok();
    case fb::FunctionKind::Device: {
      uint32_t n = SizeOf(exe.devices());
      if (f->device_index() < 0 || static_cast<uint32_t>(f->device_index()) >= n) {
        return Status(ErrorStatus() << label << ": device_index " << f->device_index() << " out of range (" << n
                                    << " devices)");
      }
      if (f->symbol() == nullptr || f->symbol()->size() == 0) {
        return Status(ErrorStatus() << label << ": device function has no kernel name (symbol)");
      }
      return Status::Ok();
    }
  }
  return Status(ErrorStatus() << label << ": invalid function kind " << static_cast<int>(f->kind()));
}

Status VerifyConstant(uint32_t index, const fb::Constant* c) {
  std::string label = "constants[" + std::to_string(index) + "]";
  switch (c->value_type()) {
    case fb::ConstantValue::NONE:
      return Status(ErrorStatus() << label << ": missing value");
    case fb::ConstantValue::TensorConstant: {
      const fb::TensorConstant* t = c->value_as_TensorConstant();
      if (t == nullptr) return Status(ErrorStatus() << label << ": missing tensor");
      if (!IsValidElementType(t->dtype_code(), t->dtype_bits())) {
        return Status(ErrorStatus() << label << ": invalid tensor dtype " << DataTypeText(t->dtype_code(), t->dtype_bits()));
      }
      if (!IsAligned(t->shape())) return Status(ErrorStatus() << label << ": shape is not 8-byte aligned");
      int64_t count = 1;
      constexpr int64_t kMax = int64_t{1} << 62;
      for (uint32_t i = 0; i < SizeOf(t->shape()); ++i) {
        int64_t d = t->shape()->Get(i);
        if (d < 0) return Status(ErrorStatus() << label << ": tensor dimension " << i << " is negative (" << d << ")");
        if (d != 0 && count > kMax / d) return Status(ErrorStatus() << label << ": tensor shape is too large");
        count *= d;
      }
      DataType dtype(static_cast<DataType::Code>(t->dtype_code()), t->dtype_bits());
      int64_t want = count * dtype.bytes();
      if (count > kMax / 8 || static_cast<int64_t>(SizeOf(t->data())) != want) {
        return Status(ErrorStatus() << label << ": tensor data has " << SizeOf(t->data()) << " bytes, expected " << want
                             << " (" << count << " elements of " << dtype.ToString() << ")");
      }
      return Status::Ok();
    }
    case fb::ConstantValue::ShapeConstant:
      if (c->value_as_ShapeConstant() == nullptr) return Status(ErrorStatus() << label << ": missing shape");
      if (!IsAligned(c->value_as_ShapeConstant()->dims())) {
        return Status(ErrorStatus() << label << ": shape is not 8-byte aligned");
      }
      return Status::Ok();
    case fb::ConstantValue::IntConstant:
      if (c->value_as_IntConstant() == nullptr) return Status(ErrorStatus() << label << ": missing int");
      return Status::Ok();
    case fb::ConstantValue::FloatConstant:
      if (c->value_as_FloatConstant() == nullptr) return Status(ErrorStatus() << label << ": missing float");
      return Status::Ok();
    case fb::ConstantValue::StringConstant:
      if (c->value_as_StringConstant() == nullptr) return Status(ErrorStatus() << label << ": missing string");
      return Status::Ok();
    case fb::ConstantValue::DataTypeConstant: {
      const fb::DataTypeConstant* d = c->value_as_DataTypeConstant();
      if (d == nullptr) return Status(ErrorStatus() << label << ": missing dtype");
      bool handle = d->code() == static_cast<uint8_t>(DataType::Code::kHandle) && (d->bits() == 0 || d->bits() == 64);
      if (!handle && !IsValidElementType(d->code(), d->bits())) {
        return Status(ErrorStatus() << label << ": invalid dtype " << DataTypeText(d->code(), d->bits()));
      }
      return Status::Ok();
    }
  }
  return Status(ErrorStatus() << label << ": unknown constant type " << static_cast<int>(c->value_type()));
}

// Device requirements: a plug-in name the loader can turn into a file name.
Status VerifyDevice(uint32_t index, const fb::DeviceRequirement* d) {
  const std::string label = "devices[" + std::to_string(index) + "]";
  if (d->name() == nullptr || d->name()->size() == 0) return Status(ErrorStatus() << label << ": device has no name");
  for (char c : d->name()->string_view()) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) {
      return Status(ErrorStatus() << label << ": device name '" << PrintableText(d->name()->string_view(), 64)
                                  << "' may only hold letters, digits and '_'");
    }
  }
  STRATA_RETURN_IF_ERROR(CheckName(label, "name", d->name()));
  return CheckName(label, "options", d->options());
}

}  // namespace

Status VerifyExecutableSemantics(const fb::Executable& exe) {
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
      return Status(ErrorStatus() << label << ": unsupported format '" << m->format()->string_view()
                           << "' (expected 'elf-shared-object')");
    }
    if (m->code() == nullptr || m->code()->size() == 0) return Status(ErrorStatus() << label << ": no code");
    if (!m->code_crc32().has_value()) return Status(ErrorStatus() << label << ": no code checksum (code_crc32)");
    uint32_t computed = CodeChecksum(std::span<const uint8_t>(m->code()->data(), m->code()->size()));
    if (computed != *m->code_crc32()) {
      char text[96];
      std::snprintf(text, sizeof(text), "code checksum mismatch (stored 0x%08x, computed 0x%08x)", *m->code_crc32(),
                    computed);
      return Status(ErrorStatus() << label << ": " << text << "; the file is damaged");
    }
  }
  for (uint32_t i = 0; i < SizeOf(exe.entry_points()); ++i) {
    int32_t index = exe.entry_points()->Get(i);
    if (index < 0 || static_cast<uint32_t>(index) >= num_functions) {
      return Status(ErrorStatus() << "entry_points[" << i << "]: function " << index << " out of range (" << num_functions
                           << " functions)");
    }
    const fb::Function* f = exe.functions()->Get(static_cast<uint32_t>(index));
    if (f->kind() != fb::FunctionKind::Bytecode) {
      return Status(ErrorStatus() << "entry_points[" << i << "]: " << FunctionLabel(static_cast<uint32_t>(index), f)
                           << " is not a bytecode function");
    }
    if (f->name() == nullptr || f->name()->size() == 0) {
      return Status(ErrorStatus() << "entry_points[" << i << "]: function " << index << " has no name");
    }
  }
  return Status::Ok();
}

}  // namespace strata::serialization
