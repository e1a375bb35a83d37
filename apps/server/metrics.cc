// Metrics; see metrics.h.
#include "apps/server/metrics.h"

#include <sstream>

namespace strata::server {
namespace {

// A label value with Prometheus' escapes (backslash, quote, newline).
std::string Escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

template <typename Histogram, size_t N>
void WriteHistogram(std::ostringstream& out, const std::string& name, const std::string& labels, const Histogram& h,
                    const std::array<double, N>& bounds) {
  int64_t cumulative = 0;
  for (size_t i = 0; i < N; ++i) {
    cumulative += h.counts[i];
    out << name << "_bucket{" << labels << ",le=\"" << bounds[i] << "\"} " << cumulative << "\n";
  }
  cumulative += h.counts[N];
  out << name << "_bucket{" << labels << ",le=\"+Inf\"} " << cumulative << "\n";
  out << name << "_sum{" << labels << "} " << h.sum << "\n";
  out << name << "_count{" << labels << "} " << h.count << "\n";
}

}  // namespace

template <size_t N>
void Metrics::Histogram<N>::Add(double value, const std::array<double, N>& bounds) {
  size_t i = 0;
  while (i < N && value > bounds[i]) ++i;
  ++counts[i];
  sum += value;
  ++count;
}

void Metrics::RecordRequest(const std::string& model, int64_t version, int http_status, std::chrono::nanoseconds queue,
                            std::chrono::nanoseconds compute, int64_t batch_size, bool ran) {
  std::lock_guard<std::mutex> lock(mutex_);
  Entry& e = entries_[{model, version}];
  ++e.requests;
  if (http_status != 200) ++e.failures[http_status];
  if (!ran) return;
  e.queue.Add(std::chrono::duration<double>(queue).count(), kSecondsBuckets);
  e.compute.Add(std::chrono::duration<double>(compute).count(), kSecondsBuckets);
  e.batch.Add(static_cast<double>(batch_size), kBatchBuckets);
}

void Metrics::RecordConnectionRefused(const std::string& reason) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++refused_[reason];
}

std::string Metrics::Text() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::ostringstream out;
  out << "# HELP strata_http_connections_refused_total Connections closed or refused for lack of room: evicted "
         "(the longest-waiting idle connection, to admit a new one), max_connections (503), accept_emfile and "
         "accept_enfile (out of file descriptors; accepting backed off).\n"
         "# TYPE strata_http_connections_refused_total counter\n";
  for (const auto& [reason, n] : refused_) {
    out << "strata_http_connections_refused_total{reason=\"" << Escape(reason) << "\"} " << n << "\n";
  }
  out << "# HELP strata_inference_requests_total Inference requests answered, by model and version.\n"
         "# TYPE strata_inference_requests_total counter\n";
  for (const auto& [key, e] : entries_) {
    out << "strata_inference_requests_total{model=\"" << Escape(key.first) << "\",version=\"" << key.second << "\"} "
        << e.requests << "\n";
  }
  out << "# HELP strata_inference_failures_total Inference requests answered with an error, by HTTP status.\n"
         "# TYPE strata_inference_failures_total counter\n";
  for (const auto& [key, e] : entries_) {
    for (const auto& [status, n] : e.failures) {
      out << "strata_inference_failures_total{model=\"" << Escape(key.first) << "\",version=\"" << key.second
          << "\",status=\"" << status << "\"} " << n << "\n";
    }
  }
  const struct {
    const char* name;
    const char* help;
    int which;
  } histograms[] = {
      {"strata_inference_queue_seconds", "Time requests waited for a free instance.", 0},
      {"strata_inference_compute_seconds", "Time requests ran (their batch's run).", 1},
      {"strata_inference_batch_size", "Requests per run.", 2},
  };
  for (const auto& h : histograms) {
    out << "# HELP " << h.name << " " << h.help << "\n# TYPE " << h.name << " histogram\n";
    for (const auto& [key, e] : entries_) {
      std::ostringstream labels;
      labels << "model=\"" << Escape(key.first) << "\",version=\"" << key.second << "\"";
      if (h.which == 0) WriteHistogram(out, h.name, labels.str(), e.queue, kSecondsBuckets);
      if (h.which == 1) WriteHistogram(out, h.name, labels.str(), e.compute, kSecondsBuckets);
      if (h.which == 2) WriteHistogram(out, h.name, labels.str(), e.batch, kBatchBuckets);
    }
  }
  return out.str();
}

}  // namespace strata::server
