// The BYOC backends that ship with Strata (registered by RegisterBuiltinBackends).
#pragma once

#include "compiler/byoc/backend.h"

namespace strata::byoc {

// "dnnl": oneDNN library functions of the runtime (compiler/byoc/dnnl/).
Backend DnnlBackend();
// "ccodegen": C source calling the sample library kernels/sample_byoc, compiled
// at compile time (compiler/byoc/ccodegen/; the tutorial of docs/byoc.md).
Backend CCodegenBackend();
// "sim_npu": kernels of the simulated NPU device plug-in (compiler/byoc/sim_npu/;
// what `--target cpu,npu` offloads; docs/devices.md).
Backend SimNpuBackend();

}  // namespace strata::byoc
