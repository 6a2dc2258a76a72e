// Drawing the next batch while the device works on the current one. A training step on the GPU
// waits for its kernels; the next step's examples (a pure function of seed and step) can be drawn
// meanwhile on a worker thread, and so can an evaluation's next batch while the model predicts the
// current one. The batches are the same as drawn in line, so results do not change.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <omp.h>
#include <optional>
#include <string>
#include <thread>

namespace pathbench {

// When runs draw ahead: `automatic` on GPU runs only (a CPU step's threads would compete with the
// drawing threads for the same cores), or always / never. From PATHBENCH_PREFETCH: unset or "auto",
// "on", "off"; anything else is an Error naming the variable.
enum class PrefetchMode { automatic, on, off };
PrefetchMode parse_prefetch_mode(const char* value);
bool prefetch_enabled(PrefetchMode mode, const std::string& device);

// Items make(0), make(1), …, make(limit − 1), one at a time: take(i) returns make(i) and, with a
// worker, starts make(i + 1) on it before returning. Taking indices in order gets every item but
// the first from the worker; another index is made in line (a prefetched item not taken is
// dropped). An exception of make reaches the caller of take for that index only. The worker's
// OpenMP regions use as many threads as the constructing thread's (a new thread would otherwise
// start from OpenMP's default, every core, whatever the run's `threads`).
template <typename Item>
class Prefetcher {
 public:
  Prefetcher(std::function<Item(int64_t)> make, int64_t limit, bool worker) : make_(std::move(make)), limit_(limit) {
    if (worker)
      thread_ = std::thread([this, threads = omp_get_max_threads()] {
        omp_set_num_threads(threads);
        work();
      });
  }
  ~Prefetcher() {
    if (!thread_.joinable()) return;
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  Prefetcher(const Prefetcher&) = delete;
  Prefetcher& operator=(const Prefetcher&) = delete;

  Item take(int64_t index) {
    std::optional<Item> item;
    std::exception_ptr failure;
    if (thread_.joinable()) {
      std::unique_lock<std::mutex> lock(mutex_);
      done_.wait(lock, [this] { return !requested_; });  // the worker is idle: its result is final
      if (ready_index_ == index) {
        item = std::move(ready_);
        failure = ready_failure_;
      }
      ready_.reset();
      ready_failure_ = nullptr;
      ready_index_ = -1;
    }
    if (failure) std::rethrow_exception(failure);
    if (!item) item = make_(index);
    if (thread_.joinable() && index + 1 < limit_) {
      {
        const std::lock_guard<std::mutex> lock(mutex_);
        requested_ = true;
        request_ = index + 1;
      }
      wake_.notify_all();
    }
    return std::move(*item);
  }

 private:
  void work() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (true) {
      wake_.wait(lock, [this] { return stop_ || requested_; });
      if (stop_) return;  // an item not yet started is not needed any more
      const int64_t index = request_;
      lock.unlock();
      std::optional<Item> item;
      std::exception_ptr failure;
      try {
        item = make_(index);
      } catch (...) {
        failure = std::current_exception();
      }
      lock.lock();
      ready_ = std::move(item);
      ready_failure_ = failure;
      ready_index_ = index;
      requested_ = false;
      done_.notify_all();
    }
  }

  std::function<Item(int64_t)> make_;
  int64_t limit_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  bool stop_ = false, requested_ = false;  // requested_: the worker owes the item of request_
  int64_t request_ = -1, ready_index_ = -1;
  std::optional<Item> ready_;
  std::exception_ptr ready_failure_;
  std::thread thread_;
};

}  // namespace pathbench
