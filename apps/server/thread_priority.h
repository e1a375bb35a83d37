// Compute below I/O: threads that run models or decode large bodies lower
// their own scheduling priority (nice +5), so that when the CPUs are busy the
// I/O threads (health probes, metrics, request admission, writing answers) are
// scheduled first. Under a saturating load this keeps /v2/health/live's
// latency in milliseconds instead of the tens that round-robin among the
// compute threads costs (docs/serving.md, benchmarks/peers/server_hostile_mix.py).
// Lowering one's own priority needs no privilege.
#pragma once

#include <unistd.h>

#include <sys/resource.h>
#include <sys/syscall.h>

namespace strata::server {

inline constexpr int kComputeNice = 5;

// Lowers the calling thread's priority to kComputeNice (once per thread).
inline void LowerThisThreadsPriority() {
  thread_local bool lowered = [] {
    const auto tid = static_cast<id_t>(::syscall(SYS_gettid));
    return ::setpriority(PRIO_PROCESS, tid, kComputeNice) == 0;
  }();
  (void)lowered;
}

}  // namespace strata::server
