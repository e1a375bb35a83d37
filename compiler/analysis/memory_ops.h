// Graph-level memory and device operators: what PlanMemory and PlaceOnDevices
// decide, said in the graph's own terms. Only the VM backend
// (compiler/backend/vm) lowers them to the VM's builtins, so the graph passes
// need none of the runtime's vocabulary (docs/memory.md, docs/devices.md).
//
//   memory.alloc_storage(size, alignment[, "device"]) -> Object
//       A block of `size` bytes: an i64 constant (an arena) or shape(e) (a
//       size that depends on shape variables), on the host or on a plugged-in
//       device.
//   memory.alloc_tensor(storage, offset, shape, dtype(D)) -> Tensor[shape, D]
//       A tensor at a constant byte offset in a storage.
//   memory.check_bound(shape(v), lo, hi, "context") -> ()
//       Stops a call whose dimension v lies outside lo..hi, the range the plan
//       sized an arena for.
//   device.alloc_tensor(shape, dtype(D), "device") -> Tensor[shape, D]
//       A fresh tensor in a device's memory.
//   device.to_device(x, "device") -> the struct info of x
//       A copy of host tensor x in the device's memory.
//   device.to_host(x) -> the struct info of x
//       A copy of device tensor x in host memory (it waits for the device).
//
// None of them is pure: each allocates, copies or checks, so dead-code
// elimination and CSE leave them where the pass put them.
#pragma once

#include <cstdint>
#include <string>

#include "compiler/ir/graph.h"
#include "support/status.h"

namespace strata::analysis {

namespace memory_ops {
inline constexpr const char* kAllocStorage = "memory.alloc_storage";
inline constexpr const char* kAllocTensor = "memory.alloc_tensor";
inline constexpr const char* kCheckBound = "memory.check_bound";
inline constexpr const char* kAllocDeviceTensor = "device.alloc_tensor";
inline constexpr const char* kToDevice = "device.to_device";
inline constexpr const char* kToHost = "device.to_host";
}  // namespace memory_ops

// True for the names above.
bool IsMemoryOp(const std::string& name);

// The struct info of a call of one of the operators above; an error that names
// the operator and says which argument is wrong.
StatusOr<graph::StructInfo> InferMemoryOp(const graph::CallNode& call);

// The device a memory or device operator places its result on: the trailing
// string argument of alloc_storage / device.alloc_tensor / to_device; nullptr
// for host memory and for every other call.
const std::string* TargetDevice(const graph::CallNode& call);

// Constructors. The calls carry no struct info yet (Normalize infers it).
graph::Expr AllocStorage(graph::Expr size, int64_t alignment, const std::string& device);  // device "": host
graph::Expr AllocTensorInStorage(graph::Expr storage, int64_t offset, graph::Expr shape, graph::Expr dtype);
graph::Expr CheckBound(const tir::Var& var, int64_t lo, int64_t hi, const std::string& context);
graph::Expr AllocDeviceTensor(graph::Expr shape, graph::Expr dtype, const std::string& device);
graph::Expr ToDevice(graph::Expr tensor, const std::string& device);
graph::Expr ToHost(graph::Expr tensor);

}  // namespace strata::analysis
