// ExecutableSpec: an executable as plain C++ values, before it is written.
//
// The compiler's VM codegen fills one in; WriteExecutable (writer.h) turns it into
// the flatbuffer file. Tests build small executables the same way, with no
// compiler involved. The reader never produces this type: loaded executables are
// read in place from the verified flatbuffer.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "support/data_type.h"

namespace strata::serialization {

enum class FunctionKindSpec : uint8_t { kBytecode = 0, kCompiledKernel = 1, kLibrary = 2, kDevice = 3 };

// The memory plan of a bytecode function (descriptive; see executable.fbs).
struct PlannedStorageSpec {
  std::string name;
  std::string size;
  int64_t static_bytes = -1;
  std::string device;  // empty: host memory
};
struct PlannedTensorSpec {
  std::string name;
  std::string type;
  int32_t storage = 0;
  int64_t offset = 0;
};
struct MemoryPlanSpec {
  std::vector<PlannedStorageSpec> storages;
  std::vector<PlannedTensorSpec> tensors;
  std::vector<std::string> pooled;
  std::vector<std::string> bounds;
  bool empty() const { return storages.empty() && tensors.empty() && pooled.empty() && bounds.empty(); }
};

// What a bytecode function takes and returns (executable.fbs: ValueSignature):
// the graph function's struct info, per field and as the text IR prints it.
struct ValueSignatureSpec {
  std::string kind;                        // "tensor", "shape", "prim", "tuple", "object"
  std::string dtype;                       // tensor / prim element type; empty when not known
  int32_t ndim = -1;                       // tensor / shape rank; -1 when not known
  std::vector<std::string> dims;           // one per dimension when the shape is known, else empty
  std::vector<ValueSignatureSpec> fields;  // tuple fields
  std::string text;                        // "Tensor[(batch, 768), f32]"
};
struct SignatureSpec {
  std::vector<ValueSignatureSpec> params;
  ValueSignatureSpec result;
  // 1.6: the model's names of the parameters (one each) and of the result tensors
  // (one per field of a tuple result, else one); empty: none recorded, not written.
  // (`= {}` so that SignatureSpec{params, result} needs no initializers for them.)
  std::vector<std::string> input_names = {};
  std::vector<std::string> output_names = {};
};
// The longest name (of a function, parameter, input or output) a file may hold; the
// verifier also requires printable UTF-8 (support/printable_text.h).
inline constexpr size_t kMaxNameBytes = 4096;
// The deepest nesting of ValueSignatures (a top-level parameter is level 1) a file
// may hold. The flatbuffers verifier stops at 64 tables deep in all; this bound
// leaves room below that for a precise message and bounds the readers' recursion.
inline constexpr int kMaxSignatureDepth = 32;

struct FunctionSpec {
  std::string name;
  FunctionKindSpec kind = FunctionKindSpec::kBytecode;
  // Bytecode functions.
  int32_t num_params = 0;
  int32_t num_registers = 0;
  std::vector<std::string> param_names;
  std::vector<int64_t> code;
  // Kernel functions.
  int32_t module_index = -1;
  std::string symbol;
  // Kernel / Library functions of a BYOC backend: its name.
  std::string backend;
  // Bytecode functions.
  MemoryPlanSpec memory_plan;
  // Device functions: index into ExecutableSpec::devices; `symbol` is the kernel's name.
  int32_t device_index = -1;
  // Bytecode functions: the parameters' and the result's annotations (none: not written).
  std::optional<SignatureSpec> signature;
};

struct DeviceRequirementSpec {
  std::string name;
  std::string options;
};

struct TensorConstantSpec {
  DataType dtype;
  std::vector<int64_t> shape;
  // Row-major, little-endian. Shared, not copied: the compiler's constants
  // hand over their bytes as they are (GPT-2: 500 MB not copied once more).
  std::shared_ptr<const std::vector<uint8_t>> data;

  // The bytes (none when `data` is null).
  const std::vector<uint8_t>& bytes() const {
    static const std::vector<uint8_t> kNone;
    return data ? *data : kNone;
  }
};
struct ShapeConstantSpec {
  std::vector<int64_t> dims;
};
struct DataTypeConstantSpec {
  DataType dtype;
};
// int64_t -> IntConstant, double -> FloatConstant, std::string -> StringConstant.
using ConstantSpec =
    std::variant<TensorConstantSpec, ShapeConstantSpec, int64_t, double, std::string, DataTypeConstantSpec>;

struct NativeModuleSpec {
  std::string format = "elf-shared-object";
  std::string target_triple;
  std::string cpu;
  std::vector<uint8_t> code;
  std::vector<std::string> symbols;
  std::vector<std::string> cpu_features;  // see NativeModule.cpu_features
  std::string backend;                    // the BYOC backend that generated it, or empty
  int32_t alternative_of = -1;            // see NativeModule.alternative_of (1.7)
};

struct ExecutableSpec {
  std::vector<FunctionSpec> functions;
  std::vector<ConstantSpec> constants;
  std::vector<NativeModuleSpec> native_modules;
  std::vector<int32_t> entry_points;  // indices into functions
  std::vector<DeviceRequirementSpec> devices;
};

}  // namespace strata::serialization
