// strata compile --target cpu,npu end to end: the zoo MLP and CNN offloaded to
// the simulated NPU match onnxruntime at every exported shape, make exactly the
// host<->device copies their placement needs (inputs in, outputs out, one pair
// per CPU-only island; constants once per executable), and the CLI reports the
// device work and rejects unknown targets.
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "compiler/driver/compile.h"
#include "compiler/frontend/onnx/onnx_importer.h"
#include "tests/e2e/e2e_test_util.h"
#include "vm/plugged_device.h"
#include "vm/tensor_io/npy.h"
#include "vm/virtual_machine.h"

namespace strata {
namespace {

namespace fs = std::filesystem;
using testing::ExpectTensorNear;
using testing::SourcePath;

std::shared_ptr<const vm::Executable> CompileForNpu(const std::string& model) {
  vm::RegisterDevicePlugin("sim_npu", STRATA_SIM_NPU_PLUGIN);
  auto module = frontend::ImportOnnxFile(SourcePath("tests/fixtures/onnx/" + model + "/model.onnx"));
  EXPECT_TRUE(module.ok()) << module.status().message();
  if (!module.ok()) return nullptr;
  driver::CompileOptions options;
  options.device_targets = {"npu"};
  auto bytes = driver::Compile(std::move(module).value(), options);
  EXPECT_TRUE(bytes.ok()) << bytes.status().message();
  if (!bytes.ok()) return nullptr;
  auto exe = vm::Executable::LoadFromBytes(*bytes);
  EXPECT_TRUE(exe.ok()) << exe.status().message();
  return exe.ok() ? exe.value() : nullptr;
}

struct Expected {
  int64_t host_to_device;  // per call, once the constants are on the device
  int64_t device_to_host;
  int64_t kernels;
  std::vector<std::string> device_kernels;  // what runs on the NPU
};

void ExpectRunsOnNpu(const std::string& model, const Expected& expected) {
  auto exe = CompileForNpu(model);
  ASSERT_NE(exe, nullptr);
  std::vector<std::string> kernels;
  for (const vm::VMFunction& f : exe->functions()) {
    if (f.kind == vm::FunctionKind::kDevice) kernels.push_back(f.symbol);
  }
  std::sort(kernels.begin(), kernels.end());
  EXPECT_EQ(kernels, expected.device_kernels);

  const fs::path dir = SourcePath("tests/fixtures/onnx/" + model);
  int runs = 0;
  for (; fs::exists(dir / ("run_" + std::to_string(runs))); ++runs) {
    const fs::path run = dir / ("run_" + std::to_string(runs));
    SCOPED_TRACE(model + " " + run.string());
    std::vector<vm::Value> inputs = {vm::Value::FromTensor(vm::ReadNpyFile((run / "in0.npy").string()).value())};
    const vm::Value reference = vm::Value::FromTensor(vm::ReadNpyFile((run / "out0.npy").string()).value());
    vm::VirtualMachine machine(exe);
    for (int call = 0; call < 2; ++call) {
      auto result = machine.Invoke("main", inputs);
      ASSERT_TRUE(result.ok()) << result.status().message();
      ASSERT_EQ(result->tensor()->device().device_type, kDLCPU);
      ExpectTensorNear(*result, reference, 1e-4f, 1e-5f);
    }
    // The second call: the executable's constants are on the device already.
    const vm::DeviceStats& stats = machine.last_device_stats();
    EXPECT_EQ(stats.host_to_device_copies, expected.host_to_device);
    EXPECT_EQ(stats.device_to_host_copies, expected.device_to_host);
    EXPECT_EQ(stats.kernel_launches, expected.kernels);
    EXPECT_GT(stats.device_time_ns, 0);
  }
  EXPECT_GE(runs, 3);
}

// fc1 (dense + bias) on the NPU; GELU's divide and erf on the CPU (one island:
// fc1's result out, erf's in); its add and two multiplies, fc2 (+ relu) and fc3
// on the NPU; softmax on the CPU (fc3's result out, which is also the output's
// copy). So: x in + the island's pair = 2 in, 2 out.
TEST(NpuTarget, MlpMatchesOnnxRuntimeWithTheFewestCopies) {
  ExpectRunsOnNpu("mlp", {2, 2, 6, {"add", "dense_bias", "dense_bias_relu", "mul"}});
}

// The stem's batch_norm is folded into its conv (FoldBatchNorm), so conv + bias
// + relu run on the NPU as one kernel; max_pool on the CPU, the residual block
// (conv + bias + relu, conv + bias, add, relu) on the NPU, avg_pool on the CPU,
// the projection conv on the NPU, global_avg_pool and flatten on the CPU, the
// classifier (dense + bias) on the NPU. Three CPU islands: the image in plus
// three pairs = 4 in; three pairs' outputs plus the logits = 4 out.
TEST(NpuTarget, CnnMatchesOnnxRuntimeWithTheFewestCopies) {
  ExpectRunsOnNpu("cnn", {4, 4, 7, {"add", "conv2d_bias", "conv2d_bias_relu", "dense_bias", "relu"}});
}

using NpuCli = testing::StrataCliTest;

TEST_F(NpuCli, CompileForCpuAndNpuThenRunWithStats) {
  const std::string exe = (dir_ / "mlp_npu.stx").string();
  std::string out;
  ASSERT_EQ(Run("compile " + SourcePath("tests/fixtures/onnx/mlp/model.onnx") + " --target cpu,npu -o " + exe, &out), 0)
      << out;
  ASSERT_EQ(
      Run("run " + exe + " --input=@" + SourcePath("tests/fixtures/onnx/mlp/run_2/in0.npy") + " --expected-output=@" +
              SourcePath("tests/fixtures/onnx/mlp/run_2/out0.npy") + " --stats=per-call --repeat 2",
          &out),
      0)
      << out;
  EXPECT_NE(out.find("devices, call 2: 2 host->device copies"), std::string::npos) << out;
  EXPECT_NE(out.find("2 device->host copies"), std::string::npos) << out;
  EXPECT_NE(out.find("6 device kernel launches, device time "), std::string::npos) << out;
  ASSERT_EQ(
      Run("run " + exe + " --input=@" + SourcePath("tests/fixtures/onnx/mlp/run_2/in0.npy") + " --stats --repeat 2",
          &out),
      0)
      << out;
  // Summed over the calls (the first also uploads the weights).
  EXPECT_NE(out.find("devices over 2 calls: "), std::string::npos) << out;
  EXPECT_EQ(out.find("devices, call "), std::string::npos) << out;
  EXPECT_NE(out.find("4 device->host copies"), std::string::npos) << out;
  EXPECT_NE(out.find("12 device kernel launches"), std::string::npos) << out;

  ASSERT_EQ(Run("inspect " + exe, &out), 0) << out;
  EXPECT_NE(out.find("devices (1):\n  [0] sim_npu  4 device kernels"), std::string::npos) << out;
  EXPECT_NE(out.find("sim_npu:dense_bias_relu  device kernel  dense_bias_relu on device sim_npu"), std::string::npos)
      << out;
  // Device memory is planned per device: the NPU's intermediates share device storages.
  EXPECT_NE(out.find("(symbolic, reused)  on sim_npu"), std::string::npos) << out;

  ASSERT_EQ(Run("run " + exe + " --input=@" + SourcePath("tests/fixtures/onnx/mlp/run_2/in0.npy") + " --profile", &out),
            0)
      << out;
  EXPECT_NE(out.find("call device"), std::string::npos) << out;
}

TEST_F(NpuCli, DeviceOptionsSizeTheDeviceAtLoad) {
  const std::string exe = (dir_ / "mlp_npu.stx").string();
  const std::string input = " --input=@" + SourcePath("tests/fixtures/onnx/mlp/run_2/in0.npy");
  std::string out;
  ASSERT_EQ(Run("compile " + SourcePath("tests/fixtures/onnx/mlp/model.onnx") + " --target cpu,npu -o " + exe, &out), 0)
      << out;
  // Too small for the weights: a clear device error, not a crash.
  EXPECT_EQ(Run("run " + exe + input + " --device-options sim_npu=memory=4K", &out), 1);
  EXPECT_NE(out.find("device 'sim_npu'"), std::string::npos) << out;
  EXPECT_NE(out.find("out of device memory"), std::string::npos) << out;
  // A bad option is the plug-in's error, naming the device.
  EXPECT_EQ(Run("run " + exe + input + " --device-options sim_npu=warp=9", &out), 1);
  EXPECT_NE(out.find("devices[0]: device 'sim_npu': cannot open it with options 'warp=9'"), std::string::npos) << out;
  EXPECT_EQ(Run("run " + exe + input + " --device-options memory", &out), 2);
  EXPECT_NE(out.find("--device-options expects NAME=OPTIONS"), std::string::npos) << out;
  EXPECT_EQ(Run("run " + exe + input + " --device-options sim_npu=memory=64M", &out), 0) << out;
}

TEST_F(NpuCli, UnknownTargetsAreRejected) {
  const std::string model = SourcePath("tests/fixtures/onnx/mlp/model.onnx");
  std::string out;
  EXPECT_EQ(Run("compile " + model + " --target cpu,gpu -o " + (dir_ / "x.stx").string(), &out), 2);
  EXPECT_NE(out.find("--target: unknown target 'gpu' in 'cpu,gpu' (known: cpu, npu)"), std::string::npos) << out;
  EXPECT_EQ(Run("compile " + model + " --target npu -o " + (dir_ / "x.stx").string(), &out), 2);
  EXPECT_NE(out.find("--target must include cpu"), std::string::npos) << out;
}

}  // namespace
}  // namespace strata
