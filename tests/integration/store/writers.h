// What the store's tests share: the rows a summary makes in each table, writers racing into
// one store, a writer killed mid-run (a SQLite file or a ClickHouse server, by its URL), the
// figures of whole runs (GC count, pause p99, leak counts) a store gives trend, and partial runs
// (logs cut short) replaced by their complete run.
#pragma once

#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "heapman/store/store.h"
#include "heapman/store/trend.h"
#include "summaries.h"

namespace storetest {

inline std::map<std::string, uint64_t> rowsOf(const heapman::store::RunSummary& s) {
  return {{"runs", 1},
          {"tags", s.run.tags.size()},
          {"gcs", s.gcs.size()},
          {"points", s.points.size()},
          {"sites", s.sites.size()},
          {"types", s.types.size()},
          {"churn", s.churn.size()},
          {"leaks", s.leaks.size()}};
}

// `writers` processes at once each put `each` generated summaries into `where`; then the store
// holds exactly their rows.
inline void writeAtOnce(const std::string& where, int writers, int each) {
  using heapman::store::Store;
  std::vector<pid_t> kids;
  for (int w = 0; w < writers; ++w) {
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      int rc = 0;
      try {
        auto st = Store::open(where);
        for (int i = 0; i < each; ++i)
          if (!st->put(makeSummary(w * each + i, i % 2 == 1))) rc = 3;
      } catch (const std::exception& e) {
        std::fprintf(stderr, "writer %d: %s\n", w, e.what());
        rc = 2;
      }
      _exit(rc);
    }
    kids.push_back(pid);
  }
  for (pid_t k : kids) {
    int status = 0;
    REQUIRE(waitpid(k, &status, 0) == k);
    CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
  }
  std::map<std::string, uint64_t> want;
  for (int n = 0; n < writers * each; ++n)
    for (auto [t, rows] : rowsOf(makeSummary(n, (n % each) % 2 == 1))) want[t] += rows;
  CHECK(Store::open(where)->rowCounts() == want);
}

// A writer putting summaries of ~2000 rows each into `where`, killed (SIGKILL) after `ms`
// milliseconds: the store then holds exactly the rows of the runs it finished, and at least
// one. Returns how many runs that is.
inline uint64_t killWhileWriting(const std::string& where, int ms) {
  using heapman::store::Store;
  Store::open(where);  // the schema, before the writer starts
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    auto st = Store::open(where);
    for (int n = 0;; ++n) st->put(makeSummary(n, n % 2 == 1, 10, 200));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  kill(pid, SIGKILL);
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFSIGNALED(status));
  auto st = Store::open(where);
  uint64_t runs = st->rowCounts()["runs"];
  INFO(runs << " runs written before the kill");
  CHECK(runs > 0);
  std::map<std::string, uint64_t> want;
  for (uint64_t n = 0; n < runs; ++n)
    for (auto [t, rows] : rowsOf(makeSummary(static_cast<int>(n), n % 2 == 1, 10, 200)))
      want[t] += rows;
  CHECK(st->rowCounts() == want);
  return runs;
}

