// What verifying an executable's checksums (format 1.5, serialization/checksum.h)
// adds to loading it, by load path, for a file of STRATA_CHECKSUM_BENCH_MB MiB of
// tensor constants (default 512) written to a temporary file.
//
// Rows:
//   Load/<MapFile|LoadFromFile|LoadFromBytes>/<verify|skip>: one load (and the
//     executable's release). Verify rows also carry `skip_us`, the same path
//     without verification timed in the same run, `verify_vs_skip` = row time /
//     skip_us, and `added_ms_per_GB` / `added_cpu_ms_per_GB`: the median over 7
//     back-to-back pairs of (verified - skipped) wall / process CPU time per GB of file.
//   Xxh3/in_memory: the hash alone over the file's bytes in memory: the floor of
//     the cost (`GB_per_s`).
//   TouchPages/MapFile: mapping the file and reading one byte of each page: what a
//     mapped load pays to fault in every page before hashing a byte of it.
//   Cold/MapFile/<verify|skip>: a mapped load right after the file's pages were
//     dropped from the page cache (posix_fadvise): with verification it reads the
//     whole file from disk, so its time is the disk's; without, only the tables
//     (the weights are read later, when used).
//
// The Load rows run with the file's pages in the page cache (written, then read
// once before timing): the costs on a warm machine.
//
// Setup checks what it measures: the file loads with and without verification,
// and a copy with one damaged byte of its last constant is refused with
// verification and loads without.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <memory>
#include <string>
#include <unistd.h>
#include <utility>
#include <vector>

#include <benchmark/benchmark.h>
#include <sys/mman.h>

#include "benchmarks/bench_util.h"
#include "serialization/checksum.h"
#include "serialization/writer.h"
#include "vm/bytecode/bytecode.h"
#include "vm/executable.h"

namespace strata::bench {
namespace {

constexpr int64_t kConstantMiB = 64;  // each constant; the last may be smaller

int64_t FileMiB() {
  const char* text = std::getenv("STRATA_CHECKSUM_BENCH_MB");
  const int64_t mib = text != nullptr ? std::atoll(text) : 512;
  if (mib < 1 || mib > 1800) Die("STRATA_CHECKSUM_BENCH_MB must be 1..1800 (the format's limit is 2 GiB)");
  return mib;
}

// main(x) = x, and `mib` MiB of f32 constants of deterministic values.
serialization::ExecutableSpec Spec(int64_t mib) {
  serialization::ExecutableSpec spec;
  serialization::FunctionSpec main;
  main.name = "main";
  main.num_params = 1;
  main.num_registers = 1;
  main.param_names = {"x"};
  main.code = {static_cast<int64_t>(vm::Opcode::kRet), 0};
  spec.functions.push_back(main);
  spec.entry_points = {0};
  uint32_t state = 12345;
  for (int64_t left = mib; left > 0; left -= kConstantMiB) {
    const int64_t elements = std::min(left, kConstantMiB) * (1 << 20) / 4;
    auto bytes = std::make_shared<std::vector<uint8_t>>(static_cast<size_t>(elements * 4));
    for (size_t i = 0; i < bytes->size(); i += 4) {
      state = state * 1664525u + 1013904223u;
      const float v = static_cast<float>(state >> 8) / static_cast<float>(1u << 24) - 0.5f;
      std::memcpy(bytes->data() + i, &v, 4);
    }
    spec.constants.push_back(serialization::TensorConstantSpec{DataType::F32(), {elements}, std::move(bytes)});
  }
  return spec;
}

std::vector<uint8_t> ReadAll(const std::string& path) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!file) Die("cannot read " + path);
  std::vector<uint8_t> bytes;
  std::fseek(file.get(), 0, SEEK_END);
  bytes.resize(static_cast<size_t>(std::ftell(file.get())));
  std::fseek(file.get(), 0, SEEK_SET);
  if (std::fread(bytes.data(), 1, bytes.size(), file.get()) != bytes.size()) Die("short read of " + path);
  return bytes;
}

