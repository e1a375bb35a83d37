// Fault injection: an allocation that fails (injected through the pool's
// testing hook, and a real one the system cannot give), a device that fails in
// the middle of its queue, and a library function that returns an error.
//
// For each, the call returns an error that names the cause; the same VM and
// executable then run the next call correctly; and nothing leaks: the pool's
// live bytes (and, for the device, its memory in use) return to their level
// before the call. The AddressSanitizer build runs these tests too, and its
// LeakSanitizer checks at exit that nothing else was lost.
#include <algorithm>
#include <cmath>
#include <mutex>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/vm/attention_model.h"
#include "tests/vm/device_programs.h"
#include "tests/vm/executable_builder.h"
#include "tests/vm/test_util.h"
#include "vm/kernel_threads.h"
#include "vm/plugged_device.h"
#include "vm/virtual_machine.h"

// The real allocation failure asks for 256 TiB: AddressSanitizer's allocator
// must return null for it, as the system's does, instead of aborting.
extern "C" const char* __asan_default_options() { return "allocator_may_return_null=1"; }

namespace strata::vm {
namespace {

using testing::AttentionModel;
using testing::C;
using testing::CodeBuilder;
using testing::ExecutableBuilder;
using testing::Imm;
using testing::R;

#define EXPECT_CONTAINS(text, part) \
  EXPECT_NE(std::string(text).find(part), std::string::npos) << "missing \"" << (part) << "\" in:\n" << (text)

// Runs the attention model at (batch, seq) and checks the result; empty when it matches.
std::string RunAttention(VirtualMachine& machine, MemoryPool& input_pool, int64_t batch, int64_t seq) {
  std::mt19937 rng(static_cast<uint32_t>(batch * 1000 + seq));
  AttentionModel::Inputs in = AttentionModel::RandomInputs(rng, input_pool, batch, seq);
  std::vector<Value> args = in.Values();
  StatusOr<Value> result = machine.Invoke("main", args);
  if (!result.ok()) return result.status().message();
  return AttentionModel::Mismatch(in, *result);
}

// ---- allocation failures ------------------------------------------------------

TEST(AllocationFaultTest, TheFailureHookIsAskedOnlyForSystemAllocationsAndTheCacheIsGivenBackFirst) {
  auto pool = MemoryPool::Create();
  { ASSERT_TRUE(pool->AllocateStorage(4096, 64).ok()); }  // cached now
  std::vector<int64_t> asked;
  pool->SetSystemAllocationFailureForTesting([&](int64_t bytes) {
    asked.push_back(bytes);
    return true;
  });
  // The cache serves this one: the system is not asked.
  auto cached = pool->AllocateStorage(4000, 64);
  ASSERT_TRUE(cached.ok()) << cached.status().message();
  EXPECT_TRUE(asked.empty());
  // Nothing cached to give back: asked once, and the request fails.
  auto failed = pool->AllocateStorage(100000, 64);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().message(), "out of memory: cannot allocate 100000 bytes on cpu:0");
  EXPECT_EQ(asked, (std::vector<int64_t>{102400}));  // the size class of 100000 bytes: 25 steps of 4 KiB
  // With blocks cached, a failure gives them back and asks again.
  cached = Ref<Storage>();
  EXPECT_EQ(pool->cached_bytes(), 4096);
  asked.clear();
  pool->SetSystemAllocationFailureForTesting([&](int64_t bytes) {
    asked.push_back(bytes);
    return asked.size() == 1;  // only the first attempt fails
  });
  auto retried = pool->AllocateStorage(100000, 64);
  ASSERT_TRUE(retried.ok()) << retried.status().message();
  EXPECT_EQ(asked.size(), 2u);
  EXPECT_EQ(pool->cached_bytes(), 0);
  EXPECT_EQ(pool->live_bytes(), 102400);
  // Off again.
  pool->SetSystemAllocationFailureForTesting(nullptr);
  EXPECT_TRUE(pool->AllocateStorage(1 << 20, 64).ok());
}

TEST(AllocationFaultTest, AFailedAllocationFailsTheCallNamingTheTensorAndTheVmRunsTheNextCall) {
  ASSERT_TRUE(SetKernelThreadCount(1).ok());
  auto exe = testing::LoadOrDie(AttentionModel::Build());
  ASSERT_NE(exe, nullptr);
  VirtualMachine machine(exe);
  MemoryPool& pool = machine.memory_pool();
  auto inputs = MemoryPool::Create();
  ASSERT_EQ(RunAttention(machine, *inputs, 2, 5), "");
  const int64_t live_before = pool.live_bytes();

  // The system "has" no block of 1 MiB or more: scores [16, 128, 128] f32
  // (exactly 1 MiB) fails, after the arena and q were allocated.
  pool.SetSystemAllocationFailureForTesting([](int64_t bytes) { return bytes >= (int64_t{1} << 20); });
  std::mt19937 rng(7);
  AttentionModel::Inputs big = AttentionModel::RandomInputs(rng, *inputs, 16, 128);
  std::vector<Value> args = big.Values();
  StatusOr<Value> failed = machine.Invoke("main", args);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().message(),
            "functions[11] 'main': instruction at word 132 (call): vm.builtin.alloc_tensor: out of memory: cannot "
            "allocate 1048576 bytes on cpu:0 for a Tensor[(16, 128, 128), f32]");
  // The arena, q and the shape heap went back to the pool with the failed call.
  EXPECT_EQ(pool.live_bytes(), live_before);

