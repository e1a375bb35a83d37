// The device's lifetime, per-thread errors, properties and counters, and the
// handle-table lookups every other part goes through (see device.h). Kept apart
// from the memory, queue, event and kernel files because all of them share it.
#include "vm/devices/sim_npu/device.h"

#include <algorithm>
#include <cstring>

#include <sys/mman.h>

namespace sim_npu {
namespace {

constexpr char kVendor[] = "Strata (simulated)";

}  // namespace

Device::Device(const Config& config, uint16_t serial, uint8_t* memory)
    : config_(config), cost_(config_), serial_(serial), memory_(memory), arena_(config.memory_bytes, config.alignment) {
  for (const KernelDef& k : Kernels()) kernel_names_.push_back(k.name);
}

Device::~Device() { munmap(memory_, config_.memory_bytes); }

int Device::Fail(int code, std::string message) {
  std::lock_guard<std::mutex> lock(errors_mu_);
  errors_[std::this_thread::get_id()] = std::move(message);
  return code;
}

const char* Device::LastError() {
  std::lock_guard<std::mutex> lock(errors_mu_);
  auto it = errors_.find(std::this_thread::get_id());
  // The string's storage stays put while other threads insert theirs (node-based map).
  return it == errors_.end() ? "" : it->second.c_str();
}

int Device::GetProperties(StrataDeviceProperties* out) {
  if (out == nullptr)
    return Fail(STRATA_DEVICE_ERROR_INVALID_ARGUMENT, "device_get_properties: out_properties is NULL");
  if (out->struct_size < sizeof(StrataDeviceProperties)) {
    return Fail(STRATA_DEVICE_ERROR_INVALID_ARGUMENT, "device_get_properties: struct_size " +
                                                          std::to_string(out->struct_size) +
                                                          " is smaller than the version-1 StrataDeviceProperties (" +
                                                          std::to_string(sizeof(StrataDeviceProperties)) + " bytes)");
  }
  StrataDeviceProperties p{};
  p.struct_size = sizeof(p);
  p.max_queues = config_.max_queues;
  p.name = kPluginName;
  p.vendor = kVendor;
  p.total_memory_bytes = config_.memory_bytes;
  p.alignment = config_.alignment;
  p.kernel_names = kernel_names_.data();
  p.num_kernels = static_cast<uint32_t>(kernel_names_.size());
  std::memcpy(out, &p, sizeof(p));
  return STRATA_DEVICE_OK;
}

// ---- counters ----

int Device::GetCounters(StrataDeviceQueue queue, StrataDeviceCounters* out) {
  if (out == nullptr) return Fail(STRATA_DEVICE_ERROR_INVALID_ARGUMENT, "get_counters: out_counters is NULL");
  if (out->struct_size < sizeof(StrataDeviceCounters)) {
    return Fail(STRATA_DEVICE_ERROR_INVALID_ARGUMENT, "get_counters: struct_size " + std::to_string(out->struct_size) +
                                                          " is smaller than the version-1 StrataDeviceCounters (" +
                                                          std::to_string(sizeof(StrataDeviceCounters)) + " bytes)");
  }
  Totals t;
  StrataDeviceCounters c{};
  c.struct_size = sizeof(c);
  if (queue == 0) {
    {
      std::lock_guard<std::mutex> lock(counters_mu_);
      t = totals_;
      c.time_ns = max_clock_ns_;
    }
    std::lock_guard<std::mutex> lock(mu_);
    c.memory_in_use_bytes = in_use_;
    c.memory_peak_bytes = peak_;
  } else {
    std::shared_ptr<QueueState> q;
    if (!LookupQueue("get_counters", queue, &q)) return STRATA_DEVICE_ERROR_INVALID_ARGUMENT;
    std::lock_guard<std::mutex> lock(q->mu);
    t = q->totals;
    c.time_ns = q->clock_ns;
  }
  c.busy_ns = t.busy_ns;
  c.kernel_ns = t.kernel_ns;
  c.copy_ns = t.copy_ns;
  c.kernel_launches = t.kernel_launches;
  c.host_to_device_copies = t.h2d_copies;
  c.host_to_device_bytes = t.h2d_bytes;
  c.device_to_host_copies = t.d2h_copies;
  c.device_to_host_bytes = t.d2h_bytes;
  c.device_to_device_copies = t.d2d_copies;
  c.device_to_device_bytes = t.d2d_bytes;
  c.failed_commands = t.failed_commands;
  std::memcpy(out, &c, sizeof(c));
  return STRATA_DEVICE_OK;
}

int Device::ResetCounters() {
  {
    std::lock_guard<std::mutex> lock(counters_mu_);
    totals_ = Totals{};
    max_clock_ns_ = 0;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    peak_ = in_use_;
  }
  for (const std::shared_ptr<QueueState>& q : QueueSnapshot()) {
    std::lock_guard<std::mutex> lock(q->mu);
    q->totals = Totals{};
    q->clock_ns = 0;
  }
  return STRATA_DEVICE_OK;
}

// ---- handle tables ----

bool Device::FindQueue(uint64_t handle, std::shared_ptr<QueueState>* out, std::string* error) {
  if (!CheckHandle(handle, Kind::kQueue, error)) return false;
  auto it = queues_.find(handle);
  if (it == queues_.end()) {
    *error = Describe(handle) + (CounterOf(handle) < next_queue_ ? " was destroyed" : " does not exist");
    return false;
  }
  *out = it->second;
  return true;
}

bool Device::FindEvent(uint64_t handle, std::shared_ptr<EventState>* out, std::string* error) {
  if (!CheckHandle(handle, Kind::kEvent, error)) return false;
  auto it = events_.find(handle);
  if (it == events_.end()) {
    *error = Describe(handle) + (CounterOf(handle) < next_event_ ? " was destroyed" : " does not exist");
    return false;
  }
  *out = it->second;
  return true;
}

bool Device::CheckHandle(uint64_t handle, Kind want, std::string* error) const {
  const char* want_name = KindName(static_cast<uint64_t>(want));
  const char* got_name = KindName(KindBits(handle));
  if (handle == 0) {
    *error = std::string("the ") + want_name + " handle is 0";
  } else if (got_name == nullptr || CounterOf(handle) == 0) {
    *error = Hex(handle) + " is not a " + want_name + " handle";
  } else if (KindBits(handle) != static_cast<uint64_t>(want)) {
    *error = Describe(handle) + " (" + Hex(handle) + ") is a " + got_name + " handle, not a " + want_name + " handle";
  } else if (SerialOf(handle) != serial_) {
    *error = Describe(handle) + " (" + Hex(handle) + ") belongs to another device";
  } else {
    return true;
  }
  return false;
}

bool Device::LookupQueue(const char* fn, uint64_t handle, std::shared_ptr<QueueState>* out) {
  std::lock_guard<std::mutex> lock(mu_);
  std::string error;
  if (FindQueue(handle, out, &error)) return true;
  Fail(STRATA_DEVICE_ERROR_INVALID_ARGUMENT, std::string(fn) + ": " + error);
  return false;
}

bool Device::LookupQueueAndEvent(const char* fn, uint64_t queue, uint64_t event, std::shared_ptr<QueueState>* q,
                                 std::shared_ptr<EventState>* e) {
  std::lock_guard<std::mutex> lock(mu_);
  std::string error;
  if (FindQueue(queue, q, &error) && FindEvent(event, e, &error)) return true;
  Fail(STRATA_DEVICE_ERROR_INVALID_ARGUMENT, std::string(fn) + ": " + error);
  return false;
}

std::vector<std::shared_ptr<QueueState>> Device::QueueSnapshot() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::shared_ptr<QueueState>> queues;
  for (auto& [handle, q] : queues_) queues.push_back(q);
  return queues;
}

}  // namespace sim_npu