// The file, written once; removed at exit.
struct BenchFile {
  std::string path;
  std::vector<uint8_t> bytes;  // its contents, for LoadFromBytes and the hash row
  double gb = 0;
  ~BenchFile() {
    if (!path.empty()) std::remove(path.c_str());
  }
};

BenchFile& File() {
  static BenchFile file = [] {
    BenchFile f;
    char name[] = "/tmp/strata_checksum_bench_XXXXXX";
    const int fd = mkstemp(name);
    if (fd < 0) Die("cannot create a temporary file");
    close(fd);
    f.path = name;
    OrDie(serialization::WriteExecutableFile(Spec(FileMiB()), f.path));
    // On disk, so that the cold rows can drop its pages from the page cache.
    const int written = open(f.path.c_str(), O_RDONLY | O_CLOEXEC);
    if (written < 0 || fsync(written) != 0) Die("cannot sync " + f.path);
    close(written);
    f.bytes = ReadAll(f.path);  // also brings every page into the page cache
    f.gb = static_cast<double>(f.bytes.size()) / 1e9;
    return f;
  }();
  return file;
}

enum class Path { kMapFile, kLoadFromFile, kLoadFromBytes };
const char* PathName(Path path) {
  switch (path) {
    case Path::kMapFile: return "MapFile";
    case Path::kLoadFromFile: return "LoadFromFile";
    case Path::kLoadFromBytes: return "LoadFromBytes";
  }
  return "?";
}

StatusOr<std::shared_ptr<const vm::Executable>> Load(Path path, bool verify) {
  vm::LoadOptions options;
  options.verify_checksums = verify;
  switch (path) {
    case Path::kMapFile: return vm::Executable::MapFile(File().path, options);
    case Path::kLoadFromFile: return vm::Executable::LoadFromFile(File().path, options);
    case Path::kLoadFromBytes: return vm::Executable::LoadFromBytes(File().bytes, options);
  }
  Die("unknown load path");
}

void CheckSetup() {
  static bool checked = false;
  if (checked) return;
  checked = true;
  BenchFile& file = File();
  for (bool verify : {true, false}) {
    auto exe = OrDie(Load(Path::kMapFile, verify));
    if (exe->checksums_verified() != verify) Die("checksums_verified() does not follow the option");
  }
  std::vector<uint8_t> damaged = file.bytes;
  damaged[damaged.size() - 100] ^= 0x01;  // inside the last-written data: constant 0's
  auto refused = vm::Executable::LoadFromBytes(damaged);
  if (refused.ok() || refused.status().message().find("checksum mismatch in constants[0]") == std::string::npos) {
    Die("a damaged constant was not refused: " +
        (refused.ok() ? std::string("it loaded") : refused.status().message()));
  }
  vm::LoadOptions skip;
  skip.verify_checksums = false;
  OrDie(vm::Executable::LoadFromBytes(damaged, skip));
}

// Wall and CPU time of one call of `fn`, in seconds.
template <typename F>
std::pair<double, double> TimeCall(F&& fn) {
  auto cpu_now = [] {
    timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
  };
  const auto wall = std::chrono::steady_clock::now();
  const double cpu = cpu_now();
  fn();
  return {std::chrono::duration<double>(std::chrono::steady_clock::now() - wall).count(), cpu_now() - cpu};
}

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

