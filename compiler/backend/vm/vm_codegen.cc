// VM codegen: lowered graph functions -> bytecode (see vm_codegen.h).
//
// A ModuleContext owns what the functions share (the function table and the
// deduplicated constant pool); a FunctionEmitter walks one graph function in
// program order and appends Call / If / Goto / Ret instructions.
#include "compiler/backend/vm/vm_codegen.h"

#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "abi/builtin_names.h"
#include "compiler/analysis/graph_util.h"
#include "compiler/analysis/memory_ops.h"
#include "compiler/analysis/struct_info_util.h"
#include "compiler/ir/graph_visitor.h"
#include "compiler/ir/printer.h"
#include "serialization/checksum.h"
#include "support/printable_text.h"
#include "vm/bytecode/bytecode.h"
#include "vm/bytecode/encoder.h"

namespace strata::backend {

namespace builtin = vm::builtin;
namespace memory_ops = analysis::memory_ops;

using namespace graph;  // NOLINT: a graph-level backend
using serialization::ConstantSpec;
using serialization::FunctionKindSpec;
using serialization::FunctionSpec;
using vm::EncodeOperand;
using vm::OperandKind;

namespace {

class ModuleContext {
 public:
  explicit ModuleContext(const ir::IRModule& module) : module_(module) {
    bool has_kernels = false;
    for (const auto& [name, func] : module.functions())
      has_kernels = has_kernels || std::holds_alternative<tir::PrimFunc>(func);
    // Native code of BYOC backends follows the compiled tensor programs (module 0).
    int32_t next_module = has_kernels ? 1 : 0;
    for (const ir::ExternalModule& m : module.external_modules()) {
      const bool native = m.format != "library" && m.format != "device";
      external_module_index_.push_back(native ? next_module : -1);
      if (native) ++next_module;
    }
    // Graph functions, then tensor programs; libraries are appended on first use.
    for (const auto& [name, func] : module.functions()) {
      if (!std::holds_alternative<Function>(func)) continue;
      index_[name] = static_cast<int64_t>(spec.functions.size());
      spec.entry_points.push_back(static_cast<int32_t>(spec.functions.size()));
      FunctionSpec fn;
      fn.name = name;
      fn.kind = FunctionKindSpec::kBytecode;
      spec.functions.push_back(std::move(fn));
    }
    for (const auto& [name, func] : module.functions()) {
      if (!std::holds_alternative<tir::PrimFunc>(func)) continue;
      index_[name] = static_cast<int64_t>(spec.functions.size());
      FunctionSpec fn;
      fn.name = name;
      fn.kind = FunctionKindSpec::kCompiledKernel;
      fn.module_index = 0;
      fn.symbol = name;
      spec.functions.push_back(std::move(fn));
    }
  }

  // Index of a graph function or tensor program, or -1.
  int64_t FunctionIndex(const std::string& name) const {
    auto it = index_.find(name);
    return it == index_.end() ? -1 : it->second;
  }

  int64_t LibraryIndex(const std::string& name) {
    auto it = libraries_.find(name);
    if (it != libraries_.end()) return it->second;
    int64_t index = static_cast<int64_t>(spec.functions.size());
    FunctionSpec fn;
    fn.name = name;
    fn.kind = FunctionKindSpec::kLibrary;
    // A function of a BYOC backend: a library function of the runtime, or a
    // kernel-ABI function of the native code the backend generated.
    const auto& externals = module_.external_modules();
    for (size_t m = 0; m < externals.size(); ++m) {
      bool exported = false;
      for (const std::string& symbol : externals[m].symbols) exported = exported || symbol == name;
      if (!exported) continue;
      fn.backend = externals[m].backend;
      if (externals[m].format == "device") {
        // "sim_npu:dense": kernel "dense" of the plugged-in device "sim_npu".
        fn.kind = FunctionKindSpec::kDevice;
        fn.device_index = DeviceIndex(externals[m].backend);
        fn.symbol = name.substr(name.find(':') + 1);
      } else if (external_module_index_[m] >= 0) {
        fn.kind = FunctionKindSpec::kCompiledKernel;
        fn.module_index = external_module_index_[m];
        fn.symbol = name;
      }
      break;
    }
    spec.functions.push_back(std::move(fn));
    libraries_.emplace(name, index);
    return index;
  }

