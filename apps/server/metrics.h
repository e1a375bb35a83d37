// Metrics: what `GET /metrics` reports, in Prometheus' text format (0.0.4).
//
// Per model and version: inference requests and failures (by HTTP status),
// and histograms of the time requests waited for an instance, the time they
// ran, and the batch sizes they ran in. Recording takes one mutex per request,
// far below an inference's cost.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>

namespace strata::server {

class Metrics {
 public:
  // A request that got an answer from its model (any status).
  void RecordRequest(const std::string& model, int64_t version, int http_status, std::chrono::nanoseconds queue,
                     std::chrono::nanoseconds compute, int64_t batch_size, bool ran);
  // A connection the HTTP server closed or refused for lack of room, by reason.
  void RecordConnectionRefused(const std::string& reason);
  // The exposition text.
  std::string Text() const;

 private:
  static constexpr std::array<double, 12> kSecondsBuckets = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                                             0.01,   0.025,   0.05,   0.1,   0.5,    1.0};
  static constexpr std::array<double, 9> kBatchBuckets = {1, 2, 4, 8, 16, 32, 64, 128, 256};

  template <size_t N>
  struct Histogram {
    std::array<int64_t, N + 1> counts{};  // the last is +Inf
    double sum = 0;
    int64_t count = 0;
    void Add(double value, const std::array<double, N>& bounds);
  };
  struct Entry {
    int64_t requests = 0;
    std::map<int, int64_t> failures;  // by HTTP status
    Histogram<kSecondsBuckets.size()> queue, compute;
    Histogram<kBatchBuckets.size()> batch;
  };

  mutable std::mutex mutex_;
  std::map<std::pair<std::string, int64_t>, Entry> entries_;
  std::map<std::string, int64_t> refused_;
};

}  // namespace strata::server
