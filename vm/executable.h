// Executable: a loaded, verified and resolved Strata executable file.
//
// Loading checks the file (serialization/reader.h: identifier, version,
// checksums, flatbuffers verifier, bytecode verifier), then resolves it: every Library
// function is looked up in the registry, every native module is loaded and every
// Kernel function's symbol resolved, and tensor constants become Values. After
// that the VM calls everything through plain function pointers; a missing
// function or kernel is a load-time error that names it.
//
// Tensor constants point into the file's bytes (never copied): into the mapping
// for MapFile, into the executable's own aligned copy otherwise. They are
// read-only.
//
// Ownership and thread-safety: an Executable is immutable once loaded and is
// shared as std::shared_ptr<const Executable> by any number of VirtualMachines
// on any threads. It keeps the file bytes and native modules alive; values it
// handed out (constants) keep the bytes alive on their own.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "abi/device_plugin.h"
#include "abi/kernel_abi.h"
#include "serialization/executable_spec.h"
#include "support/status.h"
#include "vm/cpu_features.h"
#include "vm/registry.h"
#include "vm/value.h"

namespace strata::vm {

class PluggedDevice;

class NativeModule;

enum class FunctionKind : uint8_t { kBytecode = 0, kCompiledKernel = 1, kLibrary = 2, kDevice = 3 };

// Operand words of VMFunction::dispatch_code. A register operand stays its
// register index (>= 0). Any other operand becomes the address of the Value it
// denotes with this bit set: its entry in constants(), or an Int / Function
// Value the executable keeps for each distinct immediate and function operand.
// The interpreter then turns any operand into a Value pointer with one compare,
// constructing nothing.
inline constexpr uint64_t kDispatchValueTag = uint64_t{1} << 63;
static_assert(kDispatchValueTag == STRATA_VM_OPERAND_VALUE_TAG, "compiled kernels' VM entries decode operands");
const char* FunctionKindName(FunctionKind kind);  // "bytecode", "compiled kernel", "library", "device kernel"

// What a bytecode function takes or returns, from the graph function's annotation
// (executable.fbs: ValueSignature): for describing and checking calls, never for running them.
struct ValueSignature {
  std::string kind;   // "tensor", "shape", "prim", "tuple", "object"
  std::string dtype;  // tensor / prim element type ("f32", "i64"); empty when not known
  int32_t ndim = -1;  // tensor / shape rank; -1 when not known
  // Each dimension's expression in the text IR's syntax ("768", "batch", "n * 2 + 1");
  // empty when the dimensions are not known (a 0-d value has ndim 0).
  std::vector<std::string> dims;
  std::vector<ValueSignature> fields;  // tuple fields
  std::string text;                    // the whole annotation: "Tensor[(batch, 768), f32]"
};

// One entry of the function table, with everything the interpreter needs.
struct VMFunction {
  std::string name;
  FunctionKind kind = FunctionKind::kBytecode;
  // Bytecode functions.
  int32_t num_params = 0;
  int32_t num_registers = 0;
  std::vector<std::string> param_names;  // one per parameter ("arg0".. when the file has none)
  std::span<const int64_t> code;         // verified instructions, inside the file bytes
  // `code` as the interpreter runs it: the same words at the same offsets, with
  // every Call operand pre-decoded (kDispatchValueTag). Set when resolved.
  std::span<const int64_t> dispatch_code;
  // Kernel functions.
  int32_t module_index = -1;
  std::string symbol;
  StrataKernelFn kernel = nullptr;  // resolved at load (null when not resolved)
  // Its VM entry (kernel_abi.h), when the module has a usable one; else null.
  StrataVmKernelFn vm_kernel = nullptr;
  // Library functions.
  LibraryFunction library;  // resolved at load (fn null when not resolved)
  // Kernel / Library functions offloaded by a BYOC backend: its name, else empty.
  std::string backend;
  // Bytecode functions: the compiler's memory plan, for inspection only.
  serialization::MemoryPlanSpec memory_plan;
  // Device functions: index into Executable::devices(); `symbol` is the kernel name.
  int32_t device_index = -1;
  PluggedDevice* device = nullptr;  // resolved at load (null when not resolved)
  StrataDeviceKernel device_kernel = 0;
  // Bytecode functions: the parameters' and the result's annotations. Files older
  // than format 1.4 have none (has_signature false, both left empty).
  bool has_signature = false;
  std::vector<ValueSignature> param_signatures;  // one per parameter
  ValueSignature result_signature;
  // Bytecode functions: the names a serving protocol addresses tensors by (format 1.6,
  // Signature.input_names / output_names; an ONNX model's graph input and output names,
  // which param_names cannot always keep: those are text IR identifiers).
  //
  // The model's names of the parameters (ONNX graph inputs); param_names when the file records none.
  std::vector<std::string> input_names;
  // One per result tensor (a tuple's fields, else one); "output0", "output1", .. when the file
  // records none. Empty when has_signature is false: the result's shape is not known then.
  std::vector<std::string> output_names;
};

// The names VMFunction::output_names defaults to: "output0", "output1", ...
std::vector<std::string> DefaultOutputNames(size_t count);

// Description of a native module, for inspection.
struct NativeModuleInfo {
  std::string format;
  std::string target_triple;
  std::string cpu;
  size_t code_size = 0;
  std::vector<std::string> symbols;
  std::vector<std::string> cpu_features;  // required of the CPU that runs the code
  std::string backend;                    // the BYOC backend that generated it, or empty
  // 1.7: -1, or the module this one can stand in for (the same kernels for other
  // CPU features; the loader loads one module of each group).
  int32_t alternative_of = -1;
};

struct LoadOptions {
  // Look up library functions and load native modules. Without it the file is
  // only verified and described (`strata inspect`); it cannot be run.
  bool resolve = true;
  // Open options per device name, replacing the executable's own (e.g.
  // {"sim_npu", "memory=64M"}): how a service sizes a device for its host.
  std::map<std::string, std::string> device_options;
  // Verify the file's checksums (format 1.5; serialization/checksum.h) before
  // anything else of it is read, so that a damaged file is refused naming the
  // damaged region instead of returning wrong numbers. This reads every byte (for
  // MapFile, every page of the weights). False skips it: the structure is still
  // verified and native code still checked, but damaged tensor data goes unnoticed.
  bool verify_checksums = true;
  // CPU features to treat as absent when native code is chosen and checked, on
  // top of those STRATA_DISABLE_CPU_FEATURES names (vm/cpu_features.h): names,
  // or prefixes ending in '*' ("avx512*").
  std::vector<std::string> disabled_cpu_features = {};
};

// Which module of each group of alternatives (NativeModuleInfo::alternative_of)
// a CPU runs: for every module that is not an alternative, the index of the
// first of it and its alternatives, in file order, whose features `probe`
// reports; -1 for alternatives and for groups none of whose modules runs there.
std::vector<int32_t> ChooseNativeModules(std::span<const NativeModuleInfo> modules, const CpuFeatureProbe& probe);

class Executable {
 public:
  // Copies `bytes` into an aligned buffer owned by the executable.
  static StatusOr<std::shared_ptr<const Executable>> LoadFromBytes(std::span<const uint8_t> bytes,
                                                                   const LoadOptions& options = {});
  // Reads the file into an aligned buffer.
  static StatusOr<std::shared_ptr<const Executable>> LoadFromFile(const std::string& path,
                                                                  const LoadOptions& options = {});
  // Maps the file (read-only data, copy-on-write pages); constants point into
  // the mapping, so weights are neither copied nor read until used.
  static StatusOr<std::shared_ptr<const Executable>> MapFile(const std::string& path, const LoadOptions& options = {});

