// PlaceOnDevices: device memory and the copies at device boundaries.
//
// Runs after CallTIRRewrite, when an offloaded operator is a destination-passing
// call of a device kernel, `call_packed("sim_npu:dense_bias", x, w, b, out)` (the
// module's ExternalModule of format "device" names the device and its kernels;
// byoc/sim_npu). For each graph function, in program order:
//
//   - the output of a device call is allocated on the device
//     (`device.alloc_tensor(shape, dtype(D), "sim_npu")`), so a chain of
//     device calls passes device tensors from one to the next with no copy;
//   - a host tensor a device call reads is copied in once (`device.to_device(x, "sim_npu")`),
//     and every later device call reuses the copy; constants are copied in the
//     same way and the VM uploads each constant once per executable;
//   - a device tensor anything else reads (a CPU kernel, a library function, a
//     tuple, the function's result) is copied out once (`device.to_host(x)`),
//     right before its first host use; the copy waits for the device, so the
//     host synchronizes only when it reads;
//   - a device call's scalar arguments (convolution strides, padding, dilation)
//     follow its output, as the device ABI orders them.
//
// So a call makes the fewest copies its placement allows: each input in once, each
// result out once, and one pair per island of CPU-only operators between device
// operators.
#pragma once

#include "compiler/ir/module.h"
#include "support/status.h"

namespace strata::transform {

StatusOr<ir::IRModule> PlaceOnDevices(ir::IRModule module);

}  // namespace strata::transform
