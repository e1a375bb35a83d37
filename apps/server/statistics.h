// Per-version inference statistics, as Triton's statistics extension reports
// them (GET /v2/models/{m}/stats, gRPC ModelStatistics): counts and summed
// nanoseconds of successful and failed requests, of the time they waited for an
// instance (queue), decoded their inputs (compute_input), ran (compute_infer)
// and encoded their outputs (compute_output), and the same per batch size.
//
// Thread-safety: Record and Snapshot may be called from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>

namespace strata::server {

struct StatDuration {
  int64_t count = 0;
  int64_t ns = 0;
  void Add(std::chrono::nanoseconds d) {
    ++count;
    ns += d.count();
  }
};

struct BatchStatistics {
  StatDuration compute_input, compute_infer, compute_output;
};

struct StatisticsSnapshot {
  int64_t last_inference_ms = 0;  // ms since the epoch of the last request answered; 0 for none
  int64_t inference_count = 0;    // requests answered successfully (Triton counts batch rows; here, one per request)
  int64_t execution_count = 0;    // runs of the function (a dynamic batch is one)
  StatDuration success, fail, queue, compute_input, compute_infer, compute_output;
  std::map<int64_t, BatchStatistics> batches;  // by batch size (requests in the run)
};

// One request's part, recorded once it is answered.
struct RequestTimes {
  bool ok = false;
  bool ran = false;               // it reached the function (queue and compute times are set)
  bool counts_execution = false;  // the first request of its run
  int64_t batch_size = 1;
  std::chrono::nanoseconds total{0};  // from the request's arrival to its answer
  std::chrono::nanoseconds queue{0}, decode{0}, compute{0}, encode{0};
};

class VersionStatistics {
 public:
  void Record(const RequestTimes& t);
  StatisticsSnapshot Snapshot() const;

 private:
  mutable std::mutex mutex_;
  StatisticsSnapshot stats_;
};

}  // namespace strata::server
