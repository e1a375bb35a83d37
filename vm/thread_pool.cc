// ThreadPool: chunks claimed by whoever is free, over persistent workers; see thread_pool.h.
//
// Jobs are announced through a generation counter under one mutex; workers and
// the caller first wait a while (spinning, then yielding) for the next job or
// for completion, then block on condition variables. Chunks are not assigned:
// the caller and the workers claim them through one atomic word (generation,
// chunk count, next chunk), so a worker that the OS has not scheduled yet (a
// busy machine, a worker still asleep) costs nothing: the caller claims its
// chunk too instead of waiting for it. The caller holds `job_mutex` for the whole job, taken with
// try_lock: a second caller never waits for the pool, it runs serially, which
// keeps the pool free of lock ordering problems (a kernel running on a worker
// never blocks on the pool either, because nested loops are detected through the
// thread's current job).
#include "vm/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "vm/kernel_threads.h"

namespace strata::vm {

struct ThreadPool::Job {
  int64_t n = 0;
  StrataParallelBody body = nullptr;
  void* closure = nullptr;
  int num_chunks = 1;
  // Chunks finished; the caller waits for all of them (not for the workers).
  std::atomic<int> completed{0};
  std::atomic<int32_t> first_code{0};
  std::mutex error_mutex;
  bool has_error = false;
  std::string error;

  void RunChunk(int chunk);
};

namespace {

// The job whose chunk this thread is running, or null outside of pool jobs.
thread_local ThreadPool::Job* t_current_job = nullptr;

// Waits a while before blocking: a kernel's parallel loops follow each other
// within microseconds, and an inference's kernels too, while waking a thread
// that sleeps on a futex costs far more than a small loop's work (measured on a
// 2-vCPU cloud VM: 17-38 us to fork and join a 1 us loop once the worker had
// gone to sleep, against 1-2 us while it still waits). So the wait first spins
// (lowest latency), then yields the CPU for the rest of its budget (so that when
// there are more runnable threads than cores, the thread it waits for can run
// on this core), and only then blocks. ONNX Runtime's and OpenMP's pools spin
// for the same reason; a budget of a couple of milliseconds keeps an idle
// service's workers asleep between requests.
constexpr auto kSpinBudget = std::chrono::microseconds(50);
constexpr auto kYieldBudget = std::chrono::milliseconds(2);
constexpr int kChecksPerClockRead = 64;

// Calls `done` until it returns true or the wait budget is spent.
template <typename Done>
bool WaitBriefly(Done done) {
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    for (int i = 0; i < kChecksPerClockRead; ++i) {
      if (done()) return true;
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    }
    if (std::chrono::steady_clock::now() - start >= kSpinBudget) break;
  }
  for (;;) {
    for (int i = 0; i < kChecksPerClockRead; ++i) {
      if (done()) return true;
      std::this_thread::yield();
    }
    if (std::chrono::steady_clock::now() - start >= kYieldBudget) return done();
  }
}

}  // namespace

void ThreadPool::Job::RunChunk(int chunk) {
  // Balanced static split: the first n % chunks chunks get one extra iteration.
  int64_t base = n / num_chunks;
  int64_t rem = n % num_chunks;
  int64_t begin = chunk * base + std::min<int64_t>(chunk, rem);
  int64_t end = begin + base + (chunk < rem ? 1 : 0);
  Job* saved = t_current_job;
  t_current_job = this;
  int32_t code = body(begin, end, closure);
  t_current_job = saved;
  if (code != 0) {
    int32_t expected = 0;
    first_code.compare_exchange_strong(expected, code);
  }
}

class ThreadPool::Impl {
 public:
  explicit Impl(int num_workers) {
    workers_.reserve(num_workers);
    for (int i = 0; i < num_workers; ++i) workers_.emplace_back([this] { WorkerLoop(); });
  }

