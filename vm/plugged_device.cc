// Device plug-ins: loading, the device instance and its queue, copies and launches.
#include "vm/plugged_device.h"

#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <filesystem>
#include <unistd.h>

#include "vm/memory_pool.h"
#include "vm/storage.h"
#include "vm/tensor.h"

namespace strata::vm {
namespace {

std::mutex& RegistryMutex() {
  static std::mutex mu;
  return mu;
}
std::map<std::string, std::string>& RegisteredPaths() {
  static std::map<std::string, std::string> paths;
  return paths;
}
// dlopen handles by resolved path: a library is opened once and never closed
// (code of a closed plug-in could still be running on its worker threads).
std::map<std::string, void*>& OpenLibraries() {
  static std::map<std::string, void*> libraries;
  return libraries;
}

thread_local std::span<const std::shared_ptr<PluggedDevice>> current_devices;
thread_local std::span<const StrataDeviceQueue> current_queues;  // parallel to current_devices

// Candidate files for plug-in `name`, in search order.
std::vector<std::string> CandidatePaths(const std::string& name) {
  const std::string file = "libstrata_" + name + ".so";
  std::vector<std::string> paths;
  if (const char* env = std::getenv("STRATA_DEVICE_PLUGIN_PATH")) {
    std::string dirs = env;
    for (size_t start = 0; start <= dirs.size();) {
      size_t end = dirs.find(':', start);
      if (end == std::string::npos) end = dirs.size();
      if (end > start) paths.push_back(dirs.substr(start, end - start) + "/" + file);
      start = end + 1;
    }
  }
  std::error_code ec;
  std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) paths.push_back((self.parent_path().parent_path() / "lib" / file).string());
  paths.push_back(file);  // the dynamic loader's search
  return paths;
}

int64_t CheckedInt(uint64_t v) { return v > static_cast<uint64_t>(INT64_MAX) ? INT64_MAX : static_cast<int64_t>(v); }

}  // namespace

DeviceStats& DeviceStats::operator-=(const DeviceStats& other) {
  host_to_device_copies -= other.host_to_device_copies;
  host_to_device_bytes -= other.host_to_device_bytes;
  device_to_host_copies -= other.device_to_host_copies;
  device_to_host_bytes -= other.device_to_host_bytes;
  kernel_launches -= other.kernel_launches;
  device_time_ns -= other.device_time_ns;
  return *this;
}

void RegisterDevicePlugin(const std::string& name, const std::string& path) {
  std::lock_guard<std::mutex> lock(RegistryMutex());
  RegisteredPaths()[name] = path;
}

std::span<const std::shared_ptr<PluggedDevice>> CurrentDevices() { return current_devices; }
DeviceScope::DeviceScope(std::span<const std::shared_ptr<PluggedDevice>> devices,
                         std::span<const StrataDeviceQueue> queues)
    : saved_devices_(current_devices), saved_queues_(current_queues) {
  current_devices = devices;
  current_queues = queues;
}
DeviceScope::~DeviceScope() {
  current_devices = saved_devices_;
  current_queues = saved_queues_;
}

StrataDeviceQueue PluggedDevice::ActiveQueue() const {
  const auto index = static_cast<size_t>(index_);
  if (index < current_queues.size() && index < current_devices.size() && current_devices[index].get() == this &&
      current_queues[index] != 0) {
    return current_queues[index];
  }
  return queue_;
}

StrataDeviceQueue PluggedDevice::CreateQueue() {
  StrataDeviceQueue queue = 0;
  if (api_.queue_create(device_, &queue) != STRATA_DEVICE_OK) return 0;
  return queue;
}

void PluggedDevice::DestroyQueue(StrataDeviceQueue queue) {
  // Waiting first means no command of the queue is left when a buffer freed
  // meanwhile finds the queue gone and is freed at once (see Allocate).
  (void)api_.queue_synchronize(device_, queue);
  (void)api_.queue_destroy(device_, queue);
  std::lock_guard<std::mutex> lock(mu_);
  pending_host_.erase(queue);
}