  // The same VM, hook still on: shapes whose blocks are smaller run, and are right.
  EXPECT_EQ(RunAttention(machine, *inputs, 3, 17), "");
  EXPECT_EQ(RunAttention(machine, *inputs, 16, 64), "");  // scores of 512 KiB
  EXPECT_EQ(pool.live_bytes(), live_before);
  // And with the system back, the shape that failed.
  pool.SetSystemAllocationFailureForTesting(nullptr);
  StatusOr<Value> again = machine.Invoke("main", args);
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(AttentionModel::Mismatch(big, *again), "");
  again = Value();
  EXPECT_EQ(pool.live_bytes(), live_before);
}

// main(shape: Shape, x: Tensor) -> Tensor: allocates a tensor of `shape`, then
// one of x's shape, and returns the latter (uninitialized): a program whose
// first allocation the caller can make as large as it likes.
std::vector<uint8_t> ScratchExecutable() {
  ExecutableBuilder b;
  const int alloc = b.Library("vm.builtin.alloc_tensor");
  const int shape_of = b.Library("vm.builtin.shape_of");
  const int f32 = b.DType(DataType::F32());
  CodeBuilder code;
  code.Call(2, alloc, {R(0), C(f32)}).Call(3, shape_of, {R(1)}).Call(2, alloc, {R(3), C(f32)}).Ret(2);
  b.Bytecode("main", {"shape", "x"}, 4, code);
  return b.Write();
}

TEST(AllocationFaultTest, ARequestLargerThanTheSystemCanGiveFailsTheCallAndTheVmRunsTheNextCall) {
  auto exe = testing::LoadOrDie(ScratchExecutable());
  ASSERT_NE(exe, nullptr);
  VirtualMachine machine(exe);
  MemoryPool& pool = machine.memory_pool();
  Value x = testing::F32({2, 3}, {1, 2, 3, 4, 5, 6});
  std::vector<Value> small = {Value::FromShape({64, 64}), x};
  ASSERT_TRUE(machine.Invoke("main", small).ok());
  ASSERT_GT(pool.cached_bytes(), 0);
  const int64_t live_before = pool.live_bytes();

  // 2^21 x 2^25 floats = 256 TiB, the largest request the pool passes on to
  // the system: a whole 48-bit address space, which no process can map, so
  // the system refuses it whatever its overcommit policy.
  std::vector<Value> huge = {Value::FromShape({int64_t{1} << 21, int64_t{1} << 25}), x};
  StatusOr<Value> failed = machine.Invoke("main", huge);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().message(),
            "functions[2] 'main': instruction at word 0 (call): vm.builtin.alloc_tensor: out of memory: cannot "
            "allocate 281474976710656 bytes on cpu:0 for a Tensor[(2097152, 33554432), f32]");
  EXPECT_EQ(pool.live_bytes(), live_before);
  // Before reporting, the pool gave its cache back and asked once more.
  EXPECT_EQ(pool.cached_bytes(), 0);

  StatusOr<Value> next = machine.Invoke("main", small);
  ASSERT_TRUE(next.ok()) << next.status().message();
  EXPECT_EQ(next->tensor()->TypeString(), "Tensor[(2, 3), f32]");
  next = Value();
  EXPECT_EQ(pool.live_bytes(), live_before);
}

// ---- a device that fails mid-queue -----------------------------------------------

using testing::DeviceKernel;

// main(x: [2, 3]) = relu(x W^T + bias) on the NPU, W [4, 3] and bias [4]
// constants. The device's copies and launches, numbered as the option
// debug_fail_command counts them: the first call 1 x in, 2 W in, 3 bias in,
// 4 dense_bias_relu, 5 result out; later calls (constants uploaded once)
// 3k+3 x in, 3k+4 the kernel, 3k+5 result out.
std::vector<uint8_t> DenseOnNpu(const std::string& options) {
  return testing::DenseOnNpu("dense_bias_relu", "sim_npu", options);
}

