// A fixed pool of worker threads for data-parallel loops. Work is split into
// contiguous static ranges, one per thread, so every output element is always
// computed by the same code path in the same order: results are bit-identical
// across runs for a given thread count. The calling thread takes range 0.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace kvbench {

class ThreadPool {
 public:
  // n_threads <= 0: one per hardware thread. Also pins OpenBLAS to one thread
  // per caller so that it never oversubscribes the cores with its own pool.
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }

  // Calls fn(begin, end, thread) over a static partition of [0, n) into
  // size() contiguous ranges (empty ranges are skipped). Blocks until done.
  template <class Fn>
  void parallel_for(int64_t n, Fn&& fn) {
    if (n <= 0) return;
    if (n_threads_ == 1 || n == 1) {
      fn(int64_t{0}, n, 0);
      return;
    }
    auto call = [](void* ctx, int64_t b, int64_t e, int t) { (*static_cast<Fn*>(ctx))(b, e, t); };
    run(n, call, &fn);
  }

 private:
  using Task = void (*)(void*, int64_t, int64_t, int);
  void run(int64_t n, Task task, void* ctx);
  void worker(int index);
  void run_range(int index);

  int n_threads_;
  std::vector<std::thread> threads_;
  // The current job; published by bumping generation_.
  Task task_ = nullptr;
  void* ctx_ = nullptr;
  int64_t n_ = 0;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::condition_variable wake_;
};

}  // namespace kvbench