StatusOr<std::shared_ptr<PluggedDevice>> PluggedDevice::Open(const std::string& name, const std::string& options,
                                                             int32_t index) {
  std::shared_ptr<PluggedDevice> d(new PluggedDevice());
  d->name_ = name;
  d->index_ = index;
  {
    std::lock_guard<std::mutex> lock(RegistryMutex());
    std::vector<std::string> candidates;
    auto registered = RegisteredPaths().find(name);
    if (registered != RegisteredPaths().end()) {
      candidates.push_back(registered->second);
    } else {
      candidates = CandidatePaths(name);
    }
    std::string tried;
    for (const std::string& path : candidates) {
      auto open = OpenLibraries().find(path);
      if (open != OpenLibraries().end()) {
        d->library_ = open->second;
        break;
      }
      // A bare file name goes to the loader's search; a path must exist.
      if (path.find('/') != std::string::npos && !std::filesystem::exists(path)) {
        tried += (tried.empty() ? "" : ", ") + path;
        continue;
      }
      void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (handle == nullptr) {
        const char* why = dlerror();
        tried += (tried.empty() ? "" : ", ") + path + " (" + (why ? why : "dlopen failed") + ")";
        continue;
      }
      OpenLibraries()[path] = handle;
      d->library_ = handle;
      break;
    }
    if (d->library_ == nullptr) {
      return Status(ErrorStatus(StatusCode::kNotFound) << "device '" << name << "': no device plug-in found (tried "
                                                       << tried << "); install it or set STRATA_DEVICE_PLUGIN_PATH");
    }
  }
  auto init = reinterpret_cast<StrataDevicePluginInitFn>(dlsym(d->library_, STRATA_DEVICE_PLUGIN_INIT_SYMBOL));
  if (init == nullptr) {
    return Status(ErrorStatus() << "device '" << name << "': the plug-in does not export "
                                << STRATA_DEVICE_PLUGIN_INIT_SYMBOL);
  }
  char reason[512] = {0};
  d->api_.struct_size = sizeof(StrataDeviceApi);
  if (init(STRATA_DEVICE_ABI_VERSION, &d->api_, reason, sizeof(reason)) != STRATA_DEVICE_OK) {
    return Status(ErrorStatus(StatusCode::kUnimplemented) << "device '" << name << "': the plug-in refused ABI version "
                                                          << STRATA_DEVICE_ABI_VERSION << ": " << reason);
  }
  int32_t count = 0;
  if (int rc = d->api_.device_count(&count); rc != STRATA_DEVICE_OK) return d->Error("device_count", rc);
  if (count < 1) return Status(ErrorStatus() << "device '" << name << "': the plug-in reports no device");
  if (int rc = d->api_.device_open(0, options.c_str(), &d->device_); rc != STRATA_DEVICE_OK) {
    return Status(ErrorStatus() << "device '" << name << "': cannot open it with options '" << options
                                << "': " << d->api_.last_error(nullptr));
  }
  StrataDeviceProperties properties{};
  properties.struct_size = sizeof(properties);
  if (int rc = d->api_.device_get_properties(d->device_, &properties); rc != STRATA_DEVICE_OK) {
    return d->Error("device_get_properties", rc);
  }
  d->alignment_ = properties.alignment;
  if (int rc = d->api_.queue_create(d->device_, &d->queue_); rc != STRATA_DEVICE_OK) {
    return d->Error("queue_create", rc);
  }
  return d;
}

// The members die after the body: host sources of copies stay alive until
// device_close has waited for every command, and the cached constants' buffers
// are released by device_close itself.
PluggedDevice::~PluggedDevice() {
  if (device_ != nullptr) {
    if (queue_ != 0) api_.queue_destroy(device_, queue_);
    api_.device_close(device_);
  }
}