  // Index of `device` in the executable's devices table (added on first use).
  int32_t DeviceIndex(const std::string& device) {
    for (size_t i = 0; i < spec.devices.size(); ++i) {
      if (spec.devices[i].name == device) return static_cast<int32_t>(i);
    }
    spec.devices.push_back({device, ""});
    return static_cast<int32_t>(spec.devices.size() - 1);
  }

  // Index of `value` in the constant pool; equal constants share one entry.
  // A tensor's key holds a hash of its data, not the data (GPT-2's keys were
  // another 500 MB); entries with the same key are compared in full.
  int64_t Constant(ConstantSpec value) {
    std::string key = Key(value);
    auto [first, last] = constants_.equal_range(key);
    for (auto it = first; it != last; ++it) {
      if (SameData(spec.constants[static_cast<size_t>(it->second)], value)) return it->second;
    }
    int64_t index = static_cast<int64_t>(spec.constants.size());
    spec.constants.push_back(std::move(value));
    constants_.emplace(std::move(key), index);
    return index;
  }

  serialization::ExecutableSpec spec;

 private:
  const ir::IRModule& module_;
  std::vector<int32_t> external_module_index_;  // per external module: its native module, or -1
  // Whether two constants with the same key are equal: only tensors' keys
  // leave out part of the value.
  static bool SameData(const ConstantSpec& a, const ConstantSpec& b) {
    const auto* ta = std::get_if<serialization::TensorConstantSpec>(&a);
    const auto* tb = std::get_if<serialization::TensorConstantSpec>(&b);
    return ta == nullptr || tb == nullptr || ta->data == tb->data || ta->bytes() == tb->bytes();
  }
  static std::string Key(const ConstantSpec& value) {
    std::string key(1, static_cast<char>('0' + value.index()));
    auto append = [&key](const void* data, size_t size) { key.append(static_cast<const char*>(data), size); };
    auto append_dtype = [&](DataType d) {
      key += static_cast<char>(d.code());
      key += static_cast<char>(d.bits());
    };
    if (const auto* t = std::get_if<serialization::TensorConstantSpec>(&value)) {
      append_dtype(t->dtype);
      int64_t ndim = static_cast<int64_t>(t->shape.size());
      append(&ndim, sizeof(ndim));
      append(t->shape.data(), t->shape.size() * sizeof(int64_t));
      const uint64_t size = t->bytes().size(), hash = serialization::Xxh3(t->bytes());
      append(&size, sizeof(size));
      append(&hash, sizeof(hash));
    } else if (const auto* s = std::get_if<serialization::ShapeConstantSpec>(&value)) {
      append(s->dims.data(), s->dims.size() * sizeof(int64_t));
    } else if (const auto* i = std::get_if<int64_t>(&value)) {
      append(i, sizeof(*i));
    } else if (const auto* f = std::get_if<double>(&value)) {
      append(f, sizeof(*f));  // by bit pattern: 0.0 and -0.0 stay distinct
    } else if (const auto* str = std::get_if<std::string>(&value)) {
      key += *str;
    } else if (const auto* d = std::get_if<serialization::DataTypeConstantSpec>(&value)) {
      append_dtype(d->dtype);
    }
    return key;
  }

  std::map<std::string, int64_t> index_;
  std::map<std::string, int64_t> libraries_;
  std::multimap<std::string, int64_t> constants_;
};

// Variables that are read somewhere: the results of calls bound to anything
// else are discarded (kVoidRegister).
class UseCollector : public ExprVisitor {
 public:
  std::set<const VarNode*> used;

 protected:
  void VisitVar(const VarNode* op) override { used.insert(op); }
};

// The memory plan PlanMemory left in the lowered function, read back from its
// memory.alloc_storage / memory.alloc_tensor / alloc_tensor / memory.check_bound
// calls for `strata inspect` (executable.fbs: MemoryPlan).
class MemoryPlanCollector : public ExprVisitor {
 public:
  serialization::MemoryPlanSpec plan;