void BM_Load(benchmark::State& state, Path path, bool verify) {
  CheckSetup();
  const BenchFile& file = File();
  auto load = [&](bool with) {
    auto exe = Load(path, with);
    if (!exe.ok()) Die(exe.status().message());
    benchmark::DoNotOptimize(exe->get());
  };
  if (verify) {
    // Loads without and with verification back to back, so that a machine whose
    // load changes (other processes, page cache) shifts both alike: the medians
    // of the differences are the cost of verifying.
    std::vector<double> skip_s, added_s, added_cpu_s;
    load(false);
    load(true);
    for (int pair = 0; pair < 7; ++pair) {
      const auto [skip_wall, skip_cpu] = TimeCall([&] { load(false); });
      const auto [verify_wall, verify_cpu] = TimeCall([&] { load(true); });
      skip_s.push_back(skip_wall);
      added_s.push_back(verify_wall - skip_wall);
      added_cpu_s.push_back(verify_cpu - skip_cpu);
    }
    state.counters["skip_us"] = Median(skip_s) * 1e6;
    state.counters["added_ms_per_GB"] = Median(added_s) * 1e3 / file.gb;
    state.counters["added_cpu_ms_per_GB"] = Median(added_cpu_s) * 1e3 / file.gb;
  }
  for (auto _ : state) load(verify);
  state.counters["GB"] = file.gb;
}

// Drops the file's pages from the page cache (they are clean: File() synced them),
// so that the next load reads it from disk.
void EvictFromPageCache(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 || posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) != 0) Die("cannot evict " + path + " from the page cache");
  close(fd);
}

// A mapped load straight after the file left the page cache: with verification it
// reads the whole file from disk.
void BM_ColdMapFile(benchmark::State& state, bool verify) {
  CheckSetup();
  const BenchFile& file = File();
  for (auto _ : state) {
    state.PauseTiming();
    EvictFromPageCache(file.path);
    state.ResumeTiming();
    auto exe = Load(Path::kMapFile, verify);
    if (!exe.ok()) Die(exe.status().message());
    benchmark::DoNotOptimize(exe->get());
  }
  state.counters["GB"] = file.gb;
  // Read it back for the other rows.
  benchmark::DoNotOptimize(ReadAll(file.path).size());
}

void BM_Xxh3(benchmark::State& state) {
  const BenchFile& file = File();
  for (auto _ : state) benchmark::DoNotOptimize(serialization::Xxh3(file.bytes));
  state.counters["GB_per_s"] = benchmark::Counter(file.gb, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_TouchPages(benchmark::State& state) {
  const BenchFile& file = File();
  const long page = sysconf(_SC_PAGESIZE);
  for (auto _ : state) {
    const int fd = open(file.path.c_str(), O_RDONLY | O_CLOEXEC);
    void* addr = mmap(nullptr, file.bytes.size(), PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (addr == MAP_FAILED) Die("mmap failed");
    const volatile uint8_t* p = static_cast<const uint8_t*>(addr);
    uint8_t sum = 0;
    for (size_t i = 0; i < file.bytes.size(); i += static_cast<size_t>(page)) sum += p[i];
    benchmark::DoNotOptimize(sum);
    munmap(addr, file.bytes.size());
  }
  state.counters["GB"] = file.gb;
}

void Register() {
  for (Path path : {Path::kMapFile, Path::kLoadFromFile, Path::kLoadFromBytes}) {
    for (bool verify : {true, false}) {
      const std::string name = std::string("Load/") + PathName(path) + (verify ? "/verify" : "/skip");
      benchmark::RegisterBenchmark(name.c_str(), BM_Load, path, verify)->UseRealTime()->Unit(benchmark::kMillisecond);
    }
  }
  for (bool verify : {true, false}) {
    benchmark::RegisterBenchmark(verify ? "Cold/MapFile/verify" : "Cold/MapFile/skip", BM_ColdMapFile, verify)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
  }
  benchmark::RegisterBenchmark("Xxh3/in_memory", BM_Xxh3)->UseRealTime()->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("TouchPages/MapFile", BM_TouchPages)->UseRealTime()->Unit(benchmark::kMillisecond);
}

}  // namespace
}  // namespace strata::bench

int main(int argc, char** argv) {
  const bool json = strata::bench::JsonRequested(argc, argv);
  benchmark::Initialize(&argc, argv);
  strata::bench::Register();
  strata::bench::RunBenchmarksWithRatios(json, {{"skip_us", "verify_vs_skip", /*row_over_baseline=*/true}});
  return 0;
}
