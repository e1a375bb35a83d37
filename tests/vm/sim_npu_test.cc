// The simulated NPU plug-in, tested as the runtime will use it: dlopen the
// library, call its entry point, and from then on only the function table of
// abi/device_plugin.h. Nothing of Strata is linked. Kernel results are compared
// with the numpy references of tests/fixtures/sim_npu
// (scripts/fixtures/sim_npu_kernels.py).
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <dlfcn.h>
#include <fstream>
#include <numeric>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "abi/device_plugin.h"

namespace {

using Clock = std::chrono::steady_clock;

// ---- the plug-in ---------------------------------------------------------------

StrataDevicePluginInitFn InitFunction() {
  static StrataDevicePluginInitFn init = [] {
    // Never dlclosed: device threads may still be unwinding when tests end.
    void* library = dlopen(STRATA_SIM_NPU_PLUGIN, RTLD_NOW | RTLD_LOCAL);
    EXPECT_NE(library, nullptr) << dlerror();
    if (library == nullptr) return StrataDevicePluginInitFn(nullptr);
    auto fn = reinterpret_cast<StrataDevicePluginInitFn>(dlsym(library, STRATA_DEVICE_PLUGIN_INIT_SYMBOL));
    EXPECT_NE(fn, nullptr) << "no " STRATA_DEVICE_PLUGIN_INIT_SYMBOL " in " STRATA_SIM_NPU_PLUGIN;
    return fn;
  }();
  return init;
}

const StrataDeviceApi& Api() {
  static StrataDeviceApi api = [] {
    StrataDeviceApi table{};
    table.struct_size = sizeof(table);
    char error[256] = "";
    StrataDevicePluginInitFn init = InitFunction();
    if (init == nullptr) return table;
    EXPECT_EQ(init(STRATA_DEVICE_ABI_VERSION, &table, error, sizeof(error)), STRATA_DEVICE_OK) << error;
    return table;
  }();
  return api;
}

std::string GlobalError() { return Api().last_error(nullptr); }

// ---- an open device with one queue -----------------------------------------------

class Device {
 public:
  explicit Device(const char* options = "") {
    const int status = Api().device_open(0, options, &device_);
    EXPECT_EQ(status, STRATA_DEVICE_OK) << GlobalError();
    if (device_ != nullptr) {
      EXPECT_EQ(Api().queue_create(device_, &queue_), STRATA_DEVICE_OK) << Error();
    }
  }
  ~Device() {
    if (device_ != nullptr) {
      EXPECT_EQ(Api().device_close(device_), STRATA_DEVICE_OK) << GlobalError();
    }
  }
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  StrataDevice* get() const { return device_; }
  StrataDeviceQueue queue() const { return queue_; }
  std::string Error() const { return Api().last_error(device_); }

  StrataDeviceBuffer Alloc(uint64_t bytes) {
    StrataDeviceBuffer b = 0;
    EXPECT_EQ(Api().buffer_allocate(device_, bytes, &b), STRATA_DEVICE_OK) << Error();
    return b;
  }

  // A buffer holding `values`, copied on `queue`, which this waits for: `values`
  // is often a temporary, and host memory must outlive its copy command.
  StrataDeviceBuffer Upload(const std::vector<float>& values, StrataDeviceQueue queue = 0) {
    StrataDeviceBuffer b = Alloc(values.size() * sizeof(float));
    EXPECT_EQ(Api().queue_copy_host_to_device(device_, queue ? queue : queue_, values.data(), b, 0,
                                              values.size() * sizeof(float)),
              STRATA_DEVICE_OK)
        << Error();
    EXPECT_EQ(Sync(queue), STRATA_DEVICE_OK) << Error();
    return b;
  }

  std::vector<float> Download(StrataDeviceBuffer b, size_t count, uint64_t offset = 0) {
    std::vector<float> values(count, std::nanf(""));
    EXPECT_EQ(Api().queue_copy_device_to_host(device_, queue_, b, offset, values.data(), count * sizeof(float)),
              STRATA_DEVICE_OK)
        << Error();
    EXPECT_EQ(Sync(), STRATA_DEVICE_OK) << Error();
    return values;
  }

  int Sync(StrataDeviceQueue queue = 0) { return Api().queue_synchronize(device_, queue ? queue : queue_); }

  StrataDeviceKernel Kernel(const char* name) {
    StrataDeviceKernel k = 0;
    EXPECT_EQ(Api().kernel_lookup(device_, name, &k), STRATA_DEVICE_OK) << Error();
    return k;
  }

  int Launch(const char* kernel, const std::vector<StrataDeviceArg>& args, StrataDeviceQueue queue = 0) {
    return Api().queue_launch(device_, queue ? queue : queue_, Kernel(kernel), args.data(),
                              static_cast<int32_t>(args.size()));
  }

  StrataDeviceCounters Counters(StrataDeviceQueue queue = 0) {
    StrataDeviceCounters c{};
    c.struct_size = sizeof(c);
    EXPECT_EQ(Api().get_counters(device_, queue, &c), STRATA_DEVICE_OK) << Error();
    return c;
  }

  StrataDeviceQueue NewQueue() {
    StrataDeviceQueue q = 0;
    EXPECT_EQ(Api().queue_create(device_, &q), STRATA_DEVICE_OK) << Error();
    return q;
  }

  StrataDeviceEvent NewEvent() {
    StrataDeviceEvent e = 0;
    EXPECT_EQ(Api().event_create(device_, &e), STRATA_DEVICE_OK) << Error();
    return e;
  }

 private:
  StrataDevice* device_ = nullptr;
  StrataDeviceQueue queue_ = 0;
};

// A float32 tensor argument. The shape vector must outlive the launch call only.
StrataDeviceArg Tensor(StrataDeviceBuffer buffer, const std::vector<int64_t>& shape, uint64_t offset = 0,
                       DLDataType dtype = {kDLFloat, 32, 1}) {
  StrataDeviceArg a{};
  a.kind = STRATA_DEVICE_ARG_BUFFER;
  a.value.buffer.buffer = buffer;
  a.value.buffer.byte_offset = offset;
  a.value.buffer.shape = shape.data();
  a.value.buffer.ndim = static_cast<int32_t>(shape.size());
  a.value.buffer.dtype = dtype;
  return a;
}

StrataDeviceArg I64(int64_t v) {
  StrataDeviceArg a{};
  a.kind = STRATA_DEVICE_ARG_I64;
  a.value.i64 = v;
  return a;
}

bool Contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }
#define EXPECT_CONTAINS(text, part) EXPECT_TRUE(Contains(text, part)) << "message: " << (text)

// ---- .npy fixtures (little-endian f4 / i8, C order: what the script writes) ------

struct Npy {
  std::vector<int64_t> shape;
  std::vector<float> f32;
  std::vector<int64_t> i64;
};

Npy ReadNpy(const std::string& case_name, const std::string& name) {
  const std::string path = STRATA_SOURCE_DIR "/tests/fixtures/sim_npu/" + case_name + "/" + name + ".npy";
  std::ifstream in(path, std::ios::binary);
  Npy npy;
  EXPECT_TRUE(in.good()) << "cannot open " << path;
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0) {
    ADD_FAILURE() << path << " is not a .npy file";
    return npy;
  }
  const bool v1 = bytes[6] == 1;
  const size_t header_len = v1 ? uint8_t(bytes[8]) | uint8_t(bytes[9]) << 8
                               : uint8_t(bytes[8]) | uint8_t(bytes[9]) << 8 | uint8_t(bytes[10]) << 16;
  const size_t data_start = (v1 ? 10 : 12) + header_len;
  const std::string header = bytes.substr(v1 ? 10 : 12, header_len);
  EXPECT_CONTAINS(header, "'fortran_order': False");
  const size_t open = header.find('(', header.find("'shape'")), close = header.find(')', open);
  std::stringstream dims(header.substr(open + 1, close - open - 1));
  for (std::string dim; std::getline(dims, dim, ',');) {
    if (dim.find_first_not_of(' ') != std::string::npos) npy.shape.push_back(std::stoll(dim));
  }
  const size_t count = std::accumulate(npy.shape.begin(), npy.shape.end(), size_t{1}, std::multiplies<>());
  if (Contains(header, "'<f4'")) {
    npy.f32.resize(count);
    EXPECT_EQ(bytes.size(), data_start + count * 4) << path;
    std::memcpy(npy.f32.data(), bytes.data() + data_start, std::min(bytes.size() - data_start, count * 4));
  } else if (Contains(header, "'<i8'")) {
    npy.i64.resize(count);
    EXPECT_EQ(bytes.size(), data_start + count * 8) << path;
    std::memcpy(npy.i64.data(), bytes.data() + data_start, std::min(bytes.size() - data_start, count * 8));
  } else {
    ADD_FAILURE() << path << ": unexpected dtype in " << header;
  }
  return npy;
}