 protected:
  void VisitBinding(const Binding& binding) override {
    ExprVisitor::VisitBinding(binding);
    const auto* call = binding.value.as<CallNode>();
    if (!call) return;
    const std::string type = analysis::StructInfoText(binding.var->struct_info);
    const std::vector<Expr>& args = call->args;
    if (analysis::IsOpCall(call, ops::kAllocTensor)) {
      plan.pooled.push_back(binding.var->name + ": " + type);
    } else if (analysis::IsOpCall(call, memory_ops::kAllocStorage) && !args.empty()) {
      serialization::PlannedStorageSpec storage;
      storage.name = binding.var->name;
      if (const auto* value = args[0].as<PrimValueNode>(); value && tir::AsConstInt(value->value)) {
        storage.static_bytes = *tir::AsConstInt(value->value);
        storage.size = std::to_string(storage.static_bytes);
      } else if (const auto* shape = args[0]->struct_info.as<ShapeStructInfoNode>();
                 shape && shape->values && shape->values->size() == 1) {
        storage.size = analysis::DimText((*shape->values)[0]);
      } else {
        storage.size = "?";
      }
      if (const std::string* device = analysis::TargetDevice(*call)) storage.device = *device;
      storages_[binding.var.get()] = static_cast<int32_t>(plan.storages.size());
      plan.storages.push_back(std::move(storage));
    } else if (analysis::IsOpCall(call, memory_ops::kAllocTensor) && args.size() == 4) {
      const auto* storage = args[0].as<VarNode>();
      const auto* offset = args[1].as<PrimValueNode>();
      auto it = storage ? storages_.find(storage) : storages_.end();
      if (it == storages_.end() || !offset || !tir::AsConstInt(offset->value)) return;
      plan.tensors.push_back({binding.var->name, type, it->second, *tir::AsConstInt(offset->value)});
    } else if (analysis::IsOpCall(call, memory_ops::kCheckBound) && args.size() == 4) {
      const auto* shape = args[0]->struct_info.as<ShapeStructInfoNode>();
      const auto* lo = args[1].as<PrimValueNode>();
      const auto* hi = args[2].as<PrimValueNode>();
      if (!shape || !shape->values || shape->values->size() != 1 || !lo || !hi) return;
      plan.bounds.push_back(analysis::DimText((*shape->values)[0]) + " = " + analysis::DimText(lo->value) + ".." +
                            analysis::DimText(hi->value));
    }
  }

 private:
  std::map<const VarNode*, int32_t> storages_;
};

// The builtin a graph-level memory or device operator lowers to (the same
// arguments, a device named by its index in the executable's devices table), or
// nullptr.
const char* MemoryOpBuiltin(const std::string& op) {
  static const std::map<std::string, const char*> kLowering = {
      {memory_ops::kAllocStorage, builtin::kAllocStorage},
      {memory_ops::kAllocTensor, builtin::kAllocTensorFromStorage},
      {memory_ops::kCheckBound, builtin::kCheckBound},
      {memory_ops::kAllocDeviceTensor, builtin::kAllocDeviceTensor},
      {memory_ops::kToDevice, builtin::kToDevice},
      {memory_ops::kToHost, builtin::kToHost},
  };
  auto it = kLowering.find(op);
  return it == kLowering.end() ? nullptr : it->second;
}

// An annotation as the executable records it (executable.fbs: ValueSignature), in
// the text IR's syntax. False when tuples nest deeper than a file may hold.
bool ToValueSignature(const StructInfo& sinfo, int depth, serialization::ValueSignatureSpec* out) {
  if (depth > serialization::kMaxSignatureDepth) return false;
  // A value nothing is known about is an Object, whether or not the IR says so.
  const StructInfo known = sinfo.defined() ? sinfo : ObjectStructInfoNode::make();
  out->text = analysis::StructInfoText(known);
  auto set_dims = [&](const std::optional<std::vector<PrimExpr>>& dims, int ndim) {
    out->ndim = dims ? static_cast<int32_t>(dims->size()) : ndim;
    if (dims) {
      for (const PrimExpr& dim : *dims) out->dims.push_back(analysis::DimText(dim));
    }
  };
  switch (known->kind) {
    case StructInfoKind::kObject: out->kind = "object"; return true;
    case StructInfoKind::kPrim: {
      out->kind = "prim";
      const DataType dtype = known.as<PrimStructInfoNode>()->dtype;
      if (!dtype.is_void()) out->dtype = dtype.ToString();
      return true;
    }
    case StructInfoKind::kShape: {
      out->kind = "shape";
      const auto* shape = known.as<ShapeStructInfoNode>();
      set_dims(shape->values, shape->ndim);
      return true;
    }
    case StructInfoKind::kTensor: {
      out->kind = "tensor";
      const auto* tensor = known.as<TensorStructInfoNode>();
      if (!tensor->dtype.is_void()) out->dtype = tensor->dtype.ToString();
      set_dims(tensor->shape, tensor->ndim);
      return true;
    }
    case StructInfoKind::kTuple: {
      out->kind = "tuple";
      for (const StructInfo& field : known.as<TupleStructInfoNode>()->fields) {
        if (!ToValueSignature(field, depth + 1, &out->fields.emplace_back())) return false;
      }
      return true;
    }
  }
  return false;
}

class FunctionEmitter {
 public:
  explicit FunctionEmitter(ModuleContext* ctx) : ctx_(ctx) {}

