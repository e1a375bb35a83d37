// Kernels on the device: looking one up, checking and copying a launch's
// arguments at submission, and running it on a queue's worker with its buffers
// pinned (see device.h). The kernels' own checks and math are kernels.cc's.
#include <cstring>

#include "vm/devices/sim_npu/device.h"

namespace sim_npu {
namespace {

// Tensor dimensions beyond this are refused at submission, which keeps every
// index computation of the kernels far from overflow.
constexpr int64_t kMaxDim = int64_t{1} << 40;
constexpr int32_t kMaxArgs = 64;

// Copies a StrataDeviceArg, checking what must hold to keep it: a known kind, a
// rank in range, a readable shape of non-negative dimensions, a byte size that fits.
bool CopyArg(const StrataDeviceArg& in, Arg* out, std::string* error) {
  out->kind = in.kind;
  if (in.kind == STRATA_DEVICE_ARG_I64) {
    out->i64 = in.value.i64;
    return true;
  }
  if (in.kind == STRATA_DEVICE_ARG_F64) {
    out->f64 = in.value.f64;
    return true;
  }
  if (in.kind != STRATA_DEVICE_ARG_BUFFER) {
    *error = "unknown argument kind " + std::to_string(in.kind) + " (expected STRATA_DEVICE_ARG_BUFFER, _I64 or _F64)";
    return false;
  }
  const StrataDeviceTensorArg& t = in.value.buffer;
  if (t.ndim < 0 || t.ndim > STRATA_DEVICE_MAX_NDIM) {
    *error = "rank " + std::to_string(t.ndim) + " is out of range [0, " + std::to_string(STRATA_DEVICE_MAX_NDIM) + "]";
    return false;
  }
  if (t.ndim > 0 && t.shape == nullptr) {
    *error = "shape is NULL for rank " + std::to_string(t.ndim);
    return false;
  }
  const uint64_t element_bits = uint64_t{t.dtype.bits} * t.dtype.lanes;
  if (element_bits == 0 || element_bits % 8 != 0) {
    *error = "dtype " + DTypeString(t.dtype) + " is not a whole number of bytes";
    return false;
  }
  out->buffer = t.buffer;
  out->byte_offset = t.byte_offset;
  out->dtype = t.dtype;
  out->ndim = t.ndim;
  uint64_t bytes = element_bits / 8;
  bool empty = false;
  for (int32_t d = 0; d < t.ndim; ++d) {
    const int64_t dim = t.shape[d];
    if (dim < 0 || dim > kMaxDim) {
      *error = "dimension " + std::to_string(d) + " = " + std::to_string(dim) + " is out of range [0, 2^40]";
      return false;
    }
    out->dims[d] = dim;
    if (dim == 0) empty = true;
    // Saturates: a non-empty tensor that large is refused by the bounds check anyway.
    if (!empty && __builtin_mul_overflow(bytes, static_cast<uint64_t>(dim), &bytes)) bytes = UINT64_MAX;
  }
  out->bytes = empty ? 0 : bytes;
  return true;
}

}  // namespace

int Device::KernelLookup(const char* name, StrataDeviceKernel* out) {
  if (name == nullptr || out == nullptr) {
    return Fail(STRATA_DEVICE_ERROR_INVALID_ARGUMENT, "kernel_lookup: name and out_kernel must not be NULL");
  }
  const std::vector<KernelDef>& kernels = Kernels();
  for (size_t i = 0; i < kernels.size(); ++i) {
    if (std::strcmp(kernels[i].name, name) == 0) {
      *out = MakeHandle(Kind::kKernel, serial_, i + 1);
      return STRATA_DEVICE_OK;
    }
  }
  std::string known;
  for (const KernelDef& k : kernels) known += (known.empty() ? "" : ", ") + std::string(k.name);
  return Fail(STRATA_DEVICE_ERROR_NOT_FOUND,
              "kernel_lookup: sim_npu has no kernel '" + std::string(name) + "' (it has " + known + ")");
}

int Device::Launch(StrataDeviceQueue queue, StrataDeviceKernel kernel, const StrataDeviceArg* args, int32_t num_args) {
  const std::vector<KernelDef>& kernels = Kernels();
  const uint64_t index = CounterOf(kernel);
  if (KindBits(kernel) != static_cast<uint64_t>(Kind::kKernel) || SerialOf(kernel) != serial_ || index == 0 ||
      index > kernels.size()) {
    return Fail(STRATA_DEVICE_ERROR_INVALID_ARGUMENT,
                "queue_launch: " + Describe(kernel) + " is not a kernel of this device (use kernel_lookup)");
  }
  const KernelDef& def = kernels[index - 1];
  const std::string fn = "queue_launch(" + std::string(def.name) + ")";
  if (num_args < 0 || num_args > kMaxArgs || (num_args > 0 && args == nullptr)) {
    return Fail(STRATA_DEVICE_ERROR_INVALID_ARGUMENT, fn + ": " + std::to_string(num_args) + " arguments at " +
                                                          Hex(reinterpret_cast<uintptr_t>(args)) + " (expected 0 to " +
                                                          std::to_string(kMaxArgs) + " entries, args not NULL)");
  }
  Command cmd;
  cmd.type = Command::kLaunch;
  cmd.kernel = &def;
  cmd.args.resize(static_cast<size_t>(num_args));
  std::vector<BufferUse> uses;
  for (int32_t i = 0; i < num_args; ++i) {
    const std::string where =
        fn + ": argument #" + std::to_string(i) +
        (static_cast<size_t>(i) < def.params.size() ? " '" + std::string(def.params[i].name) + "'" : "");
    std::string error;
    if (!CopyArg(args[i], &cmd.args[i], &error))
      return Fail(STRATA_DEVICE_ERROR_INVALID_ARGUMENT, where + ": " + error);
    const Arg& a = cmd.args[i];
    if (a.kind == STRATA_DEVICE_ARG_BUFFER) uses.push_back({a.buffer, a.byte_offset, a.bytes, nullptr, where});
  }
  return SubmitChecked(fn.c_str(), queue, std::move(cmd), uses);
}

void Device::RunKernel(const Command& cmd, Outcome* out) {
  const KernelDef& def = *cmd.kernel;
  Cost cost;
  if (!CheckCall(def, cmd.args, cost_, &cost, &out->error)) return;
  std::vector<float*> data(cmd.args.size(), nullptr);
  std::vector<uint64_t> pinned;
  for (size_t i = 0; i < cmd.args.size() && out->error.empty(); ++i) {
    const Arg& a = cmd.args[i];
    if (a.kind != STRATA_DEVICE_ARG_BUFFER) continue;
    uint8_t* p = nullptr;
    if (Pin(a.buffer, a.byte_offset, a.bytes, &p, &out->error)) {
      pinned.push_back(a.buffer);
      data[i] = reinterpret_cast<float*>(p);
    } else {
      out->error = "argument #" + std::to_string(i) + " '" + def.params[i].name + "': " + out->error;
    }
  }
  if (out->error.empty()) {
    RunCall(def, cmd.args, data);
    out->cost_ns = cost_.KernelNs(cost.mac_cycles, cost.vector_cycles);
  }
  for (uint64_t b : pinned) Unpin(b);
}

}  // namespace sim_npu