// numpy.allclose(actual, expected, rtol=1e-4, atol=1e-5)
void ExpectClose(const std::vector<float>& actual, const std::vector<float>& expected, const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  size_t bad = 0;
  for (size_t i = 0; i < actual.size(); ++i) {
    if (!(std::fabs(actual[i] - expected[i]) <= 1e-5 + 1e-4 * std::fabs(expected[i]))) {
      if (bad++ == 0) ADD_FAILURE() << what << ": element " << i << " is " << actual[i] << ", expected " << expected[i];
    }
  }
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << actual.size() << " elements differ";
}

// ---- the ABI itself ---------------------------------------------------------------

TEST(SimNpuPluginTest, FillsTheTableForItsVersion) {
  const StrataDeviceApi& api = Api();
  EXPECT_EQ(api.struct_size, sizeof(StrataDeviceApi));
  EXPECT_EQ(api.abi_version, uint32_t{STRATA_DEVICE_ABI_VERSION});
  EXPECT_STREQ(api.plugin_name, "sim_npu");
  EXPECT_TRUE(STRATA_DEVICE_HAS_FIELD(StrataDeviceApi, &api, reset_counters));
  // Every function pointer of version 1 is set.
  const char* first = reinterpret_cast<const char*>(&api.last_error);
  const char* end = reinterpret_cast<const char*>(&api) + sizeof(api);
  for (const char* p = first; p < end; p += sizeof(void*)) {
    void* fn = nullptr;
    std::memcpy(&fn, p, sizeof(fn));
    EXPECT_NE(fn, nullptr) << "function pointer at offset " << (p - reinterpret_cast<const char*>(&api));
  }
  int32_t count = 0;
  EXPECT_EQ(api.device_count(&count), STRATA_DEVICE_OK);
  EXPECT_EQ(count, 1);
}