  Status Emit(const std::string& name, const FunctionNode& func, FunctionSpec* out) {
    name_ = name;
    UseCollector uses;
    uses.VisitExpr(func.body);
    used_ = std::move(uses.used);
    num_params_ = static_cast<int64_t>(func.params.size());
    for (const Var& param : func.params) {
      int64_t reg = NewRegister();
      vars_[param.get()] = Register(reg);
      out->param_names.push_back(param->name);
    }
    int64_t result = EmitValue(func.body, /*discard=*/false);
    int64_t reg = ToRegister(result);
    code_.Ret(reg);
    if (!error_.ok()) return error_;
    out->num_params = static_cast<int32_t>(func.params.size());
    out->num_registers = static_cast<int32_t>(num_registers_);
    out->code = std::move(code_).Take();
    MemoryPlanCollector plan;
    plan.VisitExpr(func.body);
    out->memory_plan = std::move(plan.plan);
    return EmitSignature(func, out);
  }

 private:
  // The parameters' and the result's annotations, so a runtime can say what the function takes.
  Status EmitSignature(const FunctionNode& func, FunctionSpec* out) const {
    serialization::SignatureSpec sig;
    auto too_deep = [&](const std::string& what) {
      return Status::Error("VM codegen: function '" + name_ + "': " + what + " nests tuples more than " +
                           std::to_string(serialization::kMaxSignatureDepth) + " levels deep");
    };
    for (const Var& param : func.params) {
      if (!ToValueSignature(param->struct_info, 1, &sig.params.emplace_back())) {
        return too_deep("parameter '" + param->name + "'");
      }
    }
    // A function without a declared result type returns what its body computes.
    const StructInfo& result = func.ret_struct_info.defined() ? func.ret_struct_info : func.body->struct_info;
    if (!ToValueSignature(result, 1, &sig.result)) return too_deep("the result");
    const bool tuple = sig.result.kind == "tuple";
    const size_t num_outputs = tuple ? sig.result.fields.size() : 1;
    STRATA_ASSIGN_OR_RETURN(sig.input_names, ModelNames(func.attrs, "input_names", func.params.size(),
                                                        func.params.size() == 1 ? "parameter" : "parameters"));
    STRATA_ASSIGN_OR_RETURN(
        sig.output_names,
        ModelNames(func.attrs, "output_names", num_outputs,
                   tuple ? (num_outputs == 1 ? "result tuple field" : "result tuple fields") : "result (not a tuple)"));
    out->signature = std::move(sig);
    return Status::Ok();
  }

