#include "model/ops/thread_pool.h"

#include <cblas.h>

#include <algorithm>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace kvbench {
namespace {

// Tells the core we are spinning (frees resources for a sibling hyper-thread,
// saves power); a no-op elsewhere.
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

// Pause iterations an idle worker spins before it blocks: a few hundred
// microseconds, far longer than the gap between two parallel regions of a
// forward step, short enough not to burn a core between user commands.
constexpr int kSpinsBeforeSleep = 1 << 14;
// The caller waits only for ranges that a worker is running already: spin,
// and yield only if that worker was descheduled (an oversubscribed machine).
constexpr int kSpinsBeforeYield = 1 << 12;

constexpr uint64_t kRangeMask = 0xffffffffu;

}  // namespace

ThreadPool::ThreadPool(int n_threads) {
  if (n_threads <= 0)
    n_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  n_threads_ = n_threads;
  openblas_set_num_threads(1);
  for (int i = 1; i < n_threads_; ++i) threads_.emplace_back([this] { worker(); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true);
  job_.fetch_add(1);
  job_.notify_all();
  for (auto& t : threads_) t.join();
}

void ThreadPool::run_range(int index) {
  const int64_t begin = n_ * index / n_threads_;
  const int64_t end = n_ * (index + 1) / n_threads_;
  if (begin < end) task_(ctx_, begin, end, index);
}

void ThreadPool::work(uint32_t job) {
  uint64_t v = claim_.load(std::memory_order_acquire);
  for (;;) {
    if (static_cast<uint32_t>(v >> 32) != job) return;
    const auto index = static_cast<int>(v & kRangeMask);
    if (index >= n_threads_) return;
    if (!claim_.compare_exchange_weak(v, v + 1, std::memory_order_acq_rel)) continue;  // v reloaded
    run_range(index);
    done_.fetch_add(1, std::memory_order_release);
    v = claim_.load(std::memory_order_acquire);
  }
}

void ThreadPool::run(int64_t n, Task task, void* ctx) {
  task_ = task;
  ctx_ = ctx;
  n_ = n;
  done_.store(0, std::memory_order_relaxed);
  const uint32_t job = ++last_job_;
  claim_.store(static_cast<uint64_t>(job) << 32, std::memory_order_release);
  // seq_cst on both sides (here: publish, then read sleepers_; worker: count
  // itself in sleepers_, then re-check job_ inside wait) means a worker either
  // sees the new job or is seen as a sleeper and woken.
  job_.store(job);
  if (sleepers_.load() > 0) job_.notify_all();
  work(job);
  for (int spin = 0; done_.load(std::memory_order_acquire) < n_threads_; ++spin) {
    if (spin < kSpinsBeforeYield) {
      cpu_relax();
    } else {
      std::this_thread::yield();
    }
  }
}

void ThreadPool::worker() {
  uint32_t seen = 0;
  for (;;) {
    uint32_t j = job_.load(std::memory_order_acquire);
    for (int spin = 0; j == seen && spin < kSpinsBeforeSleep; ++spin) {
      cpu_relax();
      j = job_.load(std::memory_order_acquire);
    }
    while (j == seen) {
      sleepers_.fetch_add(1);
      job_.wait(seen);  // returns at once if job_ moved on
      sleepers_.fetch_sub(1);
      j = job_.load(std::memory_order_acquire);
    }
    seen = j;
    if (stop_.load()) return;
    work(j);
  }
}

}  // namespace kvbench
