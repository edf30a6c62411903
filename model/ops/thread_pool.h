// A fixed pool of worker threads for data-parallel loops. Work is split into
// size() contiguous static ranges, always the same for a given n, so every
// output element is computed by the same code path in the same order: results
// are bit-identical across runs for a given thread count.
//
// Which thread runs a range is not fixed: the caller and the workers claim the
// ranges of a job from one counter. On a quiet machine each thread takes one
// range; when a worker is descheduled (another process holds the core) the
// others take its range instead of waiting for it.
//
// A decode step opens ~150 parallel regions of a few microseconds each, so
// wake-up latency matters: idle workers spin on the job counter (with the
// CPU's pause hint) for a while before they block in the kernel, and the
// caller wakes sleepers with a futex only when some worker actually sleeps.
#pragma once

#include <atomic>
#include <cstdint>
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

  // Calls fn(begin, end, range) for each non-empty range of the static
  // partition of [0, n) into size() contiguous ranges: range i is
  // [n*i/size(), n*(i+1)/size()). Ranges run concurrently, each exactly once,
  // so per-range scratch indexed by `range` is safe. Blocks until all are done.
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
  void worker();
  // Claims and runs ranges of job `job` until none is left.
  void work(uint32_t job);
  void run_range(int index);

  int n_threads_;
  std::vector<std::thread> threads_;
  // The current job. Written by the caller before it publishes the job in
  // claim_ (release); read by whoever claims a range of it (acquire).
  Task task_ = nullptr;
  void* ctx_ = nullptr;
  int64_t n_ = 0;
  uint32_t last_job_ = 0;
  // (job << 32) | next range to claim.
  alignas(64) std::atomic<uint64_t> claim_{0};
  alignas(64) std::atomic<int> done_{0};      // ranges finished in the current job
  alignas(64) std::atomic<uint32_t> job_{0};  // workers wait for this to change
  alignas(64) std::atomic<int> sleepers_{0};  // workers blocked in job_.wait
  std::atomic<bool> stop_{false};
};

}  // namespace kvbench