  // The model's own names of the parameters or of the result tensors (the function's
  // attr `key`: input_names / output_names, from the ONNX importer or written by hand),
  // or none when the attr is absent. A server looks tensors up by these names, so
  // there is one per parameter or result tensor (`count`, described by `what`), each
  // non-empty and distinct, and printable, as the executable's verifier requires.
  StatusOr<std::vector<std::string>> ModelNames(const ir::Attrs& attrs, const std::string& key, size_t count,
                                                const std::string& what) const {
    auto it = attrs.find(key);
    if (it == attrs.end()) return std::vector<std::string>{};
    const std::string where = "VM codegen: function '" + name_ + "': attr '" + key + "'";
    std::optional<std::vector<std::string>> names = ir::StringList(it->second);
    if (!names) return Status::Error(where + " must be a list of strings, got " + ir::PrintAttrValue(it->second));
    if (names->size() != count) {
      return Status::Error(where + " has " + std::to_string(names->size()) + (names->size() == 1 ? " name" : " names") +
                           " for " + std::to_string(count) + " " + what);
    }
    std::map<std::string, size_t> seen;
    for (size_t i = 0; i < names->size(); ++i) {
      const std::string& n = (*names)[i];
      const std::string at = where + ": name " + std::to_string(i);
      if (n.empty()) return Status::Error(at + " is empty");
      if (!IsPrintableText(n, serialization::kMaxNameBytes)) {
        return Status::Error(at + " '" + PrintableText(n, 64) + "' is not printable text or longer than " +
                             std::to_string(serialization::kMaxNameBytes) + " bytes");
      }
      auto [previous, inserted] = seen.emplace(n, i);
      if (!inserted) {
        return Status::Error(at + " '" + PrintableText(n, 64) + "' repeats name " + std::to_string(previous->second));
      }
    }
    return *std::move(names);
  }

  static int64_t Register(int64_t index) { return EncodeOperand(OperandKind::kRegister, index); }

  int64_t NewRegister() { return num_registers_++; }

  void Fail(const std::string& message) {
    if (!error_.ok()) return;
    std::string context = "function '" + name_ + "'";
    if (binding_ != nullptr) context += ", binding '" + binding_->var->name + "'";
    error_ = Status::Error("VM codegen: " + context + ": " + message);
    if (binding_ != nullptr && binding_->location) error_ = std::move(error_).WithLocation(*binding_->location);
  }

  void EmitCall(int64_t dst, int64_t func, const std::vector<int64_t>& operands) { code_.Call(dst, func, operands); }

  // A register holding `operand` (copied into a new one unless it is a register).
  int64_t ToRegister(int64_t operand) {
    if (vm::DecodeOperandKind(operand) == OperandKind::kRegister) return vm::DecodeOperandValue(operand);
    int64_t reg = NewRegister();
    EmitCall(reg, ctx_->LibraryIndex(builtin::kCopy), {operand});
    return reg;
  }

  int64_t Immediate(int64_t value) {
    if (value >= vm::kMinImmediate && value <= vm::kMaxImmediate) {
      return EncodeOperand(OperandKind::kImmediate, value);
    }
    return EncodeOperand(OperandKind::kConstant, ctx_->Constant(ConstantSpec(value)));
  }

  int64_t Constant(ConstantSpec value) {
    return EncodeOperand(OperandKind::kConstant, ctx_->Constant(std::move(value)));
  }

