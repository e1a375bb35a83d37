// Test programs on the simulated NPU, built without the compiler: shared by the
// device, fault-injection and concurrency tests.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tests/vm/executable_builder.h"

namespace strata::testing {

// Adds a device function `kernel` of device `device` to the function table.
inline int32_t DeviceKernel(ExecutableBuilder& b, const std::string& kernel, int32_t device = 0) {
  serialization::FunctionSpec f;
  f.name = "sim_npu." + kernel;
  f.kind = serialization::FunctionKindSpec::kDevice;
  f.device_index = device;
  f.symbol = kernel;
  b.spec.functions.push_back(std::move(f));
  return static_cast<int32_t>(b.spec.functions.size() - 1);
}

// main(x: [2, 3]) = relu(x W^T + bias) with W [4, 3] and bias [4] constants,
// computed on device `device` opened with `options`: x in, weights uploaded,
// `kernel`, result out.
inline std::vector<uint8_t> DenseOnNpu(const std::string& kernel = "dense_bias_relu",
                                       const std::string& device = "sim_npu",
                                       const std::string& options = "memory=4M") {
  ExecutableBuilder b;
  b.spec.devices.push_back({device, options});
  const int to_device = b.Library("vm.builtin.to_device");
  const int to_host = b.Library("vm.builtin.to_host");
  const int alloc = b.Library("vm.builtin.alloc_device_tensor");
  const int dense = DeviceKernel(b, kernel);
  const int w = b.Tensor<float>(DataType::F32(), {4, 3}, {1, 0, 0, 0, 1, 0, 0, 0, 1, -1, -1, -1});
  const int bias = b.Tensor<float>(DataType::F32(), {4}, {0.5f, 0, 0, 10});
  const int shape = b.Shape({2, 4});
  const int f32 = b.DType(DataType::F32());
  CodeBuilder code;
  code.Call(1, to_device, {R(0), Imm(0)})
      .Call(2, to_device, {C(w), Imm(0)})
      .Call(3, to_device, {C(bias), Imm(0)})
      .Call(4, alloc, {C(shape), C(f32), Imm(0)})
      .Call(kVoid, dense, {R(1), R(2), R(3), R(4)})
      .Call(5, to_host, {R(4)})
      .Ret(5);
  b.Bytecode("main", {"x"}, 6, code);
  return b.Write();
}

}  // namespace strata::testing
