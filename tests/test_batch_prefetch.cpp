// The prefetcher that draws the next batch on a worker thread: every item is make(index) whichever
// way it is made, in order or not; failures reach the taker of that index only; no item is made
// at or past the limit; the worker's OpenMP thread count is the caller's; and the PATHBENCH_PREFETCH
// modes.
#include <catch2/catch.hpp>

#include <mutex>
#include <omp.h>
#include <set>
#include <stdexcept>
#include <string>

#include "core/error.h"
#include "experiments/batch_prefetch.h"

using namespace pathbench;

namespace {

// make(i) = "item i", recording every index made; index 3 fails.
struct Recorder {
  std::mutex mutex;
  std::multiset<int64_t> made;
  std::string operator()(int64_t i) {
    {
      const std::lock_guard<std::mutex> lock(mutex);
      made.insert(i);
    }
    if (i == 3) throw std::runtime_error("no item 3");
    return "item " + std::to_string(i);
  }
};

}  // namespace

TEST_CASE("the prefetcher returns make(index) in order and out of order, with or without a worker", "[prefetch]") {
  for (bool worker : {false, true}) {
    INFO("worker " << worker);
    Recorder r;
    {
      Prefetcher<std::string> p([&](int64_t i) { return r(i); }, 6, worker);
      CHECK(p.take(0) == "item 0");
      CHECK(p.take(1) == "item 1");
      CHECK(p.take(5) == "item 5");  // out of order: made in line, item 2 (made ahead) dropped
      CHECK(p.take(4) == "item 4");
      CHECK(p.take(4) == "item 4");  // again: made again
      CHECK_THROWS_WITH(p.take(3), "no item 3");
    }
    // Without a worker only what was taken is made. With one, each take also asks for the next index
    // below the limit (never 6): 1 and 2 ahead of 0 and 1; 5 in line, its next not asked for; 4 in
    // line twice, each time with 5 ahead (dropped); 3 in line, failing, with nothing ahead.
    if (!worker)
      CHECK(r.made == std::multiset<int64_t>{0, 1, 3, 4, 4, 5});
    else
      CHECK(r.made == std::multiset<int64_t>{0, 1, 2, 3, 4, 4, 5, 5, 5});
  }
}

TEST_CASE("a failure made ahead reaches only the taker of its index", "[prefetch]") {
  Recorder r;
  Prefetcher<std::string> p([&](int64_t i) { return r(i); }, 10, true);
  CHECK(p.take(2) == "item 2");     // makes item 3 ahead, which fails
  CHECK(p.take(7) == "item 7");     // a different index: the failure is dropped
  CHECK(p.take(2) == "item 2");     // item 3 made ahead again
  CHECK_THROWS_WITH(p.take(3), "no item 3");
  CHECK(p.take(4) == "item 4");     // and the prefetcher goes on
  // The taker of 3 got the failure made ahead, not a second attempt in line: 3 was made twice.
  const std::lock_guard<std::mutex> lock(r.mutex);
  CHECK(r.made.count(3) == 2);
}

TEST_CASE("the worker's OpenMP regions use the caller's thread count", "[prefetch]") {
  const int before = omp_get_max_threads();
  for (int threads : {1, 3}) {
    omp_set_num_threads(threads);
    Prefetcher<int> p([](int64_t) { return omp_get_max_threads(); }, 3, true);
    p.take(0);                      // made here
    CHECK(p.take(1) == threads);    // made on the worker
  }
  omp_set_num_threads(before);
}

TEST_CASE("PATHBENCH_PREFETCH: auto draws ahead on GPU runs only, on, off, anything else is an error", "[prefetch]") {
  CHECK(parse_prefetch_mode(nullptr) == PrefetchMode::automatic);
  CHECK(parse_prefetch_mode("") == PrefetchMode::automatic);
  CHECK(parse_prefetch_mode("auto") == PrefetchMode::automatic);
  CHECK(parse_prefetch_mode("on") == PrefetchMode::on);
  CHECK(parse_prefetch_mode("off") == PrefetchMode::off);
  CHECK_THROWS_WITH(parse_prefetch_mode("yes"), Catch::Contains("PATHBENCH_PREFETCH has value 'yes'"));
  CHECK(prefetch_enabled(PrefetchMode::automatic, "cuda"));
  CHECK_FALSE(prefetch_enabled(PrefetchMode::automatic, "cpu"));
  CHECK(prefetch_enabled(PrefetchMode::on, "cpu"));
  CHECK_FALSE(prefetch_enabled(PrefetchMode::off, "cuda"));
}