  // Emits the code computing `expr` and returns the operand holding its value.
  // With `discard`, a call's result is not kept (the value is never read).
  int64_t EmitValue(const Expr& expr, bool discard) {
    switch (expr->kind) {
      case ExprKind::kVar: {
        auto it = vars_.find(expr.as<VarNode>());
        if (it != vars_.end()) return it->second;
        Fail("variable '" + expr.as<VarNode>()->name + "' is used before its definition");
        return Register(0);
      }
      case ExprKind::kGlobalVar: {
        int64_t index = ctx_->FunctionIndex(expr.as<GlobalVarNode>()->name);
        if (index < 0) Fail("@" + expr.as<GlobalVarNode>()->name + " is not a function of the module");
        return EncodeOperand(OperandKind::kFunction, index < 0 ? 0 : index);
      }
      case ExprKind::kExternFunc:
        return EncodeOperand(OperandKind::kFunction, ctx_->LibraryIndex(expr.as<ExternFuncNode>()->name));
      case ExprKind::kOp: Fail("operator '" + expr.as<OpNode>()->name + "' used as a value"); return Register(0);
      case ExprKind::kConstant: {
        // The spec shares the constant's bytes (the module outlives the spec's use).
        const std::shared_ptr<const HostTensor>& data = expr.as<ConstantNode>()->data;
        return Constant(serialization::TensorConstantSpec{
            data->dtype, data->shape, std::shared_ptr<const std::vector<uint8_t>>(data, &data->bytes)});
      }
      case ExprKind::kShapeExpr: {
        serialization::ShapeConstantSpec shape;
        for (const PrimExpr& d : expr.as<ShapeExprNode>()->values) {
          const int64_t* c = tir::AsConstInt(d);
          if (!c) {
            Fail("symbolic shape dimension " + analysis::DimText(d) + " in a value; run VMShapeLower first");
            return Register(0);
          }
          shape.dims.push_back(*c);
        }
        return Constant(std::move(shape));
      }
      case ExprKind::kPrimValue: {
        const PrimExpr& value = expr.as<PrimValueNode>()->value;
        if (const int64_t* i = tir::AsConstInt(value)) return Immediate(*i);
        if (const auto* f = value.as<tir::FloatImmNode>()) return Constant(ConstantSpec(f->value));
        Fail("symbolic scalar " + analysis::DimText(value) + " in a value; run VMShapeLower first");
        return Register(0);
      }
      case ExprKind::kStringImm: return Constant(ConstantSpec(expr.as<StringImmNode>()->value));
      case ExprKind::kDataTypeImm:
        return Constant(serialization::DataTypeConstantSpec{expr.as<DataTypeImmNode>()->value});
      case ExprKind::kTuple: {
        std::vector<int64_t> fields;
        for (const Expr& f : expr.as<TupleNode>()->fields) fields.push_back(EmitValue(f, false));
        int64_t dst = NewRegister();
        EmitCall(dst, ctx_->LibraryIndex(builtin::kTuple), fields);
        return Register(dst);
      }
      case ExprKind::kTupleGetItem: {
        const auto* op = expr.as<TupleGetItemNode>();
        int64_t tuple = EmitValue(op->tuple, false);
        int64_t dst = NewRegister();
        EmitCall(dst, ctx_->LibraryIndex(builtin::kTupleGetItem), {tuple, Immediate(op->index)});
        return Register(dst);
      }
      case ExprKind::kCall: return EmitCallExpr(expr.as<CallNode>(), discard);
      case ExprKind::kIf: return EmitIf(expr.as<IfNode>());
      case ExprKind::kSeqExpr: return EmitSeq(expr.as<SeqExprNode>());
      case ExprKind::kFunction: Fail("nested functions are not supported"); return Register(0);
    }
    assert(false && "unknown graph Expr kind");
    return Register(0);
  }

  int64_t EmitCallExpr(const CallNode* call, bool discard) {
    int64_t func = -1;
    std::vector<Expr> args = call->args;
    analysis::PackedCall packed;
    if (analysis::MatchCallPacked(call, &packed)) {
      func = ctx_->LibraryIndex(packed.name);
      args = std::move(packed.args);
    } else if (const auto* op = call->op.as<OpNode>()) {
      if (const char* lowered = MemoryOpBuiltin(op->name)) {
        func = ctx_->LibraryIndex(lowered);
        // The IR names a device; the builtin takes its index in the
        // executable's devices table.
        if (const std::string* device = analysis::TargetDevice(*call)) {
          args.back() = analysis::Int64Value(ctx_->DeviceIndex(*device));
        }
      } else if (op->name == ops::kShapeOf) {
        func = ctx_->LibraryIndex(builtin::kShapeOf);
      } else if (op->name == ops::kAllocTensor) {
        func = ctx_->LibraryIndex(builtin::kAllocTensor);
      } else if (op->name == ops::kKill) {
        return EmitKill(call);
      } else if (op->name == ops::kCallTIR || op->name == ops::kCallDPSPacked) {
        Fail(op->name + " must be rewritten by CallTIRRewrite before VM codegen");
        return Register(0);
      } else {
        Fail("operator '" + op->name + "' has no VM lowering");
        return Register(0);
      }
    } else if (const auto* gv = call->op.as<GlobalVarNode>()) {
      func = ctx_->FunctionIndex(gv->name);
      if (func < 0) {
        Fail("call to @" + gv->name + ", which is not a function of the module");
        return Register(0);
      }
    } else {
      Fail("only operators, functions and library functions can be called (closures are not supported)");
      return Register(0);
    }
    std::vector<int64_t> operands;
    operands.reserve(args.size());
    for (const Expr& arg : args) operands.push_back(EmitValue(arg, false));
    int64_t dst = discard ? vm::kVoidRegister : NewRegister();
    EmitCall(dst, func, operands);
    return discard ? Register(0) : Register(dst);
  }