const std::vector<float> kDenseResult = {1.5f, 2, 3, 4, 0, 5, 0, 15};

StrataDeviceCounters DeviceCounters(PluggedDevice& device) {
  // Frees are queued behind the commands, on the VM's queue: wait for every
  // queue of the device before reading.
  EXPECT_EQ(device.api().device_synchronize(device.device()), STRATA_DEVICE_OK);
  StrataDeviceCounters c{};
  c.struct_size = sizeof(c);
  EXPECT_EQ(device.api().get_counters(device.device(), 0, &c), STRATA_DEVICE_OK);
  return c;
}

struct DeviceFault {
  int command;       // debug_fail_command: a command of the second call
  const char* what;  // how the device names it
};

// For the test's name in ctest: gtest would print the struct's bytes.
void PrintTo(const DeviceFault& fault, std::ostream* out) { *out << "command " << fault.command << ", " << fault.what; }

class DeviceFaultTest : public ::testing::TestWithParam<DeviceFault> {
 protected:
  void SetUp() override { RegisterDevicePlugin("sim_npu", STRATA_SIM_NPU_PLUGIN); }
};

TEST_P(DeviceFaultTest, ACommandFailingMidQueueFailsTheCallNamingDeviceCommandAndCause) {
  const DeviceFault fault = GetParam();
  const std::string option = "debug_fail_command=" + std::to_string(fault.command);
  auto exe = testing::LoadOrDie(DenseOnNpu("memory=4M," + option));
  ASSERT_NE(exe, nullptr);
  PluggedDevice& device = *exe->plugged_devices()[0];
  VirtualMachine machine(exe);
  std::vector<Value> args = {testing::F32({2, 3}, {1, 2, 3, -4, 5, -6})};
  StatusOr<Value> first = machine.Invoke("main", args);
  ASSERT_TRUE(first.ok()) << first.status().message();
  EXPECT_EQ(testing::ToFloats(*first), kDenseResult);
  first = Value();
  const int64_t live_before = machine.memory_pool().live_bytes();
  const StrataDeviceCounters before = DeviceCounters(device);

  // The command fails on the device after its submission returned; the copy
  // back to the host (which waits for the queue) reports it.
  StatusOr<Value> failed = machine.Invoke("main", args);
  ASSERT_FALSE(failed.ok());
  EXPECT_CONTAINS(failed.status().message(),
                  "(call): vm.builtin.to_host: device 'sim_npu': queue_synchronize failed (status 5): ");
  // (The queue numbers its commands its own way, frees included.)
  EXPECT_CONTAINS(failed.status().message(), std::string(fault.what) + " (command #");
  EXPECT_CONTAINS(failed.status().message(), ") failed: injected failure (option " + option + ")");
  EXPECT_EQ(machine.memory_pool().live_bytes(), live_before);
  const StrataDeviceCounters after = DeviceCounters(device);
  EXPECT_EQ(after.memory_in_use_bytes, before.memory_in_use_bytes);  // x and the output were freed
  EXPECT_EQ(after.failed_commands, before.failed_commands + 1);

  // The same VM, executable and device queue: the next call is right, and no
  // failure is left over for it.
  for (int i = 0; i < 2; ++i) {
    StatusOr<Value> next = machine.Invoke("main", args);
    ASSERT_TRUE(next.ok()) << next.status().message();
    EXPECT_EQ(testing::ToFloats(*next), kDenseResult);
  }
  EXPECT_EQ(machine.memory_pool().live_bytes(), live_before);
  EXPECT_EQ(DeviceCounters(device).memory_in_use_bytes, before.memory_in_use_bytes);
}

INSTANTIATE_TEST_SUITE_P(Commands, DeviceFaultTest,
                         ::testing::Values(DeviceFault{7, "kernel 'dense_bias_relu'"},
                                           DeviceFault{6, "host->device copy"}, DeviceFault{8, "device->host copy"}),
                         [](const ::testing::TestParamInfo<DeviceFault>& info) {
                           return "Command" + std::to_string(info.param.command);
                         });

// ---- a library function that returns an error -----------------------------------