  ~Impl() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_.store(true);
    }
    work_cv_.notify_all();
    for (std::thread& t : workers_) t.join();
  }

  // Held by the thread that owns the pool for one job (try_lock only).
  std::mutex job_mutex;

  void Run(Job* job) {
    uint64_t generation;
    {
      std::lock_guard<std::mutex> lock(mu_);
      generation = generation_.load() + 1;
      // job_ is written before the claim word that opens the job (release), so
      // whoever claims a chunk of this generation finds this job there.
      job_.store(job, std::memory_order_relaxed);
      claim_.store(ClaimWord(generation, static_cast<uint64_t>(job->num_chunks), 0), std::memory_order_release);
      generation_.store(generation, std::memory_order_release);
    }
    work_cv_.notify_all();
    ClaimChunks(generation);
    auto done = [job] { return job->completed.load(std::memory_order_acquire) == job->num_chunks; };
    if (WaitBriefly(done)) return;
    std::unique_lock<std::mutex> lock(mu_);
    done_cv_.wait(lock, done);
  }

 private:
  // The claim word: generation (32 bits) | the job's chunk count (16) | the
  // next chunk to claim (16). The count travels in the word itself, so a claim
  // is checked against the count of the job it claims from, never against a
  // count or job read separately (which, read with no order against the word,
  // could belong to the next job: a stale worker would then run a chunk of the
  // next job that is also claimed again in it).
  static constexpr int kChunkBits = 16;
  static constexpr uint64_t kChunkMask = (uint64_t{1} << kChunkBits) - 1;
  static uint64_t ClaimWord(uint64_t generation, uint64_t num_chunks, uint64_t next) {
    return generation << 32 | num_chunks << kChunkBits | next;
  }

  // Runs chunks of job `generation` until none is left to claim. A claim
  // succeeds only while the word still holds this generation and an unclaimed
  // index, and the caller waits until every claimed chunk completes, so the job
  // and its fields are alive for every chunk claimed.
  void ClaimChunks(uint64_t generation) {
    for (;;) {
      uint64_t word = claim_.load(std::memory_order_acquire);
      const uint64_t num_chunks = word >> kChunkBits & kChunkMask;
      const uint64_t index = word & kChunkMask;
      if (word >> 32 != generation || index >= num_chunks) return;
      if (!claim_.compare_exchange_weak(word, word + 1, std::memory_order_acq_rel)) continue;
      // The claim synchronized with the store that opened this generation, and
      // the next job cannot start before this chunk completes: job_ is this job.
      Job* job = job_.load(std::memory_order_relaxed);
      job->RunChunk(static_cast<int>(index));
      // The job may be gone as soon as the last chunk completes; only the pool is touched after.
      if (job->completed.fetch_add(1, std::memory_order_acq_rel) + 1 == static_cast<int>(num_chunks)) {
        std::lock_guard<std::mutex> lock(mu_);
        done_cv_.notify_one();
      }
    }
  }

  void WorkerLoop() {
    uint64_t seen = 0;
    for (;;) {
      WaitBriefly([&] { return generation_.load(std::memory_order_acquire) != seen || stop_.load(); });
      {
        std::unique_lock<std::mutex> lock(mu_);
        work_cv_.wait(lock, [&] { return stop_.load() || generation_.load() != seen; });
        if (stop_.load()) return;
        seen = generation_.load();
      }
      ClaimChunks(seen);
    }
  }

  std::mutex mu_;
  std::condition_variable work_cv_;
  std::condition_variable done_cv_;
  // Written under mu_; also read without it while spinning.
  std::atomic<uint64_t> generation_{0};
  std::atomic<bool> stop_{false};
  // See ClaimWord; generation 0 has no chunks.
  std::atomic<uint64_t> claim_{0};
  std::atomic<Job*> job_{nullptr};
  std::vector<std::thread> workers_;
};

ThreadPool& ThreadPool::Global() {
  // Function-local static: created on first use, workers joined at exit.
  static ThreadPool pool(std::max(0, KernelThreadCount() - 1));
  return pool;
}

ThreadPool::ThreadPool(int num_workers) : num_workers_(num_workers), impl_(new Impl(num_workers)) {}

ThreadPool::~ThreadPool() { delete impl_; }

int32_t ThreadPool::ParallelFor(int64_t n, StrataParallelBody body, void* closure, std::string* out_error) {
  if (n <= 0) return 0;
  // At most what the claim word counts (far above any thread count).
  int num_chunks = static_cast<int>(std::min<int64_t>({num_threads(), n, int64_t{0xffff}}));
  // Serial cases: nothing to split, a loop nested in a chunk, or the pool is busy
  // with another caller's job. Messages then go straight to set_error's normal path.
  if (num_chunks <= 1 || t_current_job != nullptr || !impl_->job_mutex.try_lock()) {
    return body(0, n, closure);
  }
  Job job;
  job.n = n;
  job.body = body;
  job.closure = closure;
  job.num_chunks = num_chunks;
  impl_->Run(&job);
  impl_->job_mutex.unlock();
  if (job.has_error) *out_error = std::move(job.error);
  return job.first_code.load();
}

bool ThreadPool::RecordErrorInCurrentJob(const char* message) {
  Job* job = t_current_job;
  if (job == nullptr) return false;
  std::lock_guard<std::mutex> lock(job->error_mutex);
  if (!job->has_error) {
    job->has_error = true;
    job->error = message ? message : "";
  }
  return true;
}

}  // namespace strata::vm
