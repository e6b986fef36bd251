// Writes generated run summaries to a store (bench/run_store_bench.sh runs 8 at once), or says
// how many rows the store has and how many N summaries should give.
//
//   store_bench put STORE FIRST COUNT   summaries FIRST .. FIRST+COUNT-1 (a leak from 500 on)
//   store_bench expect COUNT            the rows per table that summaries 0 .. COUNT-1 make
//   store_bench counts STORE            the rows per table the store has
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "heapman/store/store.h"
#include "store/summaries.h"

namespace {

constexpr int kLevels = 10, kExtraSites = 40;  // ~460 rows a run, as a 10-level game's

heapman::store::RunSummary summary(int n) {
  return storetest::makeSummary(n, n >= 500, kLevels, kExtraSites);
}

void print(const std::map<std::string, uint64_t>& counts) {
  for (const auto& [table, rows] : counts) std::printf("%s %llu\n", table.c_str(),
                                                      static_cast<unsigned long long>(rows));
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  try {
    if (mode == "put" && argc == 5) {
      int first = std::atoi(argv[3]), count = std::atoi(argv[4]);
      auto st = heapman::store::Store::open(argv[2]);
      auto t0 = std::chrono::steady_clock::now();
      for (int n = first; n < first + count; ++n)
        if (!st->put(summary(n))) {
          std::fprintf(stderr, "store_bench: run %d was already stored\n", n);
          return 1;
        }
      std::printf("%.3f\n", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
                                .count());
      return 0;
    }
    if (mode == "expect" && argc == 3) {
      std::map<std::string, uint64_t> want;
      for (int n = 0; n < std::atoi(argv[2]); ++n) {
        heapman::store::RunSummary s = summary(n);
        want["runs"] += 1, want["tags"] += s.run.tags.size(), want["gcs"] += s.gcs.size();
        want["points"] += s.points.size(), want["sites"] += s.sites.size();
        want["types"] += s.types.size(), want["churn"] += s.churn.size();
        want["leaks"] += s.leaks.size();
      }
      print(want);
      return 0;
    }
    if (mode == "counts" && argc == 3) {
      print(heapman::store::Store::open(argv[2])->rowCounts());
      return 0;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "store_bench: %s\n", e.what());
    return 1;
  }
  std::fprintf(stderr, "usage: store_bench put STORE FIRST COUNT | expect COUNT | counts STORE\n");
  return 2;
}
