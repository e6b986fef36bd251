// Without the recorder: the test programs run directly behave as they do under heaprec, and the
// heapman.h calls do nothing (no heap use, negligible cost).
#include <algorithm>

#include "recorder_support.h"

namespace {

using namespace hmrec;

// The lines of `out` whose first field is `kind`, with fields at `drop` positions removed
// (addresses and thread ids change from run to run).
std::vector<std::string> linesOf(const std::string& out, const std::string& kind,
                                 std::vector<size_t> drop = {}) {
  std::vector<std::string> kept;
  for (const std::string& l : lines(out)) {
    std::vector<std::string> f = fields(l);
    if (f.empty() || f[0] != kind) continue;
    std::string s;
    for (size_t i = 0; i < f.size(); ++i)
      if (std::find(drop.begin(), drop.end(), i) == drop.end()) s += f[i] + " ";
    kept.push_back(s);
  }
  return kept;
}

}  // namespace

TEST_CASE("without the recorder: heapman.h calls are no-ops", "[recorder][plain]") {
  TempDir dir;
  RunResult r = run(dir, "noop", {HMREC_PROG_EVENTS, "noop"});
  INFO(r.out << r.err);
  CHECK(r.status == 0);
  CHECK(r.out == "noop ok\n");
  CHECK(r.err.empty());
}

TEST_CASE("without the recorder: the programs behave as under heaprec", "[recorder][plain]") {
  TempDir dir;

  SECTION("rec_events: the same output, byte for byte") {
    RunResult plain = run(dir, "events", {HMREC_PROG_EVENTS});
    REQUIRE(plain.status == 0);
    CHECK(plain.err.empty());
    Recording rec = record(dir, "events-rec", {HMREC_PROG_EVENTS});
    requireRecorded(rec);
    CHECK(plain.out == rec.result.out);
  }

  SECTION("rec_allocs: the same operations (addresses aside) and totals") {
    RunResult plain = run(dir, "allocs", {HMREC_PROG_ALLOCS, "300"});
    REQUIRE(plain.status == 0);
    CHECK(plain.err.empty());
    Recording rec = record(dir, "allocs-rec", {HMREC_PROG_ALLOCS, "300"});
    requireRecorded(rec);
    // Sizes and alignments. Not addresses, nor usable sizes: glibc's usable size depends on the
    // heap's state (memalign leaves an unsplittable tail in the block, for one), and any
    // preloaded library changes that state. The log's usable sizes are checked against
    // malloc_usable_size within the recorded run (allocs_test.cpp).
    CHECK(linesOf(plain.out, "alloc", {1, 3}) == linesOf(rec.result.out, "alloc", {1, 3}));
    CHECK(linesOf(plain.out, "realloc", {1, 2}) == linesOf(rec.result.out, "realloc", {1, 2}));
    CHECK(linesOf(plain.out, "free", {1}).size() == linesOf(rec.result.out, "free", {1}).size());
    CHECK(linesOf(plain.out, "totals") == linesOf(rec.result.out, "totals"));
    CHECK(linesOf(plain.out, "totals").size() == 1);
  }

  SECTION("rec_threads: the same per-worker pairs and bytes") {
    RunResult plain = run(dir, "threads", {HMREC_PROG_THREADS, "8", "100000"});
    REQUIRE(plain.status == 0);
    CHECK(plain.err.empty());
    Recording rec = record(dir, "threads-rec", {HMREC_PROG_THREADS, "8", "100000"});
    requireRecorded(rec);
    std::vector<std::string> workers = linesOf(plain.out, "worker", {3});  // tid varies
    CHECK(workers.size() == 8);
    CHECK(workers == linesOf(rec.result.out, "worker", {3}));
  }

  SECTION("rec_backtrace: runs and reports its functions") {
    RunResult plain = run(dir, "backtrace", {HMREC_PROG_BACKTRACE});
    REQUIRE(plain.status == 0);
    CHECK(plain.err.empty());
    CHECK(linesOf(plain.out, "fn").size() == 4);
    CHECK(linesOf(plain.out, "chain").size() == 3);
  }
}