// Builds 1-30 (a leak from 17, every third with one more GC of 9 ms and a leak suspect): the
// store's figures of whole runs are the summaries' own (figureOf), in build order, and the
// growing sites step at 17; build 31, of 2 levels, has no leak figures (the leak finder needs 3).
inline void checkRunFigures(heapman::store::Store& st) {
  using namespace heapman::store;
  auto summary = [](int b) {
    RunSummary s = makeSummary(b, b >= 17);
    if (b % 3 == 0) {
      s.gcs.push_back({4, 40'000'000, 9'000'000, 1'000'000, 900'000, 800'000, 100'000});
      s.run.gcCount = 4;
      s.leaks.push_back({"suspect", "std::vector<Entity*> at 0x1000", 64, "grows"});
    }
    return s;
  };
  for (int b = 30; b >= 1; --b) REQUIRE(st.put(summary(b)));
  // A run whose event repeats twice: the leak finder did not run, no leak figure (not 0).
  RunSummary twice = makeSummary(31, true, 2);
  REQUIRE(st.put(twice));
  for (FigureKind k : {FigureKind::kGcCount, FigureKind::kGcPauseP99, FigureKind::kLeakSuspects,
                       FigureKind::kGrowingSites}) {
    INFO("figure kind " << static_cast<int>(k));
    FigureQuery q;
    q.kind = k;
    q.point = "level_end#9";  // not used by these kinds
    TrendResult t = trend(st, "build", q);
    bool leak = k == FigureKind::kLeakSuspects || k == FigureKind::kGrowingSites;
    uint64_t v = 0;
    CHECK(figureOf(twice, q, &v) == !leak);
    REQUIRE(t.rows.size() == (leak ? 30u : 31u));
    if (leak) {
      REQUIRE(t.warnings.size() == 1);
      CHECK(t.warnings[0] ==
            "1 run(s) without leak figures (no custom event repeats 3 times) left out");
    } else {
      CHECK(t.warnings.empty());
    }
    for (int b = 1; b <= 30; ++b) {
      uint64_t want = 0;
      REQUIRE(figureOf(summary(b), q, &want));
      CHECK(t.rows[b - 1].tag == std::to_string(b));
      CHECK(t.rows[b - 1].value == want);
    }
    if (k == FigureKind::kGrowingSites) {
      REQUIRE(t.step.found);
      CHECK(t.rows[t.step.at].tag == "17");
    }
  }
  // The figures themselves: 3 pauses of 0.5, 1, 1.5 ms (p99 by nearest rank: the third), 4
  // with the 9 ms one.
  FigureQuery q;
  q.kind = FigureKind::kGcPauseP99;
  TrendResult t = trend(st, "build", q);
  CHECK(t.rows[0].value == 1'500'000);
  CHECK(t.rows[2].value == 9'000'000);
  q.kind = FigureKind::kGcCount;
  t = trend(st, "build", q);
  CHECK(t.rows[0].value == 3);
  CHECK(t.rows[2].value == 4);
  q.kind = FigureKind::kLeakSuspects;
  t = trend(st, "build", q);
  CHECK(t.rows[0].value == 0);
  CHECK(t.rows[2].value == 1);
  q.kind = FigureKind::kGrowingSites;
  t = trend(st, "build", q);
  CHECK(t.rows[15].value == 1);
  CHECK(t.rows[16].value == 2);
}

// Partial runs (ID.pN, logs cut short) of a recording sit beside each other until its complete
// run comes, which replaces them; after it, a partial one is not written. Another recording's
// runs are untouched.
inline void checkPartialRuns(heapman::store::Store& st) {
  using namespace heapman::store;
  RunSummary other = makeSummary(2, false), whole = makeSummary(17, true);
  RunSummary cut = makeSummary(17, false, 2), cut2 = makeSummary(17, false, 3);
  cut.run.logId = whole.run.logId + ".p1200";
  cut2.run.logId = whole.run.logId + ".p1800";
  CHECK(partialOf(cut.run.logId) == whole.run.logId);
  CHECK(partialOf(whole.run.logId).empty());
  auto ids = [&] {
    std::vector<std::string> v;
    for (const StoredRun& r : st.runs()) v.push_back(r.logId);
    std::sort(v.begin(), v.end());
    return v;
  };
  auto rows = [](std::initializer_list<const RunSummary*> runs) {
    std::map<std::string, uint64_t> want;
    for (const RunSummary* r : runs)
      for (auto [t, n] : rowsOf(*r)) want[t] += n;
    return want;
  };
  REQUIRE(st.put(other));
  REQUIRE(st.put(cut));
  CHECK_FALSE(st.put(cut));  // the same cut-short copy once
  REQUIRE(st.put(cut2));     // cut later: a run of its own, until the complete one comes
  CHECK(ids() == std::vector<std::string>{other.run.logId, cut.run.logId, cut2.run.logId});
  CHECK(st.rowCounts() == rows({&other, &cut, &cut2}));
  FigureQuery q;
  q.point = "level_end#2";
  CHECK(trend(st, "build", q).rows.size() == 3);
  REQUIRE(st.put(whole));
  CHECK(ids() == std::vector<std::string>{other.run.logId, whole.run.logId});
  CHECK(st.rowCounts() == rows({&other, &whole}));
  TrendResult t = trend(st, "build", q);
  REQUIRE(t.rows.size() == 2);
  CHECK(t.rows[1].logId == whole.run.logId);
  CHECK(t.rows[1].value == 600'000 + 10'240 + 704);
  RunSummary late = cut;
  late.run.logId = whole.run.logId + ".p2400";
  CHECK_FALSE(st.put(late));  // the complete run is there
  CHECK_FALSE(st.has(late.run.logId));
  CHECK(st.load({"build", "17"})->run.logId == whole.run.logId);
}

}  // namespace storetest
