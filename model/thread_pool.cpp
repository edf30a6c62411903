#include "model/thread_pool.h"

#include <cblas.h>

#include <chrono>

namespace kvbench {

ThreadPool::ThreadPool(int n_threads) {
  if (n_threads <= 0) n_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  n_threads_ = n_threads;
  openblas_set_num_threads(1);
  for (int i = 1; i < n_threads_; ++i) threads_.emplace_back([this, i] { worker(i); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    generation_.fetch_add(1);
  }
  wake_.notify_all();
  for (auto& t : threads_) t.join();
}

void ThreadPool::run_range(int index) {
  const int64_t begin = n_ * index / n_threads_;
  const int64_t end = n_ * (index + 1) / n_threads_;
  if (begin < end) task_(ctx_, begin, end, index);
}

void ThreadPool::run(int64_t n, Task task, void* ctx) {
  task_ = task;
  ctx_ = ctx;
  n_ = n;
  pending_.store(n_threads_ - 1);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  run_range(0);
  // Workers finish within microseconds for the small loops of decoding:
  // spin first, then yield, never sleep.
  while (pending_.load(std::memory_order_acquire) != 0) std::this_thread::yield();
}

void ThreadPool::worker(int index) {
  uint64_t seen = 0;
  for (;;) {
    // Spin briefly on the generation counter (cheap wake-up between the many
    // small parallel regions of a decode step), then block on the condvar.
    uint64_t g = generation_.load(std::memory_order_acquire);
    for (int spin = 0; g == seen && spin < 20000; ++spin) {
      std::this_thread::yield();
      g = generation_.load(std::memory_order_acquire);
    }
    if (g == seen) {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return generation_.load() != seen; });
      g = generation_.load(std::memory_order_acquire);
    }
    seen = g;
    if (stop_.load()) return;
    run_range(index);
    pending_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

}  // namespace kvbench
