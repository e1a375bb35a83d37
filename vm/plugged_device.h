// PluggedDevice: an accelerator reached through a device plug-in (abi/device_plugin.h).
//
// An executable that uses a device names it in its devices table ("sim_npu").
// Loading the executable finds the plug-in library libstrata_<name>.so, checks its
// ABI, opens one device instance with the table's options and creates one
// in-order queue, the device's own; the VMs that run the executable share the
// device (the plug-in API is thread-safe).
//
// Queues. Each VirtualMachine runs its calls on an in-order queue of its own
// (CreateQueue; DeviceScope makes it the active queue of its thread during a
// call), so that an asynchronous failure is reported to the VM whose command
// failed, never to another VM synchronizing the same queue at the same time, and
// a VM's synchronize waits for its own work only. Outside a VM call, and for a
// VM the device refused another queue (its max_queues), the methods below use
// the device's own queue, shared by all such callers: a failure there is
// reported to whichever of them synchronizes first. A device buffer is freed in
// the order of the queue that was active when it was allocated; a device tensor
// given to another VM must not outlive, unsynchronized, the VM that made it.
//
// Device tensors are ordinary Tensors whose DLDevice is {kDLExtDev, index}: their
// `data` is the plug-in's buffer handle (never dereferenced on the host) and
// `byte_offset` the place in it. Work is asynchronous: copies to the device and
// kernel launches return at once; a copy to the host synchronizes the queue, so
// results are waited for only when the host reads them. Asynchronous failures
// surface there, naming the kernel.
//
// Search path for libstrata_<name>.so, in order: the directories of
// STRATA_DEVICE_PLUGIN_PATH (colon-separated), the `lib` directory next to the
// running program's directory (build/bin -> build/lib, prefix/bin -> prefix/lib),
// and the dynamic loader's own search (LD_LIBRARY_PATH, system directories).
// RegisterDevicePlugin(name, path) overrides the search for one name.
//
// Thread-safety: all members are thread-safe (the plug-in's calls are; the
// constant cache and the pending host references have their own lock).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include <dlpack/dlpack.h>

#include "abi/device_plugin.h"
#include "support/status.h"
#include "vm/object.h"

namespace strata::vm {

class Storage;
class Tensor;
class Value;

// Counters of host<->device traffic and device time (see StrataDeviceCounters).
struct DeviceStats {
  int64_t host_to_device_copies = 0;
  int64_t host_to_device_bytes = 0;
  int64_t device_to_host_copies = 0;
  int64_t device_to_host_bytes = 0;
  int64_t kernel_launches = 0;
  int64_t device_time_ns = 0;  // the plug-in's device time (simulated for sim_npu)
  DeviceStats& operator-=(const DeviceStats& other);
};

class PluggedDevice : public std::enable_shared_from_this<PluggedDevice> {
 public:
  // Loads the plug-in for `name` (see the search path above), opens device 0
  // with `options` and creates its queue. `index` is the device's place in the
  // executable's devices table (the DLDevice id of its tensors).
  static StatusOr<std::shared_ptr<PluggedDevice>> Open(const std::string& name, const std::string& options,
                                                       int32_t index);
  ~PluggedDevice();
  PluggedDevice(const PluggedDevice&) = delete;
  PluggedDevice& operator=(const PluggedDevice&) = delete;

  const std::string& name() const { return name_; }
  DLDevice dl_device() const { return {kDLExtDev, index_}; }
  const StrataDeviceApi& api() const { return api_; }
  StrataDevice* device() const { return device_; }
  StrataDeviceQueue queue() const { return queue_; }
  uint64_t alignment() const { return alignment_; }

  // The handle of kernel `kernel_name`; an error naming the device's kernels if absent.
  StatusOr<StrataDeviceKernel> LookupKernel(const std::string& kernel_name) const;

  // A new queue for one VM's calls, or 0 when the device refuses one (the
  // caller then uses the device's own queue).
  StrataDeviceQueue CreateQueue();
  // Waits for the commands of a queue from CreateQueue and destroys it. Its
  // failures nobody reported are dropped (their calls already failed or ended).
  void DestroyQueue(StrataDeviceQueue queue);

  // The methods below submit to the active queue: the calling VM's (see
  // DeviceScope), else the device's own.

  // A storage of `nbytes` device memory, freed in queue order when it dies.
  StatusOr<Ref<Storage>> Allocate(int64_t nbytes);
  // A device copy of the host tensor `host` (asynchronous; `host` is kept alive
  // until the copy completes). A read-only tensor (a constant of the executable)
  // is copied once, waited for, and the device copy reused by later calls on
  // any queue.
  StatusOr<Ref<Tensor>> CopyToDevice(const Ref<Tensor>& host);
  // A host copy of the device tensor `t`, from `pool` when given; waits for it.
  StatusOr<Ref<Tensor>> CopyToHost(const Tensor& t, class MemoryPool* pool);
  // Launches `kernel` (named `kernel_name` in errors) on `args`.
  Status Launch(StrataDeviceKernel kernel, const std::string& kernel_name, std::span<const StrataDeviceArg> args);
  // Waits for every command queued on the active queue and reports its
  // asynchronous failures.
  Status Synchronize();

  // Device-wide counters now.
  StatusOr<DeviceStats> Counters() const;

  // "sim_npu: <the plug-in's last error>" for a failed call `what`.
  Status Error(const char* what, int status) const;

 private:
  PluggedDevice() = default;
  // The calling thread's queue for this device: its VM's, else queue_.
  StrataDeviceQueue ActiveQueue() const;
  // Waits for `queue`'s commands, then releases the host sources of its copies.
  Status SynchronizeQueue(StrataDeviceQueue queue);

  std::string name_;
  int32_t index_ = 0;
  void* library_ = nullptr;  // dlopen handle; kept open for the process's lifetime
  StrataDeviceApi api_{};
  StrataDevice* device_ = nullptr;
  StrataDeviceQueue queue_ = 0;
  uint64_t alignment_ = 64;

  mutable std::mutex mu_;
  std::map<const Tensor*, Ref<Tensor>> constants_;  // read-only host tensor -> its device copy
  // Per queue, the host sources of copies not yet waited for.
  std::map<StrataDeviceQueue, std::vector<Ref<Tensor>>> pending_host_;
};

// Uses `path` for the plug-in `name` instead of searching (tests, services with
// their own layout). Affects executables loaded afterwards.
void RegisterDevicePlugin(const std::string& name, const std::string& path);

// The devices of the executable the current call runs (set by VirtualMachine
// around a call, like CurrentMemoryPool), or empty.
std::span<const std::shared_ptr<PluggedDevice>> CurrentDevices();
// Installs `devices` and the calling VM's `queues` (one per device, in the same
// order; 0 or absent: the device's own queue) for the current thread.
class DeviceScope {
 public:
  explicit DeviceScope(std::span<const std::shared_ptr<PluggedDevice>> devices,
                       std::span<const StrataDeviceQueue> queues = {});
  ~DeviceScope();
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  std::span<const std::shared_ptr<PluggedDevice>> saved_devices_;
  std::span<const StrataDeviceQueue> saved_queues_;
};

}  // namespace strata::vm
