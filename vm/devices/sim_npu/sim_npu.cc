// The simulated NPU: a device plug-in built exactly as a vendor driver would be
// (abi/device_plugin.h is all it knows of Strata). Device memory is an arena the
// host never sees a pointer into; each queue is a worker thread that runs its
// commands in order; kernels compute real f32 results (kernels.cc) and the cost
// model (config.h) says how long they would take on the device.
//
// This file is the plug-in's C face: the registry of open devices and the
// function table the host calls through, each entry forwarding to a Device
// (device.h) so that no C++ exception or stale pointer crosses the C ABI.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <exception>
#include <mutex>
#include <new>
#include <string>
#include <unordered_set>

#include <sys/mman.h>

#include "abi/device_plugin.h"
#include "vm/devices/sim_npu/config.h"
#include "vm/devices/sim_npu/device.h"
#include "vm/devices/sim_npu/handles.h"

namespace sim_npu {
namespace {

constexpr char kPluginVersion[] = "1.0";

// Open devices, so that a stale or foreign StrataDevice* is an error, not a crash.
std::mutex& RegistryMutex() {
  static std::mutex* mu = new std::mutex();  // never destroyed: used until the process ends
  return *mu;
}
std::unordered_set<const void*>& Registry() {
  static auto* devices = new std::unordered_set<const void*>();
  return *devices;
}
std::atomic<uint16_t> next_serial{1};

// Errors of calls without a (valid) device: last_error(NULL).
thread_local std::string t_global_error;

int GlobalFail(int code, std::string message) {
  t_global_error = std::move(message);
  return code;
}

// ---- the C table ------------------------------------------------------------------

// Runs `body` on the open device behind `handle`; a pointer that is not an open
// device, and any exception, become error codes (nothing may unwind into C).
template <typename Body>
int WithDevice(StrataDevice* handle, const char* fn, Body body) {
  Device* device = reinterpret_cast<Device*>(handle);
  {
    std::lock_guard<std::mutex> lock(RegistryMutex());
    if (Registry().count(device) == 0) {
      return GlobalFail(
          STRATA_DEVICE_ERROR_INVALID_ARGUMENT,
          std::string(fn) + ": " + Hex(reinterpret_cast<uintptr_t>(handle)) + " is not an open sim_npu device");
    }
  }
  try {
    return body(*device);
  } catch (const std::bad_alloc&) {
    return device->Fail(STRATA_DEVICE_ERROR_INTERNAL, std::string(fn) + ": out of host memory");
  } catch (const std::exception& e) {
    return device->Fail(STRATA_DEVICE_ERROR_INTERNAL, std::string(fn) + ": " + e.what());
  }
}

const char* ApiLastError(StrataDevice* handle) {
  if (handle != nullptr) {
    Device* device = reinterpret_cast<Device*>(handle);
    std::lock_guard<std::mutex> lock(RegistryMutex());
    if (Registry().count(device) != 0) return device->LastError();
  }
  return t_global_error.c_str();
}

int ApiDeviceCount(int32_t* out_count) {
  if (out_count == nullptr) return GlobalFail(STRATA_DEVICE_ERROR_INVALID_ARGUMENT, "device_count: out_count is NULL");
  *out_count = 1;
  return STRATA_DEVICE_OK;
}

int ApiDeviceOpen(int32_t index, const char* options, StrataDevice** out_device) {
  if (out_device == nullptr) return GlobalFail(STRATA_DEVICE_ERROR_INVALID_ARGUMENT, "device_open: out_device is NULL");
  if (index != 0) {
    return GlobalFail(STRATA_DEVICE_ERROR_INVALID_ARGUMENT,
                      "device_open: sim_npu has 1 device (index 0), got index " + std::to_string(index));
  }
  try {
    Config config;
    std::string error;
    if (!ParseOptions(options, &config, &error)) {
      return GlobalFail(STRATA_DEVICE_ERROR_INVALID_ARGUMENT, "device_open: " + error);
    }
    // Reserved, not committed: pages cost host memory only once written.
    void* memory =
        mmap(nullptr, config.memory_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (memory == MAP_FAILED) {
      return GlobalFail(STRATA_DEVICE_ERROR_OUT_OF_MEMORY, "device_open: cannot reserve " +
                                                               std::to_string(config.memory_bytes) +
                                                               " bytes of host memory for the device (option memory)");
    }
    auto* device = new Device(config, next_serial.fetch_add(1), static_cast<uint8_t*>(memory));
    std::lock_guard<std::mutex> lock(RegistryMutex());
    Registry().insert(device);
    *out_device = reinterpret_cast<StrataDevice*>(device);
    return STRATA_DEVICE_OK;
  } catch (const std::exception& e) {
    return GlobalFail(STRATA_DEVICE_ERROR_INTERNAL, std::string("device_open: ") + e.what());
  }
}

int ApiDeviceClose(StrataDevice* handle) {
  Device* device = reinterpret_cast<Device*>(handle);
  {
    std::lock_guard<std::mutex> lock(RegistryMutex());
    if (Registry().erase(device) == 0) {
      return GlobalFail(STRATA_DEVICE_ERROR_INVALID_ARGUMENT,
                        "device_close: " + Hex(reinterpret_cast<uintptr_t>(handle)) + " is not an open sim_npu device");
    }
  }
  std::string unreported;
  try {
    unreported = device->Shutdown();
  } catch (const std::exception&) {
    unreported.clear();  // only the message could not be built; the queues are stopped
  }
  delete device;
  if (!unreported.empty()) {
    return GlobalFail(STRATA_DEVICE_ERROR_EXECUTION, "device_close: failures no call reported: " + unreported);
  }
  return STRATA_DEVICE_OK;
}

// One table entry per method; the macro keeps the 20 forwarding functions uniform.
#define SIM_NPU_FORWARD(api_name, method, params, args)                             \
  int api_name params {                                                             \
    return WithDevice(device, #api_name, [&](Device& d) { return d.method args; }); \
  }

SIM_NPU_FORWARD(device_get_properties, GetProperties, (StrataDevice * device, StrataDeviceProperties* p), (p))
SIM_NPU_FORWARD(device_synchronize, Synchronize, (StrataDevice * device), ())
SIM_NPU_FORWARD(buffer_allocate, Allocate, (StrataDevice * device, uint64_t size, StrataDeviceBuffer* out), (size, out))
SIM_NPU_FORWARD(buffer_free, Free, (StrataDevice * device, StrataDeviceBuffer b), (b))
SIM_NPU_FORWARD(buffer_get_size, GetSize, (StrataDevice * device, StrataDeviceBuffer b, uint64_t* out), (b, out))
SIM_NPU_FORWARD(kernel_lookup, KernelLookup, (StrataDevice * device, const char* name, StrataDeviceKernel* out),
                (name, out))
SIM_NPU_FORWARD(queue_create, QueueCreate, (StrataDevice * device, StrataDeviceQueue* out), (out))
SIM_NPU_FORWARD(queue_destroy, QueueDestroy, (StrataDevice * device, StrataDeviceQueue q), (q))
SIM_NPU_FORWARD(queue_copy_host_to_device, CopyHostToDevice,
                (StrataDevice * device, StrataDeviceQueue q, const void* src, StrataDeviceBuffer dst,
                 uint64_t dst_offset, uint64_t size),
                (q, src, dst, dst_offset, size))
SIM_NPU_FORWARD(queue_copy_device_to_host, CopyDeviceToHost,
                (StrataDevice * device, StrataDeviceQueue q, StrataDeviceBuffer src, uint64_t src_offset, void* dst,
                 uint64_t size),
                (q, src, src_offset, dst, size))
SIM_NPU_FORWARD(queue_copy_device_to_device, CopyDeviceToDevice,
                (StrataDevice * device, StrataDeviceQueue q, StrataDeviceBuffer src, uint64_t src_offset,
                 StrataDeviceBuffer dst, uint64_t dst_offset, uint64_t size),
                (q, src, src_offset, dst, dst_offset, size))
SIM_NPU_FORWARD(queue_launch, Launch,
                (StrataDevice * device, StrataDeviceQueue q, StrataDeviceKernel k, const StrataDeviceArg* args,
                 int32_t num_args),
                (q, k, args, num_args))
SIM_NPU_FORWARD(queue_free_buffer, QueueFreeBuffer, (StrataDevice * device, StrataDeviceQueue q, StrataDeviceBuffer b),
                (q, b))
SIM_NPU_FORWARD(queue_synchronize, QueueSynchronize, (StrataDevice * device, StrataDeviceQueue q), (q))
SIM_NPU_FORWARD(event_create, EventCreate, (StrataDevice * device, StrataDeviceEvent* out), (out))
SIM_NPU_FORWARD(event_destroy, EventDestroy, (StrataDevice * device, StrataDeviceEvent e), (e))
SIM_NPU_FORWARD(queue_record_event, RecordEvent, (StrataDevice * device, StrataDeviceQueue q, StrataDeviceEvent e),
                (q, e))
SIM_NPU_FORWARD(queue_wait_event, WaitEvent, (StrataDevice * device, StrataDeviceQueue q, StrataDeviceEvent e), (q, e))
SIM_NPU_FORWARD(event_wait, EventWait, (StrataDevice * device, StrataDeviceEvent e), (e))
SIM_NPU_FORWARD(event_query, EventQuery, (StrataDevice * device, StrataDeviceEvent e, int32_t* out), (e, out))
SIM_NPU_FORWARD(get_counters, GetCounters, (StrataDevice * device, StrataDeviceQueue q, StrataDeviceCounters* out),
                (q, out))
SIM_NPU_FORWARD(reset_counters, ResetCounters, (StrataDevice * device), ())

#undef SIM_NPU_FORWARD

StrataDeviceApi MakeTable() {
  StrataDeviceApi api{};
  api.struct_size = sizeof(api);
  api.abi_version = STRATA_DEVICE_ABI_VERSION;
  api.plugin_name = kPluginName;
  api.plugin_version = kPluginVersion;
  api.last_error = ApiLastError;
  api.device_count = ApiDeviceCount;
  api.device_open = ApiDeviceOpen;
  api.device_close = ApiDeviceClose;
  api.device_get_properties = device_get_properties;
  api.device_synchronize = device_synchronize;
  api.buffer_allocate = buffer_allocate;
  api.buffer_free = buffer_free;
  api.buffer_get_size = buffer_get_size;
  api.kernel_lookup = kernel_lookup;
  api.queue_create = queue_create;
  api.queue_destroy = queue_destroy;
  api.queue_copy_host_to_device = queue_copy_host_to_device;
  api.queue_copy_device_to_host = queue_copy_device_to_host;
  api.queue_copy_device_to_device = queue_copy_device_to_device;
  api.queue_launch = queue_launch;
  api.queue_free_buffer = queue_free_buffer;
  api.queue_synchronize = queue_synchronize;
  api.event_create = event_create;
  api.event_destroy = event_destroy;
  api.queue_record_event = queue_record_event;
  api.queue_wait_event = queue_wait_event;
  api.event_wait = event_wait;
  api.event_query = event_query;
  api.get_counters = get_counters;
  api.reset_counters = reset_counters;
  return api;
}

void WriteError(char* error, size_t capacity, const std::string& message) {
  if (error == nullptr || capacity == 0) return;
  const size_t n = std::min(capacity - 1, message.size());
  std::memcpy(error, message.data(), n);
  error[n] = '\0';
}

}  // namespace
}  // namespace sim_npu

// The plug-in's only exported symbol (the library is built with hidden visibility).
extern "C" __attribute__((visibility("default"))) int strata_device_plugin_init(uint32_t abi_version,
                                                                                StrataDeviceApi* api, char* error,
                                                                                size_t error_capacity) {
  if (abi_version != STRATA_DEVICE_ABI_VERSION) {
    sim_npu::WriteError(error, error_capacity,
                        "the sim_npu plug-in implements device ABI version " +
                            std::to_string(STRATA_DEVICE_ABI_VERSION) + ", the host asked for version " +
                            std::to_string(abi_version));
    return STRATA_DEVICE_ERROR_UNSUPPORTED;
  }
  if (api == nullptr || api->struct_size < sizeof(StrataDeviceApi)) {
    sim_npu::WriteError(error, error_capacity,
                        api == nullptr ? std::string("the sim_npu plug-in was given a NULL table")
                                       : "the host's StrataDeviceApi struct_size " + std::to_string(api->struct_size) +
                                             " is smaller than the version-1 table (" +
                                             std::to_string(sizeof(StrataDeviceApi)) + " bytes)");
    return STRATA_DEVICE_ERROR_INVALID_ARGUMENT;
  }
  // Built on every call: cheap, and no static initialization order to think about.
  const StrataDeviceApi table = sim_npu::MakeTable();
  std::memcpy(api, &table, sizeof(table));
  return STRATA_DEVICE_OK;
}
