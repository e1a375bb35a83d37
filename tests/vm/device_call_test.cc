// The VM and plugged-in devices (vm/plugged_device.h) with the simulated NPU:
// executables that need a device load its plug-in and resolve its kernels; the
// bytecode copies tensors to the device, launches device kernels and copies the
// result back; constants are uploaded once; errors name the device, the kernel
// and what is wrong, and the VM stays usable.
#include <vector>

#include <gtest/gtest.h>

#include "tests/vm/device_programs.h"
#include "tests/vm/executable_builder.h"
#include "tests/vm/test_util.h"
#include "vm/executable_description.h"
#include "vm/plugged_device.h"
#include "vm/virtual_machine.h"

namespace strata::vm {
namespace {

using testing::C;
using testing::CodeBuilder;
using testing::ExecutableBuilder;
using testing::Imm;
using testing::R;

class DeviceCallTest : public ::testing::Test {
 protected:
  void SetUp() override { RegisterDevicePlugin("sim_npu", STRATA_SIM_NPU_PLUGIN); }
};

using testing::DenseOnNpu;
using testing::DeviceKernel;

Value X() { return testing::F32({2, 3}, {1, 2, 3, -4, 5, -6}); }

TEST_F(DeviceCallTest, ADenseLayerRunsOnTheNpuAndComesBack) {
  auto exe = testing::LoadOrDie(DenseOnNpu());
  ASSERT_NE(exe, nullptr);
  ASSERT_EQ(exe->plugged_devices().size(), 1u);
  const auto& device = exe->plugged_devices()[0];
  EXPECT_EQ(device->name(), "sim_npu");
  VirtualMachine machine(exe);
  std::vector<Value> args = {X()};
  auto result = machine.Invoke("main", args);
  ASSERT_TRUE(result.ok()) << result.status().message();
  ASSERT_TRUE(result->is_tensor());
  EXPECT_EQ(result->tensor()->device().device_type, kDLCPU);
  // rows: [1,2,3] -> [1+0.5, 2, 3, -6+10] ; [-4,5,-6] -> relu([-3.5, 5, -6, 5+10])
  EXPECT_EQ(result->tensor()->ToVector<float>().value(), (std::vector<float>{1.5f, 2, 3, 4, 0, 5, 0, 15}));

  // Constants go up once: a second call copies only x in and the result out.
  auto before = device->Counters();
  ASSERT_TRUE(before.ok());
  ASSERT_TRUE(machine.Invoke("main", args).ok());
  DeviceStats second = device->Counters().value();
  second -= *before;
  EXPECT_EQ(second.host_to_device_copies, 1);
  EXPECT_EQ(second.host_to_device_bytes, 6 * 4);
  EXPECT_EQ(second.device_to_host_copies, 1);
  EXPECT_EQ(second.device_to_host_bytes, 8 * 4);
  EXPECT_EQ(second.kernel_launches, 1);
  EXPECT_GT(second.device_time_ns, 0);
}

TEST_F(DeviceCallTest, AnAbsentDeviceIsALoadErrorNamingIt) {
  auto exe = Executable::LoadFromBytes(DenseOnNpu("dense_bias_relu", "warp_npu"));
  ASSERT_FALSE(exe.ok());
  EXPECT_NE(exe.status().message().find("devices[0]: device 'warp_npu': no device plug-in found (tried "),
            std::string::npos)
      << exe.status().message();
  EXPECT_NE(exe.status().message().find("libstrata_warp_npu.so"), std::string::npos);
  // Inspection does not need the device.
  LoadOptions inspect;
  inspect.resolve = false;
  EXPECT_TRUE(Executable::LoadFromBytes(DenseOnNpu("dense_bias_relu", "warp_npu"), inspect).ok());
}

TEST_F(DeviceCallTest, AKernelTheDeviceLacksIsALoadErrorListingItsKernels) {
  auto exe = Executable::LoadFromBytes(DenseOnNpu("softmax"));
  ASSERT_FALSE(exe.ok());
  EXPECT_NE(exe.status().message().find("'sim_npu.softmax': device 'sim_npu' has no device kernel 'softmax' (it has: "),
            std::string::npos)
      << exe.status().message();
  EXPECT_NE(exe.status().message().find("dense_bias_relu"), std::string::npos);
}

TEST_F(DeviceCallTest, AFailedDeviceKernelIsReportedWhenTheHostReadsAndTheVmRecovers) {
  auto exe = testing::LoadOrDie(DenseOnNpu());
  VirtualMachine machine(exe);
  // x of 5 columns does not match W's 3: the kernel fails on the device, after
  // its launch returned; the copy back reports it.
  std::vector<Value> bad = {testing::F32({2, 5}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10})};
  auto failed = machine.Invoke("main", bad);
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("dense_bias_relu"), std::string::npos) << failed.status().message();
  EXPECT_NE(failed.status().message().find("vm.builtin.to_host"), std::string::npos) << failed.status().message();
  std::vector<Value> args = {X()};
  auto again = machine.Invoke("main", args);
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(again->tensor()->ToVector<float>().value(), (std::vector<float>{1.5f, 2, 3, 4, 0, 5, 0, 15}));
}