  ~Executable();
  Executable(const Executable&) = delete;
  Executable& operator=(const Executable&) = delete;

  uint32_t format_major() const { return format_major_; }
  uint32_t format_minor() const { return format_minor_; }
  const std::string& producer() const { return producer_; }

  std::span<const VMFunction> functions() const { return functions_; }
  std::span<const Value> constants() const { return constants_; }
  std::span<const NativeModuleInfo> native_modules() const { return module_info_; }
  // The devices the executable needs (name and open options), in index order.
  std::span<const serialization::DeviceRequirementSpec> devices() const { return devices_; }
  // Those devices, opened at load (empty when not resolved).
  std::span<const std::shared_ptr<PluggedDevice>> plugged_devices() const { return plugged_devices_; }
  // Indices into functions() of the functions callable from outside.
  std::span<const int32_t> entry_points() const { return entry_points_; }
  // The entry point called `name`, or nullopt.
  std::optional<int32_t> FindEntryPoint(std::string_view name) const;
  // "main, helper": the entry points' names, for messages.
  std::string EntryPointNames() const;

  // True when library functions and kernels were resolved (LoadOptions::resolve).
  bool resolved() const { return resolved_; }
  // When resolved: for each native module, the index of the module loaded in its
  // place (itself, or the alternative this CPU runs); -1 for alternatives.
  std::span<const int32_t> loaded_native_modules() const { return loaded_modules_; }
  // True when the file carries checksums (format 1.5 and newer), and when they
  // were verified at load (LoadOptions::verify_checksums).
  bool has_checksums() const { return has_checksums_; }
  bool checksums_verified() const { return checksums_verified_; }
  // The file bytes (the mapping for MapFile).
  std::span<const uint8_t> bytes() const { return bytes_; }
  bool is_mapped() const { return mapped_; }

 private:
  struct Buffer;
  Executable() = default;
  // Load with every error message made printable (support/printable_text.h).
  static StatusOr<std::shared_ptr<const Executable>> Load(std::shared_ptr<Buffer> buffer, bool mapped,
                                                          const LoadOptions& options);
  static StatusOr<std::shared_ptr<const Executable>> LoadChecked(std::shared_ptr<Buffer> buffer, bool mapped,
                                                                 const LoadOptions& options);
  Status Resolve(const LoadOptions& options);
  // Builds every bytecode function's dispatch_code (after the constants).
  void DecodeForDispatch();

  std::shared_ptr<Buffer> buffer_;
  std::span<const uint8_t> bytes_;
  bool mapped_ = false;
  bool resolved_ = false;
  bool has_checksums_ = false;
  bool checksums_verified_ = false;
  uint32_t format_major_ = 0;
  uint32_t format_minor_ = 0;
  std::string producer_;
  std::vector<VMFunction> functions_;
  std::vector<Value> constants_;
  std::vector<NativeModuleInfo> module_info_;
  std::vector<std::span<const uint8_t>> module_code_;
  std::vector<std::unique_ptr<NativeModule>> modules_;  // by group: null for alternatives
  std::vector<int32_t> loaded_modules_;
  std::vector<int32_t> entry_points_;
  std::vector<serialization::DeviceRequirementSpec> devices_;
  std::vector<std::shared_ptr<PluggedDevice>> plugged_devices_;
  // Backing of dispatch_code, and the Values of immediate and function
  // operands it points to; sized once, never reallocated.
  std::vector<int64_t> dispatch_words_;
  std::vector<Value> operand_values_;
};

}  // namespace strata::vm
