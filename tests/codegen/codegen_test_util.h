// Helpers for the LLVM codegen tests: building tensor programs in C++, host
// tensors as DLTensors, compiling and loading kernels, calling them.
//
// The tests deliberately build IR with the make() API, not the text parser, so
// they exercise the code generator alone.
#pragma once

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "abi/kernel_abi.h"
#include "compiler/codegen/llvm/codegen_llvm.h"
#include "compiler/ir/tir.h"
#include "vm/kernel_runtime.h"
#include "vm/native_module.h"

namespace strata::codegen::testing {

using tir::Buffer;
using tir::ForKind;
using tir::PrimExpr;
using tir::PrimFunc;
using tir::PrimFuncParam;
using tir::Stmt;
using tir::Var;

// --- IR building -----------------------------------------------------------

inline PrimExpr Load(const Buffer& buffer, std::vector<PrimExpr> indices) {
  return tir::BufferLoadNode::make(buffer, std::move(indices));
}
inline Stmt Store(const Buffer& buffer, std::vector<PrimExpr> indices, PrimExpr value) {
  return tir::BufferStoreNode::make(buffer, std::move(indices), std::move(value));
}
inline Stmt For(const Var& var, PrimExpr min, PrimExpr extent, ForKind kind, Stmt body) {
  return tir::ForNode::make(var, std::move(min), std::move(extent), kind, std::move(body));
}
inline Stmt Seq(std::vector<Stmt> stmts) { return tir::SeqStmtNode::make(std::move(stmts)); }
inline PrimExpr Bin(tir::PrimExprKind kind, PrimExpr a, PrimExpr b) {
  return tir::BinaryOpNode::make(kind, std::move(a), std::move(b));
}
inline PrimExpr F32(double v) { return tir::FloatImm(DataType::F32(), v); }
inline PrimExpr F64(double v) { return tir::FloatImm(DataType::F64(), v); }
inline PrimFuncParam BufferParam(Buffer buffer) { return PrimFuncParam{std::move(buffer), Var()}; }
inline PrimFuncParam ScalarParam(Var var) { return PrimFuncParam{nullptr, std::move(var)}; }

// C[m, k] = A[m, n] @ B[n, k], the schedule of examples/matmul_relu.sir:
// rows in parallel, the inner j loop vectorized.
inline PrimFunc MakeMatmul() {
  Var m("m"), n("n"), k("k");
  Buffer a = tir::MakeBuffer("A", DataType::F32(), {m, n});
  Buffer b = tir::MakeBuffer("B", DataType::F32(), {n, k});
  Buffer c = tir::MakeBuffer("C", DataType::F32(), {m, k});
  Var i("i"), j0("j"), r("r"), j1("j"), av("a", DataType::F32());
  Stmt init = For(j0, 0, k, ForKind::kSerial, Store(c, {i, j0}, F32(0.0)));
  Stmt update = For(j1, 0, k, ForKind::kVectorized, Store(c, {i, j1}, Load(c, {i, j1}) + av * Load(b, {r, j1})));
  Stmt reduce = For(r, 0, n, ForKind::kSerial, tir::LetStmtNode::make(av, Load(a, {i, r}), update));
  Stmt body = For(i, 0, m, ForKind::kParallel, Seq({init, reduce}));
  return tir::MakePrimFunc({BufferParam(a), BufferParam(b), BufferParam(c)}, body);
}

// B[m, n] = max(A[m, n], 0).
inline PrimFunc MakeRelu() {
  Var m("m"), n("n");
  Buffer a = tir::MakeBuffer("A", DataType::F32(), {m, n});
  Buffer b = tir::MakeBuffer("B", DataType::F32(), {m, n});
  Var i("i"), j("j");
  Stmt body = For(i, 0, m, ForKind::kParallel,
                  For(j, 0, n, ForKind::kVectorized, Store(b, {i, j}, tir::Max(Load(a, {i, j}), F32(0.0)))));
  return tir::MakePrimFunc({BufferParam(a), BufferParam(b)}, body);
}

// --- Host tensors ------------------------------------------------------------

template <typename T>
struct DTypeOf;
template <>
struct DTypeOf<float> {
  static constexpr DLDataType value{kDLFloat, 32, 1};
};
template <>
struct DTypeOf<double> {
  static constexpr DLDataType value{kDLFloat, 64, 1};
};
template <>
struct DTypeOf<int8_t> {
  static constexpr DLDataType value{kDLInt, 8, 1};
};
template <>
struct DTypeOf<int32_t> {
  static constexpr DLDataType value{kDLInt, 32, 1};
};
template <>
struct DTypeOf<int64_t> {
  static constexpr DLDataType value{kDLInt, 64, 1};
};
template <>
struct DTypeOf<uint8_t> {
  static constexpr DLDataType value{kDLUInt, 8, 1};
};

// A compact CPU tensor owning its elements. Not copyable: dl points into it.
template <typename T>
class HostTensor {
 public:
  explicit HostTensor(std::vector<int64_t> shape, std::vector<T> values = {})
      : shape_(std::move(shape)), values_(std::move(values)) {
    int64_t count = 1;
    for (int64_t d : shape_) count *= d;
    values_.resize(count);
    dl_.data = values_.data();
    dl_.device = DLDevice{kDLCPU, 0};
    dl_.ndim = static_cast<int32_t>(shape_.size());
    dl_.dtype = DTypeOf<T>::value;
    dl_.shape = shape_.data();
    dl_.strides = nullptr;
    dl_.byte_offset = 0;
  }
  HostTensor(const HostTensor&) = delete;
  HostTensor& operator=(const HostTensor&) = delete;

