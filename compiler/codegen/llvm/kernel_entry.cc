// Kernel entry: argument checks and shape binding; see kernel_entry.h.
#include "compiler/codegen/llvm/kernel_entry.h"

#include <cstddef>
#include <vector>

#include <dlpack/dlpack.h>
#include <llvm/IR/Constants.h>

#include "abi/kernel_abi.h"
#include "compiler/codegen/llvm/function_lowering.h"
#include "compiler/codegen/llvm/used_values.h"
#include "compiler/ir/printer.h"

namespace strata::codegen {
namespace {

static_assert(sizeof(StrataKernelArg) == 8, "kernel arguments are 8-byte slots");

// Text spliced into a printf format must not contain conversions of its own.
std::string EscapeFormat(const std::string& text) {
  std::string out;
  for (char c : text) {
    out += c;
    if (c == '%') out += '%';
  }
  return out;
}

// Loads a field of the DLTensor at `tensor` (offsets from dlpack.h).
llvm::Value* LoadField(llvm::IRBuilder<>& b, llvm::Type* type, llvm::Value* tensor, size_t offset,
                       const std::string& name) {
  llvm::Value* address = b.CreateConstInBoundsGEP1_64(b.getInt8Ty(), tensor, offset);
  return b.CreateLoad(type, address, name);
}

// The DLDataType bits a buffer of `dtype` must have. Bool is one byte per element;
// its DLDataType may say 1 bit (as Strata's runtime does) or 8.
int ExpectedBits(DataType dtype) { return dtype.is_bool() ? 1 : dtype.bits(); }

// What a parameter expects in its slot, as a STRATA_ARG_* code.
int32_t ExpectedTypeCode(const tir::PrimFuncParam& param) {
  if (param.is_buffer()) return STRATA_ARG_TENSOR;
  return param.scalar->dtype.is_float() ? STRATA_ARG_FLOAT : STRATA_ARG_INT;
}

const char* TypeCodeNoun(int32_t code) {
  switch (code) {
    case STRATA_ARG_TENSOR: return "a tensor";
    case STRATA_ARG_INT: return "an int";
    case STRATA_ARG_FLOAT: return "a float";
    default: return "an argument of unknown type code";
  }
}

}  // namespace

StatusOr<llvm::Function*> EmitKernel(KernelModule& km, const std::string& program, const std::string& symbol,
                                     const tir::PrimFunc& func) {
  llvm::LLVMContext& ctx = km.context();
  auto fail = [&](const std::string& message) -> Status {
    return ErrorStatus() << "cannot compile tensor program '" << program << "': " << message;
  };
  llvm::Type* ptr = llvm::PointerType::getUnqual(ctx);
  auto* i32 = llvm::Type::getInt32Ty(ctx);
  auto* fn_type = llvm::FunctionType::get(i32, {ptr, ptr, i32}, false);
  llvm::Function* fn = llvm::Function::Create(fn_type, llvm::GlobalValue::ExternalLinkage, symbol, km.module());
  km.SetFunctionAttributes(fn);
  llvm::Argument* args = fn->getArg(0);
  llvm::Argument* type_codes = fn->getArg(1);
  llvm::Argument* num_args = fn->getArg(2);
  args->setName("args");
  type_codes->setName("type_codes");
  num_args->setName("num_args");
  for (llvm::Argument* array : {args, type_codes}) {
    array->addAttr(llvm::Attribute::NoCapture);
    array->addAttr(llvm::Attribute::ReadOnly);
  }

  FunctionLowering entry(km, program, fn, /*in_parallel=*/false);
  llvm::IRBuilder<>& b = entry.builder();
  const std::string escaped_program = EscapeFormat(program);
  const auto& params = func->params;

  entry.EmitCheck(
      b.CreateICmpEQ(num_args, b.getInt32(static_cast<int32_t>(params.size()))), [&](llvm::IRBuilder<>& eb) {
        km.EmitSetErrorFormatted(
            eb, escaped_program + ": expected " + std::to_string(params.size()) + " arguments, got %lld", num_args);
      });
  auto slot = [&](size_t k) { return b.CreateConstInBoundsGEP1_64(b.getInt8Ty(), args, k * sizeof(StrataKernelArg)); };
  auto param_label = [&](size_t k) { return "argument '" + params[k].name() + "' (#" + std::to_string(k) + ")"; };

  // Every slot's type code before any slot is read: an int where a tensor belongs
  // must be an error, not a pointer dereference.
  std::vector<llvm::Value*> codes(params.size());
  for (size_t k = 0; k < params.size(); ++k) {
    codes[k] = b.CreateLoad(i32, b.CreateConstInBoundsGEP1_64(i32, type_codes, k), params[k].name() + ".type_code");
    const int32_t expected = ExpectedTypeCode(params[k]);
    llvm::Value* ok = b.CreateICmpEQ(codes[k], b.getInt32(expected));
    if (expected == STRATA_ARG_FLOAT) ok = b.CreateOr(ok, b.CreateICmpEQ(codes[k], b.getInt32(STRATA_ARG_INT)));
    const std::string prefix = program + ": " + param_label(k) + ": expected " + TypeCodeNoun(expected) +
                               (expected == STRATA_ARG_FLOAT ? " or an int" : "") + ", got ";
    entry.EmitCheck(ok, [&](llvm::IRBuilder<>& eb) {
      llvm::Value* message = km.StringConstant(prefix + TypeCodeNoun(0));
      for (int32_t code : {STRATA_ARG_TENSOR, STRATA_ARG_INT, STRATA_ARG_FLOAT}) {
        message = eb.CreateSelect(eb.CreateICmpEQ(codes[k], eb.getInt32(code)),
                                  km.StringConstant(prefix + TypeCodeNoun(code)), message);
      }
      km.EmitSetError(eb, message);
    });
  }

  // Scalars first, so that a shape may use a scalar parameter (Buffer[(n * 2,), f32]).
  for (size_t k = 0; k < params.size(); ++k) {
    if (params[k].is_buffer()) continue;
    const tir::VarNode* var = params[k].scalar.get();
    DataType t = var->dtype;
    llvm::Value* value = nullptr;
    if (t.is_float()) {
      // An int passed for a float parameter is converted (the type codes allow it).
      llvm::Value* as_int = b.CreateSIToFP(b.CreateLoad(b.getInt64Ty(), slot(k)), b.getDoubleTy());
      value = b.CreateSelect(b.CreateICmpEQ(codes[k], b.getInt32(STRATA_ARG_INT)), as_int,
                             b.CreateLoad(b.getDoubleTy(), slot(k)), var->name + ".f64");
      if (t.bits() != 64) value = b.CreateFPTrunc(value, km.ValueType(t));
    } else if (t.is_integral()) {
      value = b.CreateLoad(b.getInt64Ty(), slot(k), var->name + ".i64");
      if (t.bits() != 64) value = b.CreateTrunc(value, km.ValueType(t));
    } else if (t.is_bool()) {
      value = b.CreateICmpNE(b.CreateLoad(b.getInt64Ty(), slot(k)), b.getInt64(0));
    } else {
      return fail(param_label(k) + ": scalar parameters of dtype " + t.ToString() + " are not supported");
    }
    value->setName(var->name);
    entry.BindVar(var, value);
  }

  // Pass 1: each tensor's header, and the first occurrence of each shape variable.
  std::vector<std::vector<llvm::Value*>> dims(params.size());
  std::vector<std::vector<bool>> binds(params.size());
  for (size_t k = 0; k < params.size(); ++k) {
    if (!params[k].is_buffer()) continue;
    const tir::BufferNode* buffer = params[k].buffer.get();
    if (buffer->dtype.is_handle() || buffer->dtype.is_void()) {
      return fail(param_label(k) + ": buffers of dtype " + buffer->dtype.ToString() + " are not supported");
    }
    const std::string prefix = program + ": " + param_label(k) + ": ";
    const std::string escaped_prefix = EscapeFormat(prefix);
    const size_t rank = buffer->shape.size();
    llvm::Value* tensor = b.CreateLoad(ptr, slot(k), buffer->name + ".tensor");
    entry.EmitCheck(b.CreateIsNotNull(tensor),
                    [&](llvm::IRBuilder<>& eb) { km.EmitSetError(eb, prefix + "expected a tensor, got NULL"); });

    llvm::Value* device_type =
        LoadField(b, i32, tensor, offsetof(DLTensor, device) + offsetof(DLDevice, device_type), "device_type");
    entry.EmitCheck(b.CreateICmpEQ(device_type, b.getInt32(kDLCPU)), [&](llvm::IRBuilder<>& eb) {
      km.EmitSetErrorFormatted(eb, escaped_prefix + "expected a CPU tensor, got device type %lld", device_type);
    });

    llvm::Value* ndim = LoadField(b, i32, tensor, offsetof(DLTensor, ndim), "ndim");
    entry.EmitCheck(b.CreateICmpEQ(ndim, b.getInt32(static_cast<int32_t>(rank))), [&](llvm::IRBuilder<>& eb) {
      km.EmitSetErrorFormatted(eb, escaped_prefix + "expected ndim " + std::to_string(rank) + ", got %lld", ndim);
    });

    const size_t dtype_offset = offsetof(DLTensor, dtype);
    llvm::Value* code = LoadField(b, b.getInt8Ty(), tensor, dtype_offset + offsetof(DLDataType, code), "code");
    llvm::Value* bits = LoadField(b, b.getInt8Ty(), tensor, dtype_offset + offsetof(DLDataType, bits), "bits");
    llvm::Value* lanes = LoadField(b, b.getInt16Ty(), tensor, dtype_offset + offsetof(DLDataType, lanes), "lanes");
    DataType dtype = buffer->dtype;
    llvm::Value* bits_ok = b.CreateICmpEQ(bits, b.getInt8(ExpectedBits(dtype)));
    if (dtype.is_bool()) bits_ok = b.CreateOr(bits_ok, b.CreateICmpEQ(bits, b.getInt8(8)));
    llvm::Value* dtype_ok =
        b.CreateAnd(b.CreateAnd(b.CreateICmpEQ(code, b.getInt8(static_cast<uint8_t>(dtype.code()))), bits_ok),
                    b.CreateICmpEQ(lanes, b.getInt16(1)));
    entry.EmitCheck(dtype_ok, [&](llvm::IRBuilder<>& eb) {
      km.EmitSetErrorDtype(eb, prefix + "expected dtype " + dtype.ToString() + ", got ", code, bits, lanes);
    });

    llvm::Value* data = LoadField(b, ptr, tensor, offsetof(DLTensor, data), buffer->name + ".base");
    llvm::Value* byte_offset = LoadField(b, b.getInt64Ty(), tensor, offsetof(DLTensor, byte_offset), "byte_offset");
    data = b.CreateGEP(b.getInt8Ty(), data, byte_offset, buffer->name + ".data");
    llvm::Value* shape = LoadField(b, ptr, tensor, offsetof(DLTensor, shape), "shape");
    for (size_t d = 0; d < rank; ++d) {
      dims[k].push_back(b.CreateLoad(b.getInt64Ty(), b.CreateConstInBoundsGEP1_64(b.getInt64Ty(), shape, d),
                                     buffer->name + ".dim" + std::to_string(d)));
    }

    // Strides: NULL means compact row-major; otherwise they must say the same
    // (a dimension of extent 1 may have any stride: it is never stepped over).
    if (rank > 0) {
      llvm::Value* strides = LoadField(b, ptr, tensor, offsetof(DLTensor, strides), "strides");
      llvm::BasicBlock* check = llvm::BasicBlock::Create(ctx, "strides.check", fn);
      llvm::BasicBlock* done = llvm::BasicBlock::Create(ctx, "strides.done", fn);
      b.CreateCondBr(b.CreateIsNull(strides), done, check);
      b.SetInsertPoint(check);
      llvm::Value* expected = b.getInt64(1);
      for (size_t d = rank; d-- > 0;) {
        llvm::Value* stride =
            b.CreateLoad(b.getInt64Ty(), b.CreateConstInBoundsGEP1_64(b.getInt64Ty(), strides, d), "stride");
        llvm::Value* ok = b.CreateOr(b.CreateICmpEQ(stride, expected), b.CreateICmpEQ(dims[k][d], b.getInt64(1)));
        llvm::Value* expected_here = expected;
        entry.EmitCheck(ok, [&](llvm::IRBuilder<>& eb) {
          km.EmitSetErrorFormatted(eb,
                                   escaped_prefix + "expected compact row-major strides, dimension " +
                                       std::to_string(d) + " has stride %lld, expected %lld",
                                   stride, expected_here);
        });
        expected = b.CreateMul(expected, dims[k][d]);
      }
      b.CreateBr(done);
      b.SetInsertPoint(done);
    }

    binds[k].assign(rank, false);
    for (size_t d = 0; d < rank; ++d) {
      const auto* var = buffer->shape[d].as<tir::VarNode>();
      if (var == nullptr || entry.IsBound(var)) continue;
      if (!var->dtype.is_integral()) {
        return fail(param_label(k) + ": shape variable '" + var->name + "' has dtype " + var->dtype.ToString());
      }
      llvm::Value* value = dims[k][d];
      if (var->dtype.bits() != 64) value = b.CreateTrunc(value, km.ValueType(var->dtype));
      value->setName(var->name);
      entry.BindVar(var, value);
      binds[k][d] = true;
    }
    entry.BindBuffer(buffer, data);
  }

  // Pass 2: every dimension that did not bind a variable must equal its expression.
  for (size_t k = 0; k < params.size(); ++k) {
    if (!params[k].is_buffer()) continue;
    const tir::BufferNode* buffer = params[k].buffer.get();
    const std::string escaped_prefix = EscapeFormat(program + ": " + param_label(k) + ": ");
    for (size_t d = 0; d < buffer->shape.size(); ++d) {
      if (binds[k][d]) continue;
      const tir::PrimExpr& dim = buffer->shape[d];
      for (const tir::VarNode* var : CollectUsedValues(dim).vars) {
        if (!entry.IsBound(var)) {
          return fail(param_label(k) + ": dimension " + std::to_string(d) + " (" + ir::PrintPrimExpr(dim) + ") uses '" +
                      var->name +
                      "', which no parameter binds: give it a dimension of its own or pass it as a scalar parameter");
        }
      }
      llvm::Value* expected = entry.LowerIndex(dim);
      llvm::Value* actual = dims[k][d];
      std::string what = escaped_prefix + "dimension " + std::to_string(d) + " expected ";
      const bool constant = tir::AsConstInt(dim) != nullptr;
      what += constant ? EscapeFormat(ir::PrintPrimExpr(dim)) + ", got %lld"
                       : EscapeFormat(ir::PrintPrimExpr(dim)) + " = %lld, got %lld";
      entry.EmitCheck(b.CreateICmpEQ(actual, expected), [&](llvm::IRBuilder<>& eb) {
        if (constant) {
          km.EmitSetErrorFormatted(eb, what, actual);
        } else {
          km.EmitSetErrorFormatted(eb, what, expected, actual);
        }
      });
    }
  }
  if (!entry.status().ok()) return fail(entry.status().message());

  // The body, with the checked values as parameters.
  FunctionLowering::Region body =
      entry.OutlineRegion(program + ".body", /*num_extra=*/0, CollectUsedValues(func->body), /*in_parallel=*/false,
                          [&](FunctionLowering& inner, llvm::ArrayRef<llvm::Value*>) { inner.LowerStmt(func->body); });
  if (!entry.status().ok()) return fail(entry.status().message());
  b.CreateRet(b.CreateCall(body.fn, entry.CaptureValues(body)));
  return fn;
}

}  // namespace strata::codegen