Status PluggedDevice::Error(const char* what, int status) const {
  const char* message = api_.last_error ? api_.last_error(device_) : "";
  return Status(ErrorStatus() << "device '" << name_ << "': " << what << " failed (status " << status
                              << "): " << (message && *message ? message : "no message"));
}

StatusOr<StrataDeviceKernel> PluggedDevice::LookupKernel(const std::string& kernel_name) const {
  StrataDeviceKernel kernel = 0;
  if (api_.kernel_lookup(device_, kernel_name.c_str(), &kernel) == STRATA_DEVICE_OK) return kernel;
  StrataDeviceProperties properties{};
  properties.struct_size = sizeof(properties);
  std::string known;
  if (api_.device_get_properties(device_, &properties) == STRATA_DEVICE_OK) {
    for (uint32_t i = 0; i < properties.num_kernels; ++i)
      known += (i ? ", " : "") + std::string(properties.kernel_names[i]);
  }
  return Status(ErrorStatus(StatusCode::kNotFound)
                << "device '" << name_ << "' has no device kernel '" << kernel_name << "' (it has: " << known << ")");
}

StatusOr<Ref<Storage>> PluggedDevice::Allocate(int64_t nbytes) {
  if (nbytes < 0) return Status(ErrorStatus() << "cannot allocate a negative size (" << nbytes << " bytes)");
  StrataDeviceBuffer buffer = 0;
  if (int rc = api_.buffer_allocate(device_, static_cast<uint64_t>(nbytes), &buffer); rc != STRATA_DEVICE_OK) {
    return Error("buffer_allocate", rc);
  }
  // Freed in the order of the queue its commands were submitted to (the one
  // active now): commands already queued on it still run first. When that queue
  // was a VM's and is gone, it had finished every command (DestroyQueue), so the
  // buffer is freed at once. A weak reference: the device caches constants'
  // buffers, and a buffer outliving its device was released by device_close already.
  std::weak_ptr<PluggedDevice> weak = weak_from_this();
  const StrataDeviceQueue queue = ActiveQueue();
  std::shared_ptr<const void> owner(nullptr, [weak, buffer, queue](const void*) {
    if (std::shared_ptr<PluggedDevice> self = weak.lock()) {
      if (self->api_.queue_free_buffer(self->device_, queue, buffer) != STRATA_DEVICE_OK && queue != self->queue_) {
        (void)self->api_.buffer_free(self->device_, buffer);
      }
    }
  });
  return Storage::WrapExternal(reinterpret_cast<void*>(static_cast<uintptr_t>(buffer)), nbytes, dl_device(),
                               std::move(owner));
}

StatusOr<Ref<Tensor>> PluggedDevice::CopyToDevice(const Ref<Tensor>& host) {
  if (host->device().device_type != kDLCPU) {
    return Status(ErrorStatus() << "to_device: the tensor is on " << DeviceName(host->device()) << ", not on the host");
  }
  if (host->read_only()) {
    std::lock_guard<std::mutex> lock(mu_);
    auto cached = constants_.find(host.get());
    if (cached != constants_.end()) return cached->second;
  }
  STRATA_ASSIGN_OR_RETURN(Ref<Storage> storage, Allocate(host->num_bytes()));
  STRATA_ASSIGN_OR_RETURN(Ref<Tensor> device_tensor, Tensor::View(std::move(storage), 0, host->shape(), host->dtype()));
  const StrataDeviceQueue queue = ActiveQueue();
  if (host->num_bytes() > 0) {
    const StrataDeviceBuffer buffer =
        static_cast<StrataDeviceBuffer>(reinterpret_cast<uintptr_t>(device_tensor->data()));
    int rc = api_.queue_copy_host_to_device(device_, queue, host->data(), buffer, device_tensor->dl()->byte_offset,
                                            static_cast<uint64_t>(host->num_bytes()));
    if (rc != STRATA_DEVICE_OK) return Error("queue_copy_host_to_device", rc);
  }
  if (host->read_only()) {
    // Other VMs' queues will use the copy with no order against this queue:
    // it is complete before anyone else can find it (once per constant).
    STRATA_RETURN_IF_ERROR(SynchronizeQueue(queue));
    std::lock_guard<std::mutex> lock(mu_);
    constants_.emplace(host.get(), device_tensor);  // constants live as long as the executable, and so does this
  } else {
    std::lock_guard<std::mutex> lock(mu_);
    pending_host_[queue].push_back(host);
  }
  return device_tensor;
}

