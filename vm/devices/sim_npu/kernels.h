// The simulated NPU's kernels: their signatures, argument checks, cost and the
// f32 computation. Knows nothing of queues or memory management: the device
// (device_kernels.cc) checks a call here, pins the buffers, and runs it.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <dlpack/dlpack.h>

#include "abi/device_plugin.h"
#include "vm/devices/sim_npu/config.h"

namespace sim_npu {

// A kernel argument as the device keeps it: a copy of a StrataDeviceArg (the
// caller's shape array is only valid during queue_launch).
struct Arg {
  int32_t kind = 0;  // STRATA_DEVICE_ARG_*
  // Buffers:
  uint64_t buffer = 0;
  uint64_t byte_offset = 0;
  uint64_t bytes = 0;  // of the tensor, from its shape and dtype
  DLDataType dtype{};
  int32_t ndim = 0;
  std::array<int64_t, STRATA_DEVICE_MAX_NDIM> dims{};
  // Scalars:
  int64_t i64 = 0;
  double f64 = 0;

  std::span<const int64_t> shape() const { return {dims.data(), static_cast<size_t>(ndim)}; }
};

enum class ParamKind { kInput, kOutput, kInt };

struct Param {
  const char* name;
  ParamKind kind;
};

// What a kernel keeps the device busy with (CostModel turns it into time).
struct Cost {
  uint64_t mac_cycles = 0;
  uint64_t vector_cycles = 0;
};

struct KernelDef {
  const char* name;
  std::vector<Param> params;  // tensors are f32; kInt parameters take STRATA_DEVICE_ARG_I64
  // Elementwise kernels may write in place: their output may be exactly the
  // bytes of an input of the output's shape. Other kernels' outputs overlap nothing.
  bool elementwise;
  // The kernel's own shape and scalar checks, run after the shared ones; sets the cost.
  bool (*check)(std::span<const Arg> args, const CostModel& cost, Cost* out_cost, std::string* error);
  // Computes the outputs. data[i] points at argument i's first element (null for scalars).
  void (*run)(std::span<const Arg> args, std::span<float* const> data);
};

// Every kernel, in a fixed order (its index is its identity in kernel handles).
const std::vector<KernelDef>& Kernels();

// Checks a call completely without touching memory: argument count and kinds,
// f32 dtypes, element-aligned offsets, the kernel's shapes and scalars, and that
// no output overlaps an input (except exact in-place elementwise outputs). Sets
// the cost; on failure returns false with a message naming the argument.
bool CheckCall(const KernelDef& def, std::span<const Arg> args, const CostModel& cost, Cost* out_cost,
               std::string* error);

// Runs a call CheckCall accepted: data[i] points at argument i's first element
// (null for scalars). Does nothing when every output is empty.
void RunCall(const KernelDef& def, std::span<const Arg> args, std::span<float* const> data);

// "[2, 3, 4]"
std::string ShapeString(std::span<const int64_t> shape);
// "float32", "int64", "float16x4", "type code 7 with 32 bits"
std::string DTypeString(DLDataType dtype);

}  // namespace sim_npu
