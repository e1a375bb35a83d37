// What a parallel loop on the runtime's thread pool (the one compiled kernels'
// parallel loops use, vm/thread_pool.h) costs against running the same loop on
// the calling thread, on an idle machine and with every core but one kept busy
// by another thread (a shared server, a CI machine with other jobs).
//
// Rows: Pool/<work>/<idle|busy>, one parallel_for over a loop whose serial time
// is about <work> microseconds. Each row measures the serial loop first, in the
// same conditions (`serial_us`), and reports `speedup_vs_serial` = serial time /
// pool time: about the thread count for long loops on an idle machine, and
// about 1, not far below, when the workers cannot get a core (the caller then
// claims their chunks instead of waiting for them). Every row first checks that
// the pool ran each index exactly once.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <benchmark/benchmark.h>

#include "benchmarks/bench_util.h"
#include "vm/kernel_runtime.h"
#include "vm/kernel_threads.h"

namespace strata::bench {
namespace {

// Iterations of a dependent multiply-add chain per index: one index is about
// 0.1 us of work on the CI machine.
constexpr int kStepsPerIndex = 100;
constexpr int64_t kIndicesPerMicrosecond = 10;

struct Loop {
  std::vector<float> out;
  std::vector<std::atomic<int>> visits;
  explicit Loop(int64_t n) : out(static_cast<size_t>(n)), visits(static_cast<size_t>(n)) {}
};

int32_t Body(int64_t begin, int64_t end, void* closure) {
  auto* loop = static_cast<Loop*>(closure);
  for (int64_t i = begin; i < end; ++i) {
    float x = static_cast<float>(i);
    for (int k = 0; k < kStepsPerIndex; ++k) x = x * 0.999f + 1.0f;
    loop->out[static_cast<size_t>(i)] = x;
    loop->visits[static_cast<size_t>(i)].fetch_add(1, std::memory_order_relaxed);
  }
  return 0;
}

// Keeps hardware_concurrency - 1 threads spinning while it lives.
class BusyCores {
 public:
  BusyCores() {
    const unsigned cores = std::max(2u, std::thread::hardware_concurrency());
    for (unsigned t = 0; t + 1 < cores; ++t) {
      threads_.emplace_back([this] {
        float x = 1.0f;
        while (!stop_.load(std::memory_order_relaxed)) x = x * 1.0001f + 1.0f;
        sink_.store(x, std::memory_order_relaxed);
      });
    }
  }
  ~BusyCores() {
    stop_.store(true);
    for (std::thread& t : threads_) t.join();
  }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<float> sink_{0};
  std::vector<std::thread> threads_;
};

double MedianMicros(const std::function<void()>& run, int repeats) {
  std::vector<double> times;
  for (int r = 0; r < repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    run();
    times.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

void BM_Pool(benchmark::State& state, int64_t micros, bool busy) {
  const int64_t n = micros * kIndicesPerMicrosecond;
  std::unique_ptr<BusyCores> load;
  if (busy) load = std::make_unique<BusyCores>();
  Loop loop(n);
  const StrataRuntimeApi* api = vm::GetKernelRuntimeApi();
  if (api->parallel_for(n, &Body, &loop) != 0) Die("parallel_for failed: " + vm::TakeKernelError());
  for (int64_t i = 0; i < n; ++i) {
    if (loop.visits[static_cast<size_t>(i)].load() != 1) Die("index " + std::to_string(i) + " ran other than once");
  }
  const double serial_us = MedianMicros([&] { Body(0, n, &loop); }, 200);
  for (auto _ : state) {
    if (api->parallel_for(n, &Body, &loop) != 0) Die("parallel_for failed: " + vm::TakeKernelError());
    benchmark::DoNotOptimize(loop.out.data());
  }
  state.counters["serial_us"] = serial_us;
  state.counters["threads"] = vm::KernelThreadCount();
}

void Register() {
  for (int64_t micros : {1, 10, 100}) {
    for (bool busy : {false, true}) {
      const std::string name = "Pool/" + std::to_string(micros) + "us/" + (busy ? "busy" : "idle");
      benchmark::RegisterBenchmark(name.c_str(), BM_Pool, micros, busy)->UseRealTime()->Unit(benchmark::kMicrosecond);
    }
  }
}

}  // namespace
}  // namespace strata::bench

int main(int argc, char** argv) {
  const bool json = strata::bench::JsonRequested(argc, argv);
  benchmark::Initialize(&argc, argv);
  strata::bench::Register();
  strata::bench::RunBenchmarksWithRatios(json, {{"serial_us", "speedup_vs_serial"}});
  return 0;
}