StatusOr<Ref<Tensor>> PluggedDevice::CopyToHost(const Tensor& t, MemoryPool* pool) {
  if (!(t.device() == dl_device())) {
    return Status(ErrorStatus() << "to_host: the tensor is on " << DeviceName(t.device()) << ", not on device '"
                                << name_ << "'");
  }
  StatusOr<Ref<Tensor>> host = pool ? pool->AllocateTensor(t.shape(), t.dtype()) : Tensor::Empty(t.shape(), t.dtype());
  if (!host.ok()) return host.status();
  const StrataDeviceQueue queue = ActiveQueue();
  if (t.num_bytes() > 0) {
    const StrataDeviceBuffer buffer = static_cast<StrataDeviceBuffer>(reinterpret_cast<uintptr_t>(t.data()));
    int rc = api_.queue_copy_device_to_host(device_, queue, buffer, t.dl()->byte_offset, (*host)->data(),
                                            static_cast<uint64_t>(t.num_bytes()));
    if (rc != STRATA_DEVICE_OK) return Error("queue_copy_device_to_host", rc);
  }
  // The host reads the result now: wait for it (and for everything before it).
  STRATA_RETURN_IF_ERROR(SynchronizeQueue(queue));
  return host;
}

Status PluggedDevice::Launch(StrataDeviceKernel kernel, const std::string& kernel_name,
                             std::span<const StrataDeviceArg> args) {
  int rc = api_.queue_launch(device_, ActiveQueue(), kernel, args.data(), static_cast<int32_t>(args.size()));
  if (rc == STRATA_DEVICE_OK) return Status::Ok();
  return Status(Error(("launching device kernel '" + kernel_name + "'").c_str(), rc));
}

Status PluggedDevice::Synchronize() { return SynchronizeQueue(ActiveQueue()); }

Status PluggedDevice::SynchronizeQueue(StrataDeviceQueue queue) {
  // Take the host sources first: a copy another thread submits meanwhile keeps
  // its own source until a later synchronize covers it.
  std::vector<Ref<Tensor>> covered;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto pending = pending_host_.find(queue);
    if (pending != pending_host_.end()) {
      covered.swap(pending->second);
      pending_host_.erase(pending);
    }
  }
  int rc = api_.queue_synchronize(device_, queue);
  covered.clear();  // the copies that read them have completed
  if (rc != STRATA_DEVICE_OK) return Error("queue_synchronize", rc);
  return Status::Ok();
}

StatusOr<DeviceStats> PluggedDevice::Counters() const {
  StrataDeviceCounters c{};
  c.struct_size = sizeof(c);
  if (int rc = api_.get_counters(device_, 0, &c); rc != STRATA_DEVICE_OK) return Error("get_counters", rc);
  DeviceStats stats;
  stats.host_to_device_copies = CheckedInt(c.host_to_device_copies);
  stats.host_to_device_bytes = CheckedInt(c.host_to_device_bytes);
  stats.device_to_host_copies = CheckedInt(c.device_to_host_copies);
  stats.device_to_host_bytes = CheckedInt(c.device_to_host_bytes);
  stats.kernel_launches = CheckedInt(c.kernel_launches);
  stats.device_time_ns = CheckedInt(c.busy_ns);
  return stats;
}

}  // namespace strata::vm