TEST(SimNpuPluginTest, RefusesAnotherAbiVersionOrAShortTable) {
  StrataDevicePluginInitFn init = InitFunction();
  ASSERT_NE(init, nullptr);
  StrataDeviceApi api{};
  api.struct_size = sizeof(api);
  char error[256] = "";
  EXPECT_EQ(init(STRATA_DEVICE_ABI_VERSION + 1, &api, error, sizeof(error)), STRATA_DEVICE_ERROR_UNSUPPORTED);
  EXPECT_STREQ(error, "the sim_npu plug-in implements device ABI version 1, the host asked for version 2");
  EXPECT_EQ(api.last_error, nullptr) << "a refused table must stay untouched";
  EXPECT_EQ(init(0, &api, nullptr, 0), STRATA_DEVICE_ERROR_UNSUPPORTED);  // no error buffer: still refused

  api.struct_size = 16;  // a host that knows less than version 1
  EXPECT_EQ(init(STRATA_DEVICE_ABI_VERSION, &api, error, sizeof(error)), STRATA_DEVICE_ERROR_INVALID_ARGUMENT);
  EXPECT_CONTAINS(std::string(error), "struct_size 16 is smaller than the version-1 table");
  char tiny[8];
  EXPECT_EQ(init(STRATA_DEVICE_ABI_VERSION, &api, tiny, sizeof(tiny)), STRATA_DEVICE_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(tiny, "the hos");  // truncated, NUL-terminated
}

TEST(SimNpuPluginTest, ReportsPropertiesAndOptions) {
  {
    Device d;
    StrataDeviceProperties p{};
    p.struct_size = sizeof(p);
    ASSERT_EQ(Api().device_get_properties(d.get(), &p), STRATA_DEVICE_OK) << d.Error();
    EXPECT_STREQ(p.name, "sim_npu");
    EXPECT_STREQ(p.vendor, "Strata (simulated)");
    EXPECT_EQ(p.total_memory_bytes, uint64_t{256} << 20);
    EXPECT_EQ(p.alignment, 64u);
    EXPECT_EQ(p.max_queues, 8u);
    std::vector<std::string> names(p.kernel_names, p.kernel_names + p.num_kernels);
    EXPECT_EQ(names, (std::vector<std::string>{"matmul", "dense", "dense_bias", "dense_bias_relu", "conv2d",
                                               "conv2d_bias", "conv2d_bias_relu", "add", "mul", "relu"}));
    for (const std::string& name : names) d.Kernel(name.c_str());
    StrataDeviceKernel k = 0;
    EXPECT_EQ(Api().kernel_lookup(d.get(), "softmax", &k), STRATA_DEVICE_ERROR_NOT_FOUND);
    EXPECT_CONTAINS(d.Error(), "kernel_lookup: sim_npu has no kernel 'softmax' (it has matmul, dense,");
    p.struct_size = 8;
    EXPECT_EQ(Api().device_get_properties(d.get(), &p), STRATA_DEVICE_ERROR_INVALID_ARGUMENT);
    EXPECT_CONTAINS(d.Error(), "struct_size 8 is smaller than the version-1 StrataDeviceProperties");
  }
  {
    Device d("memory=16M, alignment=256,max_queues=2");
    StrataDeviceProperties p{};
    p.struct_size = sizeof(p);
    ASSERT_EQ(Api().device_get_properties(d.get(), &p), STRATA_DEVICE_OK);
    EXPECT_EQ(p.total_memory_bytes, uint64_t{16} << 20);
    EXPECT_EQ(p.alignment, 256u);
    EXPECT_EQ(p.max_queues, 2u);
    d.NewQueue();  // the second
    StrataDeviceQueue q = 0;
    EXPECT_EQ(Api().queue_create(d.get(), &q), STRATA_DEVICE_ERROR_UNSUPPORTED);
    EXPECT_EQ(d.Error(), "queue_create: the device already has 2 queues, its maximum (option max_queues)");
  }
  StrataDevice* device = nullptr;
  EXPECT_EQ(Api().device_open(0, "memroy=1G", &device), STRATA_DEVICE_ERROR_INVALID_ARGUMENT);
  EXPECT_CONTAINS(GlobalError(), "device_open: unknown option 'memroy' (known keys: memory, alignment,");
  EXPECT_EQ(Api().device_open(0, "memory=12Q", &device), STRATA_DEVICE_ERROR_INVALID_ARGUMENT);
  EXPECT_CONTAINS(GlobalError(),
                  "option memory=12Q: expected a non-negative integer with an optional K, M or G suffix");
  EXPECT_EQ(Api().device_open(0, "alignment=48", &device), STRATA_DEVICE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(GlobalError(), "device_open: option alignment=48 is not a power of two");
  EXPECT_EQ(Api().device_open(0, "max_queues=0", &device), STRATA_DEVICE_ERROR_INVALID_ARGUMENT);
  EXPECT_CONTAINS(GlobalError(), "option max_queues=0 is out of range [1, 64]");
  EXPECT_EQ(Api().device_open(0, "clock_mhz", &device), STRATA_DEVICE_ERROR_INVALID_ARGUMENT);
  EXPECT_CONTAINS(GlobalError(), "option 'clock_mhz' is not key=value");
  EXPECT_EQ(Api().device_open(1, "", &device), STRATA_DEVICE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(GlobalError(), "device_open: sim_npu has 1 device (index 0), got index 1");
  EXPECT_EQ(device, nullptr);
}

TEST(SimNpuPluginTest, AClosedDeviceIsAnErrorNotACrash) {
  StrataDevice* device = nullptr;
  ASSERT_EQ(Api().device_open(0, "memory=1M", &device), STRATA_DEVICE_OK);
  ASSERT_EQ(Api().device_close(device), STRATA_DEVICE_OK);
  StrataDeviceBuffer b = 0;
  EXPECT_EQ(Api().buffer_allocate(device, 64, &b), STRATA_DEVICE_ERROR_INVALID_ARGUMENT);
  EXPECT_CONTAINS(GlobalError(), "is not an open sim_npu device");
  EXPECT_CONTAINS(GlobalError(), "buffer_allocate: ");
  EXPECT_EQ(Api().device_close(device), STRATA_DEVICE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(Api().last_error(device), GlobalError());
}

// ---- memory ------------------------------------------------------------------------

TEST(SimNpuMemoryTest, ValidatesHandles) {
  Device d("memory=1M");
  Device other("memory=1M");
  const StrataDeviceBuffer b = d.Alloc(100);
  uint64_t size = 0;
  ASSERT_EQ(Api().buffer_get_size(d.get(), b, &size), STRATA_DEVICE_OK);
  EXPECT_EQ(size, 100u);
  EXPECT_EQ(d.Counters().memory_in_use_bytes, 128u) << "rounded up to the 64-byte alignment";

  EXPECT_EQ(Api().buffer_free(d.get(), 0), STRATA_DEVICE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(d.Error(), "buffer_free: the buffer handle is 0");
  EXPECT_EQ(Api().buffer_free(d.get(), 12345), STRATA_DEVICE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(d.Error(), "buffer_free: 0x0000000000003039 is not a buffer handle");
  EXPECT_EQ(Api().buffer_free(d.get(), d.queue()), STRATA_DEVICE_ERROR_INVALID_ARGUMENT);
  EXPECT_CONTAINS(d.Error(), "is a queue handle, not a buffer handle");
  EXPECT_EQ(Api().buffer_free(other.get(), b), STRATA_DEVICE_ERROR_INVALID_ARGUMENT);
  EXPECT_CONTAINS(other.Error(), "buffer #1 (");
  EXPECT_CONTAINS(other.Error(), ") belongs to another device");
  EXPECT_EQ(Api().buffer_free(d.get(), b + 1), STRATA_DEVICE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(d.Error(), "buffer_free: buffer #2 does not exist");

  ASSERT_EQ(Api().buffer_free(d.get(), b), STRATA_DEVICE_OK);
  EXPECT_EQ(Api().buffer_free(d.get(), b), STRATA_DEVICE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(d.Error(), "buffer_free: buffer #1 was freed");
  float host[4] = {};
  EXPECT_EQ(Api().queue_copy_host_to_device(d.get(), d.queue(), host, b, 0, sizeof(host)),
            STRATA_DEVICE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(d.Error(), "queue_copy_host_to_device: destination: buffer #1 was freed");
  EXPECT_EQ(d.Counters().memory_in_use_bytes, 0u);
  EXPECT_EQ(d.Counters().memory_peak_bytes, 128u);

  // Zero-byte buffers are distinct, valid buffers.
  const StrataDeviceBuffer e1 = d.Alloc(0), e2 = d.Alloc(0);
  EXPECT_NE(e1, e2);
  EXPECT_EQ(Api().queue_copy_host_to_device(d.get(), d.queue(), nullptr, e1, 0, 0), STRATA_DEVICE_OK);
  EXPECT_EQ(d.Sync(), STRATA_DEVICE_OK);

  // Errors are per thread: another thread's failure does not replace ours.
  EXPECT_EQ(Api().buffer_free(d.get(), 0), STRATA_DEVICE_ERROR_INVALID_ARGUMENT);
  std::thread([&] {
    EXPECT_STREQ(Api().last_error(d.get()), "");
    EXPECT_EQ(Api().buffer_free(d.get(), 7), STRATA_DEVICE_ERROR_INVALID_ARGUMENT);
  }).join();
  EXPECT_EQ(d.Error(), "buffer_free: the buffer handle is 0");
}

TEST(SimNpuMemoryTest, ExhaustionIsAClearErrorAndTheDeviceStaysUsable) {
  Device d("memory=1M");
  const StrataDeviceBuffer a = d.Alloc(512 << 10), b = d.Alloc(256 << 10), c = d.Alloc(256 << 10);
  StrataDeviceBuffer x = 0;
  EXPECT_EQ(Api().buffer_allocate(d.get(), 1, &x), STRATA_DEVICE_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(d.Error(),
            "buffer_allocate: out of device memory: requested 1 bytes, largest free block 0 of 0 bytes free "
            "(device memory 1048576 bytes)");
  ASSERT_EQ(Api().buffer_free(d.get(), b), STRATA_DEVICE_OK);
  EXPECT_EQ(Api().buffer_allocate(d.get(), 300 << 10, &x), STRATA_DEVICE_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(d.Error(),
            "buffer_allocate: out of device memory: requested 307200 bytes, largest free block 262144 of 262144 "
            "bytes free (device memory 1048576 bytes)");
  EXPECT_EQ(Api().buffer_allocate(d.get(), UINT64_MAX, &x), STRATA_DEVICE_ERROR_OUT_OF_MEMORY);
  // Freeing a's neighbour coalesces the two free blocks into one of 768 KiB.
  ASSERT_EQ(Api().buffer_free(d.get(), a), STRATA_DEVICE_OK);
  const StrataDeviceBuffer big = d.Alloc(768 << 10);
  ASSERT_NE(big, 0u);
  EXPECT_EQ(d.Counters().memory_in_use_bytes, uint64_t{1} << 20);
  // Best fit: with a 256 KiB hole and, further on, a 128 KiB one, a 100 KiB buffer
  // takes the smaller (first fit would split the 256 KiB hole).
  ASSERT_EQ(Api().buffer_free(d.get(), big), STRATA_DEVICE_OK);
  ASSERT_EQ(Api().buffer_free(d.get(), c), STRATA_DEVICE_OK);
  const StrataDeviceBuffer p = d.Alloc(256 << 10), q = d.Alloc(256 << 10), r = d.Alloc(128 << 10),
                           s = d.Alloc(128 << 10), t = d.Alloc(256 << 10);
  ASSERT_EQ(Api().buffer_free(d.get(), q), STRATA_DEVICE_OK);  // a 256 KiB hole at 256 KiB
  ASSERT_EQ(Api().buffer_free(d.get(), s), STRATA_DEVICE_OK);  // a 128 KiB hole at 640 KiB
  const StrataDeviceBuffer small = d.Alloc(100 << 10);
  StrataDeviceBuffer fits = 0;  // only possible if `small` left the 256 KiB hole whole
  EXPECT_EQ(Api().buffer_allocate(d.get(), 256 << 10, &fits), STRATA_DEVICE_OK) << d.Error();
  // And the device still computes.
  const StrataDeviceBuffer in = d.Upload({-1, 2, -3, 4});
  std::vector<int64_t> shape = {4};
  ASSERT_EQ(d.Launch("relu", {Tensor(in, shape), Tensor(in, shape)}), STRATA_DEVICE_OK) << d.Error();
  EXPECT_EQ(d.Download(in, 4), (std::vector<float>{0, 2, 0, 4}));
  for (StrataDeviceBuffer buffer : {p, r, t, small, fits, in}) {
    EXPECT_EQ(Api().buffer_free(d.get(), buffer), STRATA_DEVICE_OK) << d.Error();
  }
  EXPECT_EQ(d.Counters().memory_in_use_bytes, 0u);
}

TEST(SimNpuMemoryTest, CopiesRoundTripWithOffsets) {
  Device d("memory=1M");
  std::vector<uint8_t> bytes(1000);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 7 + 3);
  const StrataDeviceBuffer a = d.Alloc(1200), b = d.Alloc(1200);
  const auto& api = Api();
  // Unaligned offsets are fine for copies.
  ASSERT_EQ(api.queue_copy_host_to_device(d.get(), d.queue(), bytes.data(), a, 3, 1000), STRATA_DEVICE_OK);
  ASSERT_EQ(api.queue_copy_device_to_device(d.get(), d.queue(), a, 103, b, 17, 500), STRATA_DEVICE_OK);
  std::vector<uint8_t> whole(1000), part(500), tail(10);
  ASSERT_EQ(api.queue_copy_device_to_host(d.get(), d.queue(), a, 3, whole.data(), 1000), STRATA_DEVICE_OK);
  ASSERT_EQ(api.queue_copy_device_to_host(d.get(), d.queue(), b, 17, part.data(), 500), STRATA_DEVICE_OK);
  ASSERT_EQ(api.queue_copy_device_to_host(d.get(), d.queue(), a, 993, tail.data(), 10), STRATA_DEVICE_OK);
  ASSERT_EQ(d.Sync(), STRATA_DEVICE_OK) << d.Error();
  EXPECT_EQ(whole, bytes);
  EXPECT_EQ(part, std::vector<uint8_t>(bytes.begin() + 100, bytes.begin() + 600));
  EXPECT_EQ(tail, std::vector<uint8_t>(bytes.begin() + 990, bytes.end()));

  // Byte ranges are checked at submission, overflow included.
  EXPECT_EQ(api.queue_copy_host_to_device(d.get(), d.queue(), bytes.data(), a, 201, 1000),
            STRATA_DEVICE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(d.Error(), "queue_copy_host_to_device: destination: bytes [201, 1201) are outside buffer #1 of 1200 bytes");
  EXPECT_EQ(api.queue_copy_device_to_host(d.get(), d.queue(), a, UINT64_MAX, whole.data(), 2),
            STRATA_DEVICE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(d.Error(),
            "queue_copy_device_to_host: source: bytes [18446744073709551615, 18446744073709551615 + 2) are outside "
            "buffer #1 of 1200 bytes");
  EXPECT_EQ(api.queue_copy_device_to_device(d.get(), d.queue(), a, 0, a, 100, 200),
            STRATA_DEVICE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(d.Error(),
            "queue_copy_device_to_device: source bytes [0, 200) and destination bytes [100, 300) of buffer #1 overlap");
  EXPECT_EQ(api.queue_copy_device_to_host(d.get(), d.queue(), a, 0, nullptr, 4), STRATA_DEVICE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(d.Error(), "queue_copy_device_to_host: host_dst is NULL");
  EXPECT_EQ(api.queue_copy_device_to_host(d.get(), 0, a, 0, whole.data(), 4), STRATA_DEVICE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(d.Error(), "queue_copy_device_to_host: the queue handle is 0");
  EXPECT_EQ(d.Counters().failed_commands, 0u) << "refused submissions run nothing";
}

TEST(SimNpuMemoryTest, QueueOrderedFreeWaitsForEarlierCommands) {
  Device d("memory=1M,debug_delay_us=20000");
  const StrataDeviceBuffer a = d.Upload({1, -2, 3, -4});
  std::vector<int64_t> shape = {4};
  ASSERT_EQ(d.Launch("relu", {Tensor(a, shape), Tensor(a, shape)}), STRATA_DEVICE_OK);
  std::vector<float> out(4);
  ASSERT_EQ(Api().queue_copy_device_to_host(d.get(), d.queue(), a, 0, out.data(), 16), STRATA_DEVICE_OK);
  ASSERT_EQ(Api().queue_free_buffer(d.get(), d.queue(), a), STRATA_DEVICE_OK);
  // From now on nothing may name the buffer, though its commands are still queued.
  EXPECT_EQ(Api().queue_copy_device_to_host(d.get(), d.queue(), a, 0, out.data(), 16),
            STRATA_DEVICE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(d.Error(), "queue_copy_device_to_host: source: buffer #1 is being freed (queue_free_buffer)");
  ASSERT_EQ(d.Sync(), STRATA_DEVICE_OK) << d.Error();
  EXPECT_EQ(out, (std::vector<float>{1, 0, 3, 0}));
  EXPECT_EQ(d.Counters().memory_in_use_bytes, 0u);
  uint64_t size = 0;
  EXPECT_EQ(Api().buffer_get_size(d.get(), a, &size), STRATA_DEVICE_ERROR_INVALID_ARGUMENT);
}

TEST(SimNpuMemoryTest, ABufferFreedBeforeItsCommandRunsFailsThatCommand) {
  // The free must land while the copy is still delayed on the worker. A host
  // descheduled for the whole delay would let the copy run first, so such an
  // attempt proves nothing and is repeated; five in a row are a failure.
  constexpr int kAttempts = 5;
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    Device d("memory=1M,debug_delay_us=100000");
    const StrataDeviceBuffer a = d.Alloc(16);
    const float host[4] = {1, 2, 3, 4};
    const auto start = Clock::now();
    ASSERT_EQ(Api().queue_copy_host_to_device(d.get(), d.queue(), host, a, 0, 16), STRATA_DEVICE_OK);
    ASSERT_EQ(Api().buffer_free(d.get(), a), STRATA_DEVICE_OK);
    const bool freed_in_time = Clock::now() - start < std::chrono::microseconds(100000);
    const int status = d.Sync();
    if (!freed_in_time) continue;
    EXPECT_EQ(status, STRATA_DEVICE_ERROR_EXECUTION);
    EXPECT_EQ(d.Error(), "host->device copy (command #1 on queue #1) failed: buffer #1 was freed");
    EXPECT_EQ(d.Sync(), STRATA_DEVICE_OK) << "the error was reported once";
    return;
  }
  ADD_FAILURE() << "the host was descheduled longer than the command's 100 ms delay in " << kAttempts
                << " attempts in a row";
}

// ---- kernels against numpy -------------------------------------------------------------

// Runs the case's kernel on its fixture inputs (in a fresh output full of NaN) and
// compares with the expected output. Inputs are uploaded into one buffer at offsets,
// as a runtime sub-allocating device memory would.
void RunFixture(const std::string& case_name) {
  SCOPED_TRACE(case_name);
  const std::string kernel = case_name.substr(0, case_name.rfind("__"));
  std::vector<std::string> inputs, outputs;
  if (kernel == "matmul" || kernel == "add" || kernel == "mul") {
    inputs = {"a", "b"};
    outputs = {"c"};
  } else if (kernel == "relu") {
    inputs = {"x"};
    outputs = {"y"};
  } else {
    inputs = {"x", "w"};
    if (Contains(kernel, "bias")) inputs.push_back("b");
    outputs = {"y"};
  }
  Device d("memory=4M");
  std::vector<Npy> arrays;
  for (const std::string& name : inputs) arrays.push_back(ReadNpy(case_name, name));
  Npy expected = ReadNpy(case_name, outputs[0]);
  ASSERT_FALSE(expected.f32.empty());
  arrays.push_back(Npy{expected.shape, std::vector<float>(expected.f32.size(), std::nanf("")), {}});

  // One buffer, each tensor at a 64-byte aligned offset after the previous one.
  std::vector<uint64_t> offsets;
  uint64_t total = 0;
  for (const Npy& a : arrays) {
    offsets.push_back(total);
    total += (a.f32.size() * 4 + 63) / 64 * 64 + 64;
  }
  const StrataDeviceBuffer buffer = d.Alloc(total);
  std::vector<StrataDeviceArg> args;
  for (size_t i = 0; i < arrays.size(); ++i) {
    ASSERT_EQ(Api().queue_copy_host_to_device(d.get(), d.queue(), arrays[i].f32.data(), buffer, offsets[i],
                                              arrays[i].f32.size() * 4),
              STRATA_DEVICE_OK)
        << d.Error();
    args.push_back(Tensor(buffer, arrays[i].shape, offsets[i]));
  }
  if (Contains(kernel, "conv2d")) {
    const Npy attrs = ReadNpy(case_name, "attrs");
    ASSERT_EQ(attrs.i64.size(), 8u);
    for (int64_t v : attrs.i64) args.push_back(I64(v));
  }
  ASSERT_EQ(d.Launch(kernel.c_str(), args), STRATA_DEVICE_OK) << d.Error();
  ExpectClose(d.Download(buffer, expected.f32.size(), offsets.back()), expected.f32, case_name);
  EXPECT_EQ(d.Counters().kernel_launches, 1u);
}

TEST(SimNpuKernelTest, Matmul) {
  for (const char* c :
       {"matmul__2d", "matmul__partial_tiles", "matmul__shared_b", "matmul__batched", "matmul__broadcast"}) {
    RunFixture(c);
  }
}

TEST(SimNpuKernelTest, Dense) {
  for (const char* c :
       {"dense__rank2", "dense__rank3", "dense_bias__rank2", "dense_bias__rank3", "dense_bias_relu__rank2"}) {
    RunFixture(c);
  }
}

TEST(SimNpuKernelTest, Conv2d) {
  for (const char* c : {"conv2d__pad_asymmetric", "conv2d__stride2", "conv2d__dilation2", "conv2d__mixed",
                        "conv2d__1x1", "conv2d_bias__3x3", "conv2d_bias_relu__3x3", "conv2d_bias_relu__stride2"}) {
    RunFixture(c);
  }
}

TEST(SimNpuKernelTest, Elementwise) {
  for (const char* op : {"add", "mul"}) {
    for (const char* c : {"same_shape", "bias", "channel", "leading_ones", "middle", "scalar"}) {
      RunFixture(std::string(op) + "__" + c);
    }
  }
  RunFixture("relu__rank3");
}

TEST(SimNpuKernelTest, ElementwiseKernelsRunInPlace) {
  Device d("memory=1M");
  const StrataDeviceBuffer a = d.Upload({1, 2, 3, 4, 5, 6}), b = d.Upload({10, 20, 30});
  std::vector<int64_t> shape = {2, 3}, row = {3};
  ASSERT_EQ(d.Launch("add", {Tensor(a, shape), Tensor(b, row), Tensor(a, shape)}), STRATA_DEVICE_OK);
  ASSERT_EQ(d.Launch("mul", {Tensor(a, shape), Tensor(a, shape), Tensor(a, shape)}), STRATA_DEVICE_OK);
  EXPECT_EQ(d.Download(a, 6), (std::vector<float>{121, 484, 1089, 196, 625, 1296}));
  // Empty tensors are fine and compute nothing.
  std::vector<int64_t> empty = {0, 3};
  ASSERT_EQ(d.Launch("relu", {Tensor(a, empty), Tensor(b, empty)}), STRATA_DEVICE_OK);
  EXPECT_EQ(d.Sync(), STRATA_DEVICE_OK) << d.Error();
}

// ---- asynchronous errors -----------------------------------------------------------------

// Launches `kernel` on `args`, expects the submission to succeed and the
// synchronize to report `message`; then checks that the queue still works.
void ExpectKernelError(Device& d, const char* kernel, const std::vector<StrataDeviceArg>& args,
                       const std::string& message) {
  SCOPED_TRACE(kernel);
  ASSERT_EQ(d.Launch(kernel, args), STRATA_DEVICE_OK) << d.Error();
  ASSERT_EQ(d.Sync(), STRATA_DEVICE_ERROR_EXECUTION);
  EXPECT_CONTAINS(d.Error(), "kernel '" + std::string(kernel) + "' (command #");
  EXPECT_CONTAINS(d.Error(), message);
  EXPECT_EQ(d.Sync(), STRATA_DEVICE_OK) << "reported once: " << d.Error();
}

TEST(SimNpuErrorTest, KernelsCheckTheirArgumentsWhenTheyRun) {
  Device d("memory=1M");
  const StrataDeviceBuffer buf = d.Alloc(4096);
  std::vector<int64_t> x = {5, 24}, w = {16, 23}, w_ok = {16, 24}, y = {5, 16}, bias = {15}, c3 = {3};
  const uint64_t wo = 512, yo = 2048, bo = 3072;  // byte offsets of W, Y and a bias in `buf`
  ExpectKernelError(d, "dense", {Tensor(buf, x), Tensor(buf, w, wo), Tensor(buf, y, yo)},
                    "failed: X [5, 24] has K = 24 features but W [16, 23] has 23 columns");
  ExpectKernelError(d, "dense", {Tensor(buf, x), Tensor(buf, w_ok, wo)},
                    "failed: expects 3 arguments (X, W, Y), got 2");
  ExpectKernelError(d, "dense_bias", {Tensor(buf, x), Tensor(buf, w_ok, wo), Tensor(buf, bias, bo), Tensor(buf, y, yo)},
                    "bias is [15], expected [16] (N of W [16, 24])");
  ExpectKernelError(d, "dense", {Tensor(buf, x), I64(3), Tensor(buf, y, yo)},
                    "argument #1 'W' must be a float32 buffer, got an i64 scalar");
  ExpectKernelError(d, "dense", {Tensor(buf, x, 0, {kDLInt, 64, 1}), Tensor(buf, w_ok, wo), Tensor(buf, y, yo)},
                    "argument #0 'X' must be float32, got int64 [5, 24]");
  ExpectKernelError(d, "relu", {Tensor(buf, c3, 2), Tensor(buf, c3, 64)},
                    "argument #0 'X' starts at byte offset 2, which is not a multiple of the element size 4");
  std::vector<int64_t> y_bad = {5, 17};
  ExpectKernelError(d, "dense", {Tensor(buf, x), Tensor(buf, w_ok, wo), Tensor(buf, y_bad, yo)},
                    "output Y is [5, 17], expected [5, 16] for X [5, 24] and W [16, 24]");
  ExpectKernelError(d, "dense", {Tensor(buf, x), Tensor(buf, w_ok, wo), Tensor(buf, y, 256)},
                    "output argument #2 'Y' overlaps input argument #0 'X' (this kernel cannot run in place)");
  std::vector<int64_t> a = {2, 3, 4}, b_bad = {3, 1, 4};
  ExpectKernelError(d, "add", {Tensor(buf, a), Tensor(buf, b_bad, 256), Tensor(buf, a, 512)},
                    "B [3, 1, 4] does not broadcast to A [2, 3, 4]: B dimension 0 = 3 is neither 1 nor A's dimension 0 "
                    "= 2");
  std::vector<int64_t> b_row = {4};
  ExpectKernelError(d, "mul", {Tensor(buf, a), Tensor(buf, b_row, 0), Tensor(buf, a, 0)},
                    "output argument #2 'C' overlaps input argument #1 'B' (in place, an output must cover exactly the "
                    "bytes of an input of its shape)");
  std::vector<int64_t> ma = {2, 5, 12}, mb = {3, 12, 7}, mc = {2, 5, 7};
  ExpectKernelError(d, "matmul", {Tensor(buf, {5, 12}), Tensor(buf, {11, 7}, 1024), Tensor(buf, {5, 7}, 2048)},
                    "inner dimensions differ: A [5, 12] has K = 12 but B [11, 7] has 11 rows");
  ExpectKernelError(d, "matmul", {Tensor(buf, ma), Tensor(buf, mb, 512), Tensor(buf, mc, 2048)},
                    "batch dimensions do not broadcast: A [2, 5, 12] and B [3, 12, 7] differ in batch dimension 0 (2 "
                    "vs 3, and neither is 1)");
  std::vector<int64_t> cx = {1, 2, 5, 5}, cw = {3, 2, 3, 3}, cy = {1, 3, 5, 5};
  auto conv = [&](std::vector<int64_t> scalars) {
    std::vector<StrataDeviceArg> args = {Tensor(buf, cx), Tensor(buf, cw, 512), Tensor(buf, cy, 1024)};
    for (int64_t s : scalars) args.push_back(I64(s));
    return args;
  };
  ExpectKernelError(d, "conv2d", conv({1, 1, 0, 0, 0, 0, 1, 1}),
                    "output Y is [1, 3, 5, 5], expected [1, 3, 3, 3] for X [1, 2, 5, 5], W [3, 2, 3, 3], strides 1x1, "
                    "padding (top, left, bottom, right) (0, 0, 0, 0), dilation 1x1");
  ExpectKernelError(d, "conv2d", conv({0, 1, 1, 1, 1, 1, 1, 1}), "stride_h = 0 is out of range [1, 2^31]");
  ExpectKernelError(d, "conv2d", conv({1, 1, 1, 1, 1, 1, 4, 4}),
                    "the kernel window of W [3, 2, 3, 3] at dilation 4x4 spans 9x9 pixels, more than the padded input "
                    "7x7 of X [1, 2, 5, 5]");
}

TEST(SimNpuErrorTest, SubmissionChecksTheArgumentList) {
  Device d("memory=1M");
  const StrataDeviceBuffer buf = d.Alloc(64);
  const StrataDeviceKernel relu = d.Kernel("relu");
  std::vector<int64_t> shape = {4}, big = {17}, negative = {-1};
  auto launch = [&](std::vector<StrataDeviceArg> args) {
    return Api().queue_launch(d.get(), d.queue(), relu, args.data(), static_cast<int32_t>(args.size()));
  };
  EXPECT_EQ(launch({Tensor(buf, shape), Tensor(buf, big)}), STRATA_DEVICE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(d.Error(), "queue_launch(relu): argument #1 'Y': bytes [0, 68) are outside buffer #1 of 64 bytes");
  EXPECT_EQ(launch({Tensor(buf, shape), Tensor(buf, shape, 60)}), STRATA_DEVICE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(d.Error(), "queue_launch(relu): argument #1 'Y': bytes [60, 76) are outside buffer #1 of 64 bytes");
  EXPECT_EQ(launch({Tensor(buf, negative), Tensor(buf, shape)}), STRATA_DEVICE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(d.Error(), "queue_launch(relu): argument #0 'X': dimension 0 = -1 is out of range [0, 2^40]");
  StrataDeviceArg no_shape = Tensor(buf, shape);
  no_shape.value.buffer.shape = nullptr;
  EXPECT_EQ(launch({no_shape, Tensor(buf, shape)}), STRATA_DEVICE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(d.Error(), "queue_launch(relu): argument #0 'X': shape is NULL for rank 1");
  StrataDeviceArg deep = Tensor(buf, shape);
  deep.value.buffer.ndim = 9;
  EXPECT_EQ(launch({deep, Tensor(buf, shape)}), STRATA_DEVICE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(d.Error(), "queue_launch(relu): argument #0 'X': rank 9 is out of range [0, 8]");
  StrataDeviceArg odd{};
  odd.kind = 42;
  EXPECT_EQ(launch({odd}), STRATA_DEVICE_ERROR_INVALID_ARGUMENT);
  EXPECT_CONTAINS(d.Error(), "queue_launch(relu): argument #0 'X': unknown argument kind 42");
  EXPECT_EQ(Api().queue_launch(d.get(), d.queue(), relu, nullptr, 2), STRATA_DEVICE_ERROR_INVALID_ARGUMENT);
  EXPECT_CONTAINS(d.Error(), "queue_launch(relu): 2 arguments at 0x0000000000000000");
  EXPECT_EQ(Api().queue_launch(d.get(), d.queue(), buf, nullptr, 0), STRATA_DEVICE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(d.Error(), "queue_launch: buffer #1 is not a kernel of this device (use kernel_lookup)");
  EXPECT_EQ(d.Sync(), STRATA_DEVICE_OK);
  EXPECT_EQ(d.Counters().failed_commands, 0u);
}

TEST(SimNpuErrorTest, AFailedCommandIsReportedOnceWithTheOthersCounted) {
  Device d("memory=1M");
  const StrataDeviceBuffer a = d.Upload({-1, 2, -3, 4});
  std::vector<int64_t> four = {4}, three = {3};
  for (int i = 0; i < 3; ++i) ASSERT_EQ(d.Launch("relu", {Tensor(a, four), Tensor(a, three)}), STRATA_DEVICE_OK);
  // The commands after a failure still run.
  ASSERT_EQ(d.Launch("relu", {Tensor(a, four), Tensor(a, four)}), STRATA_DEVICE_OK);
  ASSERT_EQ(d.Sync(), STRATA_DEVICE_ERROR_EXECUTION);
  EXPECT_EQ(d.Error(),
            "kernel 'relu' (command #2 on queue #1) failed: output Y is [3], expected X's shape [4] (and 2 more failed "
            "commands)");
  EXPECT_EQ(d.Download(a, 4), (std::vector<float>{0, 2, 0, 4}));
  const StrataDeviceCounters c = d.Counters();
  EXPECT_EQ(c.failed_commands, 3u);
  EXPECT_EQ(c.kernel_launches, 1u);
}

// Fault injection for the host's tests: the N-th copy or launch fails when it
// runs, once, like any failed command.
TEST(SimNpuErrorTest, OptionDebugFailCommandFailsTheNthCopyOrLaunchOnce) {
  Device d("memory=1M,debug_fail_command=3");
  const StrataDeviceBuffer a = d.Upload({-1, 2, -3, 4});  // 1: the copy
  const StrataDeviceBuffer b = d.Alloc(16);
  std::vector<int64_t> four = {4};
  ASSERT_EQ(d.Launch("relu", {Tensor(a, four), Tensor(b, four)}), STRATA_DEVICE_OK);  // 2
  ASSERT_EQ(Api().queue_free_buffer(d.get(), d.queue(), b), STRATA_DEVICE_OK);        // a free does not count
  const StrataDeviceBuffer c = d.Alloc(16);
  ASSERT_EQ(d.Launch("relu", {Tensor(a, four), Tensor(c, four)}), STRATA_DEVICE_OK);  // 3: fails when it runs
  ASSERT_EQ(d.Sync(), STRATA_DEVICE_ERROR_EXECUTION);
  EXPECT_EQ(d.Error(), "kernel 'relu' (command #4 on queue #1) failed: injected failure (option debug_fail_command=3)");
  EXPECT_EQ(d.Counters().failed_commands, 1u);
  // Once: the same launch now runs, and the queue is usable.
  ASSERT_EQ(d.Launch("relu", {Tensor(a, four), Tensor(c, four)}), STRATA_DEVICE_OK);
  ASSERT_EQ(d.Sync(), STRATA_DEVICE_OK) << d.Error();
  EXPECT_EQ(d.Download(c, 4), (std::vector<float>{0, 2, 0, 4}));
  StrataDevice* device = nullptr;
  EXPECT_EQ(Api().device_open(0, "debug_fail_command=-1", &device), STRATA_DEVICE_ERROR_INVALID_ARGUMENT);
  EXPECT_CONTAINS(GlobalError(), "option debug_fail_command=-1: expected a non-negative integer");
}

TEST(SimNpuErrorTest, EventWaitReportsFailuresBeforeTheEventOnly) {
  Device d("memory=1M");
  const StrataDeviceBuffer a = d.Upload({1, 2, 3, 4});
  std::vector<int64_t> four = {4}, three = {3};
  const StrataDeviceEvent e = d.NewEvent();
  ASSERT_EQ(d.Launch("relu", {Tensor(a, four), Tensor(a, three)}), STRATA_DEVICE_OK);
  ASSERT_EQ(Api().queue_record_event(d.get(), d.queue(), e), STRATA_DEVICE_OK);
  ASSERT_EQ(d.Launch("add", {Tensor(a, four), Tensor(a, three), Tensor(a, four)}), STRATA_DEVICE_OK);
  ASSERT_EQ(Api().event_wait(d.get(), e), STRATA_DEVICE_ERROR_EXECUTION);
  EXPECT_CONTAINS(d.Error(), "kernel 'relu' (command #2 on queue #1) failed");
  EXPECT_FALSE(Contains(d.Error(), "more failed")) << d.Error();
  ASSERT_EQ(d.Sync(), STRATA_DEVICE_ERROR_EXECUTION);  // the add's failure, after the event
  EXPECT_CONTAINS(d.Error(), "kernel 'add' (command #4 on queue #1) failed: B [3] does not broadcast to A [4]");
  // device_synchronize reports too; and with nothing failed, all is well.
  ASSERT_EQ(d.Launch("relu", {Tensor(a, four), Tensor(a, three)}), STRATA_DEVICE_OK);
  ASSERT_EQ(Api().device_synchronize(d.get()), STRATA_DEVICE_ERROR_EXECUTION);
  EXPECT_CONTAINS(d.Error(), "kernel 'relu' (command #5 on queue #1) failed");
  EXPECT_EQ(Api().device_synchronize(d.get()), STRATA_DEVICE_OK);
  // A failure no call reported comes back from queue_destroy.
  const StrataDeviceQueue q = d.NewQueue();
  ASSERT_EQ(d.Launch("relu", {Tensor(a, four), Tensor(a, three)}, q), STRATA_DEVICE_OK);
  EXPECT_EQ(Api().queue_destroy(d.get(), q), STRATA_DEVICE_ERROR_EXECUTION);
  EXPECT_CONTAINS(d.Error(),
                  "queue_destroy: queue #2 had failures no call reported: kernel 'relu' (command #1 on "
                  "queue #2) failed");
  EXPECT_EQ(Api().queue_synchronize(d.get(), q), STRATA_DEVICE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(d.Error(), "queue_synchronize: queue #2 was destroyed");
}

TEST(SimNpuErrorTest, DeviceCloseReportsUnreportedFailures) {
  StrataDevice* device = nullptr;
  ASSERT_EQ(Api().device_open(0, "memory=1M", &device), STRATA_DEVICE_OK);
  StrataDeviceQueue q = 0;
  StrataDeviceBuffer b = 0;
  StrataDeviceKernel relu = 0;
  ASSERT_EQ(Api().queue_create(device, &q), STRATA_DEVICE_OK);
  ASSERT_EQ(Api().buffer_allocate(device, 16, &b), STRATA_DEVICE_OK);
  ASSERT_EQ(Api().kernel_lookup(device, "relu", &relu), STRATA_DEVICE_OK);
  std::vector<int64_t> four = {4}, two = {2};
  StrataDeviceArg args[] = {Tensor(b, four), Tensor(b, two)};
  ASSERT_EQ(Api().queue_launch(device, q, relu, args, 2), STRATA_DEVICE_OK);
  EXPECT_EQ(Api().device_close(device), STRATA_DEVICE_ERROR_EXECUTION);
  EXPECT_CONTAINS(GlobalError(), "device_close: failures no call reported: kernel 'relu' (command #1 on queue #1)");
}

// ---- queues and events ------------------------------------------------------------

TEST(SimNpuQueueTest, DependentCommandsRunInSubmissionOrder) {
  Device d("memory=1M");
  const StrataDeviceBuffer acc = d.Upload(std::vector<float>(64, 0.0f));
  const StrataDeviceBuffer step = d.Alloc(64 * 4);
  std::vector<int64_t> shape = {64};
  // 200 rounds of: upload k % 7 into `step` (from host memory that stays valid until
  // the synchronize), acc += step; every 10th round acc = -acc, every 50th (from the
  // 25th) acc = relu(acc). All queued before anything is waited for: any reordering
  // changes the result.
  std::vector<std::vector<float>> steps(200);
  const StrataDeviceBuffer minus_one = d.Upload({-1});
  std::vector<int64_t> scalar = {};
  double expected = 0;
  for (int k = 0; k < 200; ++k) {
    steps[k].assign(64, static_cast<float>(k % 7));
    ASSERT_EQ(Api().queue_copy_host_to_device(d.get(), d.queue(), steps[k].data(), step, 0, 64 * 4), STRATA_DEVICE_OK);
    ASSERT_EQ(d.Launch("add", {Tensor(acc, shape), Tensor(step, shape), Tensor(acc, shape)}), STRATA_DEVICE_OK);
    expected += k % 7;
    if (k % 10 == 9) {
      ASSERT_EQ(d.Launch("mul", {Tensor(acc, shape), Tensor(minus_one, scalar), Tensor(acc, shape)}), STRATA_DEVICE_OK);
      expected = -expected;
    }
    if (k % 50 == 24) {
      ASSERT_EQ(d.Launch("relu", {Tensor(acc, shape), Tensor(acc, shape)}), STRATA_DEVICE_OK);
      expected = std::max(expected, 0.0);
    }
  }
  ASSERT_NE(expected, 0.0);
  ASSERT_EQ(Api().queue_copy_device_to_device(d.get(), d.queue(), acc, 0, step, 0, 64 * 4), STRATA_DEVICE_OK);
  EXPECT_EQ(d.Download(step, 64), std::vector<float>(64, static_cast<float>(expected)));
  EXPECT_EQ(d.Counters().kernel_launches, 224u);
}

TEST(SimNpuQueueTest, SubmissionReturnsBeforeTheCommandCompletes) {
  constexpr int64_t kDelayUs = 100000;
  Device d("memory=8M,debug_delay_us=100000");
  const StrataDeviceBuffer a = d.Alloc(256 * 256 * 4), b = d.Alloc(256 * 256 * 4), c = d.Alloc(256 * 256 * 4);
  std::vector<int64_t> shape = {256, 256};
  const StrataDeviceEvent e = d.NewEvent();
  int32_t complete = -1;
  ASSERT_EQ(Api().event_query(d.get(), e, &complete), STRATA_DEVICE_OK);
  EXPECT_EQ(complete, 1) << "an event never recorded is complete";
  const auto start = Clock::now();
  ASSERT_EQ(d.Launch("matmul", {Tensor(a, shape), Tensor(b, shape), Tensor(c, shape)}), STRATA_DEVICE_OK);
  ASSERT_EQ(Api().queue_record_event(d.get(), d.queue(), e), STRATA_DEVICE_OK);
  ASSERT_EQ(Api().event_query(d.get(), e, &complete), STRATA_DEVICE_OK);
  const auto queried = Clock::now();
  // The command sleeps kDelayUs before it runs, and it cannot start before it was
  // submitted: a query issued within kDelayUs of the submission must see it pending.
  if (queried - start < std::chrono::microseconds(kDelayUs)) {
    EXPECT_EQ(complete, 0);
  }
  ASSERT_EQ(Api().event_wait(d.get(), e), STRATA_DEVICE_OK) << d.Error();
  EXPECT_GE(Clock::now() - start, std::chrono::microseconds(kDelayUs));
  ASSERT_EQ(Api().event_query(d.get(), e, &complete), STRATA_DEVICE_OK);
  EXPECT_EQ(complete, 1);
  EXPECT_EQ(d.Counters().kernel_launches, 1u);
  EXPECT_EQ(Api().event_destroy(d.get(), e), STRATA_DEVICE_OK);
  EXPECT_EQ(Api().event_query(d.get(), e, &complete), STRATA_DEVICE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(d.Error(), "event_query: event #1 was destroyed");
}

TEST(SimNpuQueueTest, AQueueWaitsForAnEventOfAnother) {
  // Every copy and kernel sleeps 20 ms first. Queue A uploads x and applies relu
  // twice (~60 ms); queue B, told to wait for A's event, downloads the result. Without
  // the wait B's copy would run after ~20 ms and see x before the relu.
  Device d("memory=1M,debug_delay_us=20000");
  const StrataDeviceQueue qa = d.queue(), qb = d.NewQueue();
  const std::vector<float> x = {-1, 2, -3, 4, -5, 6};
  std::vector<int64_t> shape = {6};
  const StrataDeviceBuffer buf = d.Alloc(6 * 4);
  const StrataDeviceEvent e = d.NewEvent(), never = d.NewEvent();
  ASSERT_EQ(Api().queue_wait_event(d.get(), qb, never), STRATA_DEVICE_OK) << "never recorded: nothing to wait for";
  ASSERT_EQ(Api().queue_copy_host_to_device(d.get(), qa, x.data(), buf, 0, 6 * 4), STRATA_DEVICE_OK);
  ASSERT_EQ(d.Launch("relu", {Tensor(buf, shape), Tensor(buf, shape)}, qa), STRATA_DEVICE_OK);
  ASSERT_EQ(d.Launch("relu", {Tensor(buf, shape), Tensor(buf, shape)}, qa), STRATA_DEVICE_OK);
  ASSERT_EQ(Api().queue_record_event(d.get(), qa, e), STRATA_DEVICE_OK);
  ASSERT_EQ(Api().queue_wait_event(d.get(), qb, e), STRATA_DEVICE_OK);
  // Destroying the event now is fine: the queued commands keep what they need.
  ASSERT_EQ(Api().event_destroy(d.get(), e), STRATA_DEVICE_OK);
  std::vector<float> out(6, -100);
  ASSERT_EQ(Api().queue_copy_device_to_host(d.get(), qb, buf, 0, out.data(), 6 * 4), STRATA_DEVICE_OK);
  ASSERT_EQ(d.Sync(qb), STRATA_DEVICE_OK) << d.Error();
  EXPECT_EQ(out, (std::vector<float>{0, 2, 0, 4, 0, 6}));

  // Simulated time: B's clock jumped to A's clock at the record, then added its copy.
  const StrataDeviceCounters a = d.Counters(qa), b = d.Counters(qb), all = d.Counters();
  const uint64_t copy24 = 1000 + 2;  // latency + ceil(24 * 1000 / 12800)
  const uint64_t relu6 = 1000 + 1;   // latency + ceil(ceil(6 / 16) * 1000 / 1000)
  EXPECT_EQ(a.time_ns, copy24 + 2 * relu6);
  EXPECT_EQ(b.time_ns, a.time_ns + copy24);
  EXPECT_EQ(b.busy_ns, copy24);
  EXPECT_EQ(all.time_ns, b.time_ns);
  EXPECT_EQ(all.busy_ns, a.busy_ns + b.busy_ns);
}

TEST(SimNpuQueueTest, ThreadsShareADevice) {
  Device d("memory=4M");
  constexpr int kThreads = 4;
  std::vector<std::vector<float>> results(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      StrataDeviceQueue q = 0;
      ASSERT_EQ(Api().queue_create(d.get(), &q), STRATA_DEVICE_OK) << d.Error();
      std::vector<float> x(32, static_cast<float>(t + 1)), w(32 * 8, 0.5f);
      StrataDeviceBuffer bx = d.Upload(x, q), bw = d.Upload(w, q), by = d.Alloc(8 * 4);
      std::vector<int64_t> xs = {1, 32}, ws = {8, 32}, ys = {1, 8};
      for (int i = 0; i < 20; ++i) {
        ASSERT_EQ(d.Launch("dense", {Tensor(bx, xs), Tensor(bw, ws), Tensor(by, ys)}, q), STRATA_DEVICE_OK);
      }
      results[t].resize(8);
      ASSERT_EQ(Api().queue_copy_device_to_host(d.get(), q, by, 0, results[t].data(), 8 * 4), STRATA_DEVICE_OK);
      ASSERT_EQ(Api().queue_synchronize(d.get(), q), STRATA_DEVICE_OK);
      ASSERT_EQ(Api().queue_destroy(d.get(), q), STRATA_DEVICE_OK);
      for (StrataDeviceBuffer b : {bx, bw, by}) ASSERT_EQ(Api().buffer_free(d.get(), b), STRATA_DEVICE_OK);
    });
  }
  for (std::thread& t : threads) t.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(results[t], std::vector<float>(8, 16.0f * (t + 1))) << t;
  EXPECT_EQ(d.Counters().kernel_launches, uint64_t{20 * kThreads});
  EXPECT_EQ(d.Counters().memory_in_use_bytes, 0u);
}

// ---- counters and the cost model -----------------------------------------------------

TEST(SimNpuCostTest, CountersFollowTheDocumentedFormulas) {
  Device d("memory=4M");  // defaults: 16x16 MACs at 1000 MHz, 16 lanes, 12800 / 25600 MB/s, 1000 ns per command
  const StrataDeviceBuffer a = d.Alloc(33 * 20 * 4), b = d.Alloc(20 * 17 * 4), c = d.Alloc(33 * 17 * 4),
                           c2 = d.Alloc(33 * 17 * 4);
  std::vector<float> av(33 * 20, 0.5f), bv(20 * 17, 0.25f), cv(33 * 17);
  ASSERT_EQ(Api().queue_copy_host_to_device(d.get(), d.queue(), av.data(), a, 0, av.size() * 4), STRATA_DEVICE_OK);
  ASSERT_EQ(Api().queue_copy_host_to_device(d.get(), d.queue(), bv.data(), b, 0, bv.size() * 4), STRATA_DEVICE_OK);
  std::vector<int64_t> as = {33, 20}, bs = {20, 17}, cs = {33, 17};
  ASSERT_EQ(d.Launch("matmul", {Tensor(a, as), Tensor(b, bs), Tensor(c, cs)}), STRATA_DEVICE_OK);
  ASSERT_EQ(d.Launch("relu", {Tensor(c, cs), Tensor(c2, cs)}), STRATA_DEVICE_OK);
  ASSERT_EQ(Api().queue_copy_device_to_device(d.get(), d.queue(), c2, 0, c, 0, cv.size() * 4), STRATA_DEVICE_OK);
  ASSERT_EQ(Api().queue_copy_device_to_host(d.get(), d.queue(), c, 0, cv.data(), cv.size() * 4), STRATA_DEVICE_OK);
  ASSERT_EQ(d.Sync(), STRATA_DEVICE_OK) << d.Error();
  EXPECT_EQ(cv, std::vector<float>(33 * 17, 2.5f));

  // copy: 1000 + ceil(bytes * 1000 / MB/s); kernel: 1000 + ceil(cycles * 1000 / MHz)
  const uint64_t h2d_a = 1000 + 207;          // 2640 bytes: 206.25 ns
  const uint64_t h2d_b = 1000 + 107;          // 1360 bytes: 106.25 ns
  const uint64_t matmul = 1000 + 3 * 2 * 20;  // ceil(33/16) * ceil(17/16) tiles, K = 20 cycles each
  const uint64_t relu = 1000 + 36;            // ceil(561 / 16) cycles
  const uint64_t d2d = 1000 + 88;             // 2244 bytes at 25600 MB/s: 87.66 ns
  const uint64_t d2h = 1000 + 176;            // 2244 bytes at 12800 MB/s: 175.3 ns
  const StrataDeviceCounters q = d.Counters(d.queue());
  EXPECT_EQ(q.kernel_ns, matmul + relu);
  EXPECT_EQ(q.copy_ns, h2d_a + h2d_b + d2d + d2h);
  EXPECT_EQ(q.busy_ns, q.kernel_ns + q.copy_ns);
  EXPECT_EQ(q.time_ns, q.busy_ns);
  EXPECT_EQ(q.kernel_launches, 2u);
  EXPECT_EQ(q.host_to_device_copies, 2u);
  EXPECT_EQ(q.host_to_device_bytes, 2640u + 1360u);
  EXPECT_EQ(q.device_to_device_copies, 1u);
  EXPECT_EQ(q.device_to_device_bytes, 2244u);
  EXPECT_EQ(q.device_to_host_copies, 1u);
  EXPECT_EQ(q.device_to_host_bytes, 2244u);
  EXPECT_EQ(q.failed_commands, 0u);
  EXPECT_EQ(q.memory_in_use_bytes, 0u) << "memory is device-wide";
  const StrataDeviceCounters all = d.Counters();
  EXPECT_EQ(all.busy_ns, q.busy_ns);
  EXPECT_EQ(all.time_ns, q.time_ns);
  EXPECT_EQ(all.memory_in_use_bytes, 2688u + 1408u + 2 * 2304u);  // each rounded up to 64 bytes
  EXPECT_EQ(all.memory_peak_bytes, all.memory_in_use_bytes);

  ASSERT_EQ(Api().buffer_free(d.get(), a), STRATA_DEVICE_OK);
  ASSERT_EQ(Api().reset_counters(d.get()), STRATA_DEVICE_OK);
  const StrataDeviceCounters zero = d.Counters(), zero_q = d.Counters(d.queue());
  for (const StrataDeviceCounters& z : {zero, zero_q}) {
    EXPECT_EQ(z.time_ns + z.busy_ns + z.kernel_ns + z.copy_ns + z.kernel_launches + z.host_to_device_copies +
                  z.host_to_device_bytes + z.device_to_host_copies + z.device_to_host_bytes +
                  z.device_to_device_copies + z.device_to_device_bytes + z.failed_commands,
              0u);
  }
  EXPECT_EQ(zero.memory_in_use_bytes, 1408u + 2 * 2304u);
  EXPECT_EQ(zero.memory_peak_bytes, zero.memory_in_use_bytes);
}

TEST(SimNpuCostTest, EveryParameterIsAnOption) {
  Device d(
      "memory=1M mac_rows=8 mac_cols=32 clock_mhz=500 vector_lanes=4 dma_mbps=1000 d2d_mbps=2000 "
      "command_latency_ns=10");
  const StrataDeviceBuffer buf = d.Alloc(64 << 10);
  std::vector<int64_t> x = {2, 3, 9, 9}, w = {5, 3, 3, 3}, y = {2, 5, 9, 9}, bias = {5};
  auto launch = [&](const char* kernel, std::vector<StrataDeviceArg> args) {
    ASSERT_EQ(d.Launch(kernel, args), STRATA_DEVICE_OK);
    ASSERT_EQ(d.Sync(), STRATA_DEVICE_OK) << d.Error();
  };
  // conv2d as an implicit GEMM: M = 2*9*9 = 162 pixels, N = 5 channels, K = 3*3*3 = 27.
  launch("conv2d_bias_relu", {Tensor(buf, x), Tensor(buf, w, 4096), Tensor(buf, bias, 8192), Tensor(buf, y, 16384),
                              I64(1), I64(1), I64(1), I64(1), I64(1), I64(1), I64(1), I64(1)});
  const uint64_t conv = 10 + (21 * 1 * 27) * 2;  // ceil(162/8) * ceil(5/32) tiles * 27 cycles, 2 ns a cycle
  EXPECT_EQ(d.Counters().kernel_ns, conv);
  // dense on X[..., K] flattens the leading dimensions into M.
  std::vector<int64_t> dx = {2, 5, 7}, dw = {40, 7}, dy = {2, 5, 40};
  launch("dense", {Tensor(buf, dx), Tensor(buf, dw, 4096), Tensor(buf, dy, 16384)});
  const uint64_t dense = 10 + (2 * 2 * 7) * 2;  // ceil(10/8) * ceil(40/32) tiles * 7 cycles
  EXPECT_EQ(d.Counters().kernel_ns, conv + dense);
  // Batched matmul: the batch multiplies the tiles.
  std::vector<int64_t> ma = {3, 1, 4, 6}, mb = {2, 6, 5}, mc = {3, 2, 4, 5};
  launch("matmul", {Tensor(buf, ma), Tensor(buf, mb, 4096), Tensor(buf, mc, 16384)});
  const uint64_t matmul = 10 + (6 * 1 * 1 * 6) * 2;  // 6 products of ceil(4/8) * ceil(5/32) tiles * 6 cycles
  EXPECT_EQ(d.Counters().kernel_ns, conv + dense + matmul);
  std::vector<int64_t> v = {3, 7}, row = {7};
  launch("add", {Tensor(buf, v), Tensor(buf, row, 4096), Tensor(buf, v, 16384)});
  const uint64_t add = 10 + 6 * 2;  // ceil(21 / 4) cycles
  EXPECT_EQ(d.Counters().kernel_ns, conv + dense + matmul + add);
  std::vector<uint8_t> host(1001);
  ASSERT_EQ(Api().queue_copy_host_to_device(d.get(), d.queue(), host.data(), buf, 0, 1001), STRATA_DEVICE_OK);
  ASSERT_EQ(Api().queue_copy_device_to_device(d.get(), d.queue(), buf, 0, buf, 2000, 1001), STRATA_DEVICE_OK);
  ASSERT_EQ(d.Sync(), STRATA_DEVICE_OK);
  EXPECT_EQ(d.Counters().copy_ns, (10 + 1001) + (10 + 501));  // 1 byte/ns and 2 bytes/ns, rounded up
}

}  // namespace
