// Test helpers: assemble bytecode with labels and build ExecutableSpecs in C++.
//
// There is no compiler in the runtime tests; programs are written as
//   CodeBuilder code;
//   code.Call(1, lib_add, {R(0), Imm(1)}).If(1, "done").Goto("loop").Label("done").Ret(1);
// and collected into an ExecutableSpec with ExecutableBuilder.
#pragma once

#include <cassert>
#include <map>
#include <string>
#include <vector>

#include "serialization/executable_spec.h"
#include "serialization/writer.h"
#include "vm/bytecode/bytecode.h"
#include "vm/bytecode/encoder.h"

namespace strata::testing {

inline int64_t R(int64_t reg) { return vm::EncodeOperand(vm::OperandKind::kRegister, reg); }
inline int64_t Imm(int64_t value) { return vm::EncodeOperand(vm::OperandKind::kImmediate, value); }
inline int64_t C(int64_t index) { return vm::EncodeOperand(vm::OperandKind::kConstant, index); }
inline int64_t Fn(int64_t index) { return vm::EncodeOperand(vm::OperandKind::kFunction, index); }
inline constexpr int64_t kVoid = vm::kVoidRegister;

// Labels on top of vm::BytecodeEncoder: jumps name their target, resolved by Build.
class CodeBuilder {
 public:
  CodeBuilder& Call(int64_t dst, int64_t func, const std::vector<int64_t>& operands) {
    code_.Call(dst, func, operands);
    return *this;
  }
  CodeBuilder& Ret(int64_t reg) {
    code_.Ret(reg);
    return *this;
  }
  CodeBuilder& Goto(const std::string& label) {
    fixups_.push_back({code_.Goto(), label});
    return *this;
  }
  // if R[reg] is false jump to `else_label`, otherwise fall through.
  CodeBuilder& If(int64_t reg, const std::string& else_label) {
    fixups_.push_back({code_.If(reg), else_label});
    return *this;
  }
  CodeBuilder& Label(const std::string& name) {
    labels_[name] = size();
    return *this;
  }
  // Raw words, for deliberately broken code.
  CodeBuilder& Words(const std::vector<int64_t>& words) {
    code_.AppendRaw(words);
    return *this;
  }
  int64_t size() const { return code_.size(); }

  std::vector<int64_t> Build() const {
    vm::BytecodeEncoder out = code_;
    for (const Fixup& f : fixups_) {
      auto it = labels_.find(f.label);
      assert(it != labels_.end() && "undefined label");
      out.PatchJump(f.jump, it->second);
    }
    return std::move(out).Take();
  }

 private:
  struct Fixup {
    vm::BytecodeEncoder::PendingJump jump;
    std::string label;
  };
  vm::BytecodeEncoder code_;
  std::vector<Fixup> fixups_;
  std::map<std::string, int64_t> labels_;
};

class ExecutableBuilder {
 public:
  // A library function entry (deduplicated by name); returns its function index.
  int32_t Library(const std::string& name) {
    auto it = library_.find(name);
    if (it != library_.end()) return it->second;
    serialization::FunctionSpec f;
    f.name = name;
    f.kind = serialization::FunctionKindSpec::kLibrary;
    int32_t index = Add(std::move(f));
    library_[name] = index;
    return index;
  }
  // Reserves a bytecode function (so others can call it before it is defined).
  int32_t Declare(const std::string& name, std::vector<std::string> params, int32_t num_registers,
                  bool entry_point = true) {
    serialization::FunctionSpec f;
    f.name = name;
    f.kind = serialization::FunctionKindSpec::kBytecode;
    f.num_params = static_cast<int32_t>(params.size());
    f.param_names = std::move(params);
    f.num_registers = num_registers;
    f.code = {static_cast<int64_t>(vm::Opcode::kRet), 0};
    int32_t index = Add(std::move(f));
    if (entry_point) spec.entry_points.push_back(index);
    return index;
  }
  void Define(int32_t index, const CodeBuilder& code) {
    spec.functions[static_cast<size_t>(index)].code = code.Build();
  }
  int32_t Bytecode(const std::string& name, std::vector<std::string> params, int32_t num_registers,
                   const CodeBuilder& code, bool entry_point = true) {
    int32_t index = Declare(name, std::move(params), num_registers, entry_point);
    Define(index, code);
    return index;
  }
  int32_t Kernel(const std::string& name, int32_t module_index, const std::string& symbol) {
    serialization::FunctionSpec f;
    f.name = name;
    f.kind = serialization::FunctionKindSpec::kCompiledKernel;
    f.module_index = module_index;
    f.symbol = symbol;
    return Add(std::move(f));
  }
  // Each alternative built in place: moving a whole ConstantSpec variant trips
  // GCC 12's -Wmaybe-uninitialized on the alternatives it does not hold.
  template <typename T>
  int32_t Constant(T value) {
    spec.constants.emplace_back(std::in_place_type<T>, std::move(value));
    return static_cast<int32_t>(spec.constants.size() - 1);
  }
  int32_t Constant(serialization::ConstantSpec c) {
    spec.constants.push_back(std::move(c));
    return static_cast<int32_t>(spec.constants.size() - 1);
  }
  int32_t String(const std::string& s) { return Constant(s); }
  int32_t Int(int64_t v) { return Constant(v); }
  int32_t DType(DataType dtype) { return Constant(serialization::DataTypeConstantSpec{dtype}); }
  int32_t Shape(std::vector<int64_t> dims) { return Constant(serialization::ShapeConstantSpec{std::move(dims)}); }
  template <typename T>
  int32_t Tensor(DataType dtype, std::vector<int64_t> shape, const std::vector<T>& values) {
    serialization::TensorConstantSpec t;
    t.dtype = dtype;
    t.shape = std::move(shape);
    const auto* p = reinterpret_cast<const uint8_t*>(values.data());
    t.data = std::make_shared<const std::vector<uint8_t>>(p, p + values.size() * sizeof(T));
    return Constant(std::move(t));
  }

  std::vector<uint8_t> Write() const { return serialization::WriteExecutable(spec); }

  serialization::ExecutableSpec spec;

 private:
  int32_t Add(serialization::FunctionSpec f) {
    spec.functions.push_back(std::move(f));
    return static_cast<int32_t>(spec.functions.size() - 1);
  }
  std::map<std::string, int32_t> library_;
};

}  // namespace strata::testing