TEST_F(DeviceCallTest, HostAndDeviceTensorsCannotBeMixedUp) {
  ExecutableBuilder b;
  b.spec.devices.push_back({"sim_npu", ""});
  const int relu = DeviceKernel(b, "relu");
  const int to_device = b.Library("vm.builtin.to_device");
  CodeBuilder code;
  // A host tensor passed to a device kernel.
  code.Call(testing::kVoid, relu, {R(0), R(0)}).Ret(0);
  b.Bytecode("host_to_device_kernel", {"x"}, 1, code);
  CodeBuilder bad_index;
  bad_index.Call(1, to_device, {R(0), Imm(3)}).Ret(1);
  b.Bytecode("bad_device", {"x"}, 2, bad_index);
  auto exe = testing::LoadOrDie(b.Write());
  VirtualMachine machine(exe);
  std::vector<Value> args = {X()};
  auto mixed = machine.Invoke("host_to_device_kernel", args);
  ASSERT_FALSE(mixed.ok());
  EXPECT_NE(mixed.status().message().find("device kernel 'relu' on 'sim_npu' argument 0: the tensor is on cpu:0, "
                                          "not on the device (copy it with to_device)"),
            std::string::npos)
      << mixed.status().message();
  auto out_of_range = machine.Invoke("bad_device", args);
  ASSERT_FALSE(out_of_range.ok());
  EXPECT_NE(out_of_range.status().message().find("vm.builtin.to_device: device 3 out of range (the executable has 1 "
                                                 "device)"),
            std::string::npos)
      << out_of_range.status().message();
}

TEST_F(DeviceCallTest, DeviceMemoryExhaustionIsAClearErrorAndTheVmStaysUsable) {
  ExecutableBuilder b;
  b.spec.devices.push_back({"sim_npu", "memory=1M"});
  const int alloc = b.Library("vm.builtin.alloc_device_tensor");
  const int big = b.Shape({1024, 1024});  // 4 MiB of f32
  const int f32 = b.DType(DataType::F32());
  CodeBuilder code;
  code.Call(1, alloc, {C(big), C(f32), Imm(0)}).Ret(1);
  b.Bytecode("too_big", {"x"}, 2, code);
  const int to_device = b.Library("vm.builtin.to_device");
  const int to_host = b.Library("vm.builtin.to_host");
  CodeBuilder round_trip;
  round_trip.Call(1, to_device, {R(0), Imm(0)}).Call(2, to_host, {R(1)}).Ret(2);
  b.Bytecode("round_trip", {"x"}, 3, round_trip);
  auto exe = testing::LoadOrDie(b.Write());
  VirtualMachine machine(exe);
  std::vector<Value> args = {X()};
  auto failed = machine.Invoke("too_big", args);
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("device 'sim_npu': buffer_allocate failed"), std::string::npos)
      << failed.status().message();
  EXPECT_NE(failed.status().message().find("out of device memory"), std::string::npos) << failed.status().message();
  auto after = machine.Invoke("round_trip", args);
  ASSERT_TRUE(after.ok()) << after.status().message();
  EXPECT_EQ(after->tensor()->ToVector<float>().value(), (std::vector<float>{1, 2, 3, -4, 5, -6}));
}

TEST_F(DeviceCallTest, InspectListsTheDevicesAndWhereEachKernelRuns) {
  LoadOptions inspect;
  inspect.resolve = false;
  auto exe = Executable::LoadFromBytes(DenseOnNpu(), inspect);
  ASSERT_TRUE(exe.ok()) << exe.status().message();
  std::string text = DescribeExecutable(**exe);
  EXPECT_NE(text.find("devices (1):\n  [0] sim_npu  options \"memory=4M\"  1 device kernel"), std::string::npos)
      << text;
  EXPECT_NE(text.find("sim_npu.dense_bias_relu  device kernel  dense_bias_relu on device sim_npu"), std::string::npos)
      << text;
}

}  // namespace
}  // namespace strata::vm
