// What every Strata benchmark shares: failing loudly, timing a baseline in the
// same run, and reporting a row's speed as a ratio against that baseline.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include <benchmark/benchmark.h>
#include <dlpack/dlpack.h>

#include "support/status.h"

namespace strata::bench {

// A benchmark that cannot set up (or computes a wrong result) must not report a time.
[[noreturn]] inline void Die(const std::string& message) {
  std::fprintf(stderr, "benchmark setup failed: %s\n", message.c_str());
  std::exit(1);
}

inline void OrDie(const Status& status) {
  if (!status.ok()) Die(status.message());
}

template <typename T>
T OrDie(StatusOr<T> value) {
  if (!value.ok()) Die(value.status().message());
  return std::move(value).value();
}

// Seconds per call of `fn`: the best of `batches` timed batches (each at least
// `min_batch_seconds` once warmed up), so a baseline is as stable as the
// benchmark it divides.
template <typename F>
double SecondsPerCall(F&& fn, int batches = 7, double min_batch_seconds = 0.02) {
  using Clock = std::chrono::steady_clock;
  fn();  // warm up
  int reps = 1;
  double best = 1e30;
  for (int batch = 0; batch < batches; ++batch) {
    auto start = Clock::now();
    for (int i = 0; i < reps; ++i) fn();
    double seconds = std::chrono::duration<double>(Clock::now() - start).count() / reps;
    best = std::min(best, seconds);
    if (seconds * reps < min_batch_seconds) reps *= 2;
  }
  return best;
}

// A row-major f32 matrix of deterministic values in [-1, 1), with the DLTensor
// view a kernel takes.
struct Matrix {
  Matrix(int64_t rows, int64_t cols, uint32_t seed) : shape{rows, cols}, data(static_cast<size_t>(rows * cols)) {
    uint32_t state = seed * 2654435761u + 1;
    for (float& v : data) {
      state = state * 1664525u + 1013904223u;
      v = static_cast<float>(state >> 8) / static_cast<float>(1u << 24) * 2.0f - 1.0f;
    }
    dl.data = data.data();
    dl.device = {kDLCPU, 0};
    dl.ndim = 2;
    dl.dtype = {kDLFloat, 32, 1};
    dl.shape = shape;
    dl.strides = nullptr;
    dl.byte_offset = 0;
  }
  Matrix(const Matrix&) = delete;  // dl points into this object
  Matrix& operator=(const Matrix&) = delete;
  int64_t shape[2];
  std::vector<float> data;
  DLTensor dl;
};

// A ratio counter computed from a row's real time and one of its counters.
struct RatioCounter {
  std::string baseline_us_counter;  // a time in us, measured in the same run
  std::string ratio_counter;
  // false: ratio = baseline / row time (above 1, the row is faster);
  // true: ratio = row time / baseline (above 1, the baseline is faster).
  bool row_over_baseline = false;
};

// Adds every ratio to the rows that carry its baseline counter, to the console
// or (with --benchmark_format=json) the JSON report.
template <typename Base>
class RatioReporter : public Base {
 public:
  explicit RatioReporter(std::vector<RatioCounter> ratios) : ratios_(std::move(ratios)) {}

  void ReportRuns(const std::vector<benchmark::BenchmarkReporter::Run>& runs) override {
    std::vector<benchmark::BenchmarkReporter::Run> with_ratio = runs;
    for (auto& run : with_ratio) {
      if (run.iterations == 0) continue;
      const double us = run.GetAdjustedRealTime() / benchmark::GetTimeUnitMultiplier(run.time_unit) * 1e6;
      for (const RatioCounter& r : ratios_) {
        auto baseline = run.counters.find(r.baseline_us_counter);
        if (baseline == run.counters.end()) continue;
        run.counters[r.ratio_counter] = r.row_over_baseline ? us / baseline->second.value : baseline->second.value / us;
      }
    }
    Base::ReportRuns(with_ratio);
  }

 private:
  std::vector<RatioCounter> ratios_;
};

// Whether the command line asks for --benchmark_format=json; call it before
// benchmark::Initialize, which removes the flags it reads from argv.
inline bool JsonRequested(int argc, char** argv) {
  bool json = false;
  for (int i = 1; i < argc; ++i) json = json || std::string(argv[i]) == "--benchmark_format=json";
  return json;
}

// Runs the registered benchmarks (after benchmark::Initialize) with the ratios
// added, as JSON or for the console.
inline void RunBenchmarksWithRatios(bool json, std::vector<RatioCounter> ratios) {
  if (json) {
    RatioReporter<benchmark::JSONReporter> reporter(std::move(ratios));
    benchmark::RunSpecifiedBenchmarks(&reporter);
  } else {
    RatioReporter<benchmark::ConsoleReporter> reporter(std::move(ratios));
    benchmark::RunSpecifiedBenchmarks(&reporter);
  }
}

}  // namespace strata::bench