  DLTensor* dl() { return &dl_; }
  std::vector<T>& values() { return values_; }
  T& operator[](int64_t i) { return values_[i]; }
  int64_t size() const { return static_cast<int64_t>(values_.size()); }

 private:
  std::vector<int64_t> shape_;
  std::vector<T> values_;
  DLTensor dl_{};
};

// Compile options that keep the optimized LLVM IR, for tests of what the code
// generator emitted: pass `options` to LoadedKernels, then Take() the text.
struct IrDump {
  explicit IrDump(const std::string& name) : path(::testing::TempDir() + "/" + name + ".ll") {
    options.dump_llvm_ir_path = path;
  }
  // The IR the last compile wrote; the file is removed.
  std::string Take() const {
    std::stringstream text;
    text << std::ifstream(path).rdbuf();
    std::remove(path.c_str());
    return text.str();
  }
  std::string path;
  CodegenOptions options;
};

// Deterministic values in [lo, hi).
inline std::vector<float> RandomFloats(int64_t count, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::vector<float> out(count);
  uint32_t state = seed * 2654435761u + 1;
  for (float& v : out) {
    state = state * 1664525u + 1013904223u;
    v = lo + (hi - lo) * static_cast<float>(state >> 8) / static_cast<float>(1u << 24);
  }
  return out;
}

// --- Compile, load, call --------------------------------------------------------

// One kernel argument and the type code the VM would pass with it.
struct TypedArg {
  StrataKernelArg value;
  int32_t type_code;
};

inline TypedArg TensorArg(DLTensor* t) {
  TypedArg a{{}, STRATA_ARG_TENSOR};
  a.value.tensor = t;
  return a;
}
inline TypedArg IntArg(int64_t v) {
  TypedArg a{{}, STRATA_ARG_INT};
  a.value.i64 = v;
  return a;
}
inline TypedArg FloatArg(double v) {
  TypedArg a{{}, STRATA_ARG_FLOAT};
  a.value.f64 = v;
  return a;
}

class LoadedKernels {
 public:
  // Compiles and loads `funcs`; check ok() (or use ASSERT_KERNELS_OK).
  explicit LoadedKernels(const std::vector<std::pair<std::string, PrimFunc>>& funcs, const CodegenOptions& options = {},
                         const std::string& module_name = "native_modules[0]") {
    StatusOr<CompiledKernels> compiled = CompileTensorPrograms(funcs, options);
    if (!compiled.ok()) {
      status_ = compiled.status();
      return;
    }
    compiled_ = std::move(compiled).value();
    StatusOr<std::unique_ptr<vm::NativeModule>> module = vm::NativeModule::Load(compiled_.shared_object, module_name);
    if (!module.ok()) {
      status_ = module.status();
      return;
    }
    module_ = std::move(module).value();
  }

  const Status& status() const { return status_; }
  const CompiledKernels& compiled() const { return compiled_; }

  StrataKernelFn Get(const std::string& program) const {
    auto it = compiled_.symbols.find(program);
    if (it == compiled_.symbols.end() || !module_) return nullptr;
    StatusOr<StrataKernelFn> fn = module_->Lookup(it->second);
    return fn.ok() ? fn.value() : nullptr;
  }

  // The VM entry of `program` (kernel_abi.h), or null.
  StrataVmKernelFn GetVmEntry(const std::string& program) const {
    auto it = compiled_.symbols.find(program);
    if (it == compiled_.symbols.end() || !module_) return nullptr;
    return module_->LookupVmEntry(it->second);
  }

 private:
  Status status_;
  CompiledKernels compiled_;
  std::unique_ptr<vm::NativeModule> module_;
};

#define ASSERT_KERNELS_OK(kernels) ASSERT_TRUE((kernels).status().ok()) << (kernels).status().message()

inline int32_t Call(StrataKernelFn fn, const std::vector<TypedArg>& typed) {
  std::vector<StrataKernelArg> args;
  std::vector<int32_t> codes;
  for (const TypedArg& a : typed) {
    args.push_back(a.value);
    codes.push_back(a.type_code);
  }
  return fn(args.data(), codes.data(), static_cast<int32_t>(args.size()));
}

}  // namespace strata::codegen::testing
