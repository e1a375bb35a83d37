// VersionStatistics; see statistics.h.
#include "apps/server/statistics.h"

namespace strata::server {

void VersionStatistics::Record(const RequestTimes& t) {
  const int64_t now_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.last_inference_ms = now_ms;
  if (!t.ok) {
    stats_.fail.Add(t.total);
    return;
  }
  stats_.success.Add(t.total);
  ++stats_.inference_count;
  if (t.counts_execution) ++stats_.execution_count;
  stats_.queue.Add(t.queue);
  stats_.compute_input.Add(t.decode);
  stats_.compute_infer.Add(t.compute);
  stats_.compute_output.Add(t.encode);
  BatchStatistics& batch = stats_.batches[t.batch_size];
  batch.compute_input.Add(t.decode);
  batch.compute_infer.Add(t.compute);
  batch.compute_output.Add(t.encode);
}

StatisticsSnapshot VersionStatistics::Snapshot() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

}  // namespace strata::server