  // kill(x): Null into x's register, dropping the VM's reference. Parameters and
  // constants own no register of the function's making and are left alone.
  int64_t EmitKill(const CallNode* call) {
    const auto* var = call->args.size() == 1 ? call->args[0].as<VarNode>() : nullptr;
    auto it = var ? vars_.find(var) : vars_.end();
    if (it == vars_.end()) {
      Fail("kill takes a variable defined before it");
      return Register(0);
    }
    const int64_t operand = it->second;
    if (vm::DecodeOperandKind(operand) == OperandKind::kRegister && vm::DecodeOperandValue(operand) >= num_params_) {
      EmitCall(vm::DecodeOperandValue(operand), ctx_->LibraryIndex(builtin::kNull), {});
    }
    return Register(0);
  }

  // If r else_offset; then...; copy; Goto end; else...; copy.
  int64_t EmitIf(const IfNode* op) {
    int64_t cond = ToRegister(EmitValue(op->condition, false));
    int64_t result = NewRegister();
    int64_t copy = ctx_->LibraryIndex(builtin::kCopy);
    const vm::BytecodeEncoder::PendingJump to_else = code_.If(cond);
    int64_t then_value = EmitValue(op->then_branch, false);
    EmitCall(result, copy, {then_value});
    const vm::BytecodeEncoder::PendingJump to_end = code_.Goto();
    code_.PatchJump(to_else, code_.size());
    int64_t else_value = EmitValue(op->else_branch, false);
    EmitCall(result, copy, {else_value});
    code_.PatchJump(to_end, code_.size());
    return Register(result);
  }

  int64_t EmitSeq(const SeqExprNode* op) {
    const Binding* saved = binding_;
    for (const BindingBlock& block : op->blocks) {
      for (const Binding& binding : block.bindings) {
        binding_ = &binding;
        // A call whose result nobody reads (the `_ = check(...)` bindings) writes no register.
        bool discard = !used_.count(binding.var.get()) && binding.value.as<CallNode>();
        // Var-to-var bindings and match_cast (already checked by VMShapeLower) alias.
        vars_[binding.var.get()] = EmitValue(binding.value, discard);
      }
    }
    binding_ = saved;
    return EmitValue(op->body, false);
  }

  ModuleContext* ctx_;
  std::string name_;
  const Binding* binding_ = nullptr;  // the binding being emitted; null outside bindings
  Status error_;
  std::set<const VarNode*> used_;
  std::map<const VarNode*, int64_t> vars_;  // variable -> operand word
  vm::BytecodeEncoder code_;
  int64_t num_registers_ = 0;
  int64_t num_params_ = 0;
};

}  // namespace

StatusOr<serialization::ExecutableSpec> CodegenVM(const ir::IRModule& module) {
  ModuleContext ctx(module);
  for (const auto& [name, func] : module.functions()) {
    const auto* graph_func = std::get_if<Function>(&func);
    if (!graph_func) continue;
    FunctionEmitter emitter(&ctx);
    FunctionSpec built = ctx.spec.functions[ctx.FunctionIndex(name)];
    STRATA_RETURN_IF_ERROR(emitter.Emit(name, **graph_func, &built));
    // LibraryIndex may have grown the table: index again rather than keep `spec`.
    ctx.spec.functions[ctx.FunctionIndex(name)] = std::move(built);
  }
  return std::move(ctx.spec);
}

}  // namespace strata::backend