// user.normalize_rows(in, out): each row of the last dimension divided by its
// largest magnitude; refuses a row that is not finite, in its own words (the
// message does not name the function: the VM must).
void RegisterNormalizeRows() {
  static std::once_flag once;
  std::call_once(once, [] {
    Status status = RegisterLibraryFunction(
        "user.normalize_rows",
        [](std::span<const Value* const> args, Value*) -> Status {
          if (args.size() != 2 || !args[0]->is_tensor() || !args[1]->is_tensor()) {
            return Status::Error("expects (in, out) tensors");
          }
          const Tensor& in = *args[0]->tensor();
          Tensor& out = *args[1]->tensor();
          const int64_t cols = in.shape().back(), rows = in.num_elements() / cols;
          const float* x = in.data_as<const float>();
          float* y = out.data_as<float>();
          for (int64_t r = 0; r < rows; ++r) {
            float largest = 0;
            for (int64_t c = 0; c < cols; ++c) {
              if (!std::isfinite(x[r * cols + c])) {
                return Status::Error("row " + std::to_string(r) + " of " + std::to_string(rows) + " is not finite");
              }
              largest = std::max(largest, std::fabs(x[r * cols + c]));
            }
            for (int64_t c = 0; c < cols; ++c) y[r * cols + c] = largest > 0 ? x[r * cols + c] / largest : 0.0f;
          }
          return Status::Ok();
        },
        /*allow_override=*/true);
    ASSERT_TRUE(status.ok()) << status.message();
  });
}

std::vector<double> NormalizedRows(std::vector<double> values) {
  const size_t cols = AttentionModel::kDim;
  for (size_t r = 0; r < values.size() / cols; ++r) {
    double largest = 0;
    for (size_t c = 0; c < cols; ++c) largest = std::max(largest, std::fabs(values[r * cols + c]));
    for (size_t c = 0; c < cols; ++c) values[r * cols + c] = largest > 0 ? values[r * cols + c] / largest : 0.0;
  }
  return values;
}

TEST(LibraryFunctionFaultTest, AnErrorFailsTheCallNamingTheFunctionAndTheVmRunsTheNextCall) {
  ASSERT_TRUE(SetKernelThreadCount(1).ok());
  RegisterNormalizeRows();
  auto exe = testing::LoadOrDie(AttentionModel::Build("user.normalize_rows"));
  ASSERT_NE(exe, nullptr);
  VirtualMachine machine(exe);
  MemoryPool& pool = machine.memory_pool();
  auto inputs = MemoryPool::Create();
  std::mt19937 rng(11);
  AttentionModel::Inputs ok = AttentionModel::RandomInputs(rng, *inputs, 3, 9);
  std::vector<Value> args = ok.Values();
  StatusOr<Value> first = machine.Invoke("main", args);
  ASSERT_TRUE(first.ok()) << first.status().message();
  EXPECT_EQ(AttentionModel::Mismatch(ok, *first, NormalizedRows(AttentionModel::Reference(ok))), "");
  first = Value();
  const int64_t live_before = pool.live_bytes();

  // A NaN in x's second batch reaches every row of that batch's result.
  AttentionModel::Inputs bad = AttentionModel::RandomInputs(rng, *inputs, 3, 9);
  bad.x.tensor()->data_as<float>()[9 * 32 + 5] = std::nanf("");
  std::vector<Value> bad_args = bad.Values();
  StatusOr<Value> failed = machine.Invoke("main", bad_args);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().message(),
            "functions[12] 'main': instruction at word 188 (call): library function 'user.normalize_rows' failed: row "
            "9 of 27 is not finite");
  // out, result, and what the failed call held went back to the pool.
  EXPECT_EQ(pool.live_bytes(), live_before);

  StatusOr<Value> next = machine.Invoke("main", args);
  ASSERT_TRUE(next.ok()) << next.status().message();
  EXPECT_EQ(AttentionModel::Mismatch(ok, *next, NormalizedRows(AttentionModel::Reference(ok))), "");
  next = Value();
  EXPECT_EQ(pool.live_bytes(), live_before);
}

TEST(LibraryFunctionFaultTest, AMessageThatNamesItsFunctionIsNotNamedTwice) {
  testing::RegisterTestFunctions();
  ExecutableBuilder b;
  const int fail = b.Library("test.fail");
  CodeBuilder code;
  code.Call(1, fail, {R(0)}).Ret(1);
  b.Bytecode("main", {"x"}, 2, code);
  auto exe = testing::LoadOrDie(b.Write());
  ASSERT_NE(exe, nullptr);
  VirtualMachine machine(exe);
  std::vector<Value> args = {Value::FromInt(3)};
  StatusOr<Value> failed = machine.Invoke("main", args);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().message(), "functions[1] 'main': instruction at word 0 (call): test.fail: Int 3");
}

}  // namespace
}  // namespace strata::vm
