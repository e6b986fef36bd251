// The SQLite store: a run written and read back equal, a log id stored once, exact row counts
// with 8 writers at once, refusals (not a store, a newer schema), and trend's figure and step.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include <filesystem>
#include <fstream>

#include "heapman/store/store.h"
#include "heapman/store/trend.h"
#include "summaries.h"
#include "writers.h"
#include "support/shell.h"

using namespace heapman::store;
using storetest::makeSummary;
using storetest::rowsOf;

namespace {

struct TempDir {
  std::string path = hmtest::makeTempDir("store");
  ~TempDir() { hmtest::removeTempDir(path); }
};

// The rows one summary adds to each table.
}  // namespace

TEST_CASE("a run is written once and read back equal") {
  TempDir d;
  auto st = Store::open(d.path + "/runs.sqlite");
  RunSummary s = makeSummary(17, true);
  REQUIRE(st->put(s));
  REQUIRE_FALSE(st->put(s));  // the same log id
  REQUIRE(st->has(s.run.logId));
  CHECK(st->rowCounts() == rowsOf(s));
  std::optional<RunSummary> back = st->load({"build", "17"});
  REQUIRE(back);
  CHECK(*back == s);
  CHECK_FALSE(st->load({"build", "18"}));
  // Reopened: the same rows.
  st.reset();
  CHECK(Store::open(d.path + "/runs.sqlite")->rowCounts() == rowsOf(s));
}

TEST_CASE("8 writers at once lose nothing") {
  TempDir d;
  storetest::writeAtOnce(d.path + "/runs.sqlite", 8, 25);  // 8 openers of a new file: the schema made once
}

TEST_CASE("an ingest killed in the middle leaves whole runs only") {
  TempDir d;
  storetest::killWhileWriting(d.path + "/runs.sqlite", 400);
}

TEST_CASE("a file that is not a store is refused, untouched") {
  TempDir d;
  std::string text = d.path + "/notes.txt";
  std::ofstream(text) << "these are not the runs you are looking for\n";
  REQUIRE_THROWS_WITH(Store::open(text), Catch::Contains("is not a heapman store"));
  std::ifstream in(text);
  std::string line;
  std::getline(in, line);
  CHECK(line == "these are not the runs you are looking for");

  std::string other = d.path + "/other.sqlite";
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(other.c_str(), &db) == SQLITE_OK);
  REQUIRE(sqlite3_exec(db, "CREATE TABLE t(x)", nullptr, nullptr, nullptr) == SQLITE_OK);
  sqlite3_close(db);
  REQUIRE_THROWS_WITH(Store::open(other), Catch::Contains("not a heapman store"));
}

TEST_CASE("a store of a newer schema is refused") {
  TempDir d;
  std::string path = d.path + "/runs.sqlite";
  Store::open(path)->put(makeSummary(1, false));
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  REQUIRE(sqlite3_exec(db, "UPDATE meta SET value = '2' WHERE key = 'schema_version'", nullptr,
                       nullptr, nullptr) == SQLITE_OK);
  sqlite3_close(db);
  REQUIRE_THROWS_WITH(Store::open(path),
                      Catch::Contains("schema version 2, newer than this heapman's (1)"));
}

TEST_CASE("the step: the least-squares split, against the noise") {
  // A noisy level of 1000 that steps to 1200 at index 16.
  std::vector<double> v;
  for (int i = 0; i < 30; ++i) v.push_back((i < 16 ? 1000 : 1200) + (i % 3) * 10 - 10);
  Step s = findStep(v);
  CHECK(s.found);
  CHECK(s.at == 16);
  CHECK(s.after - s.before == Approx(200).epsilon(0.01));
  // The maximum is not the step: a spike at 5 among a step at 20.
  v.assign(30, 500);
  for (int i = 20; i < 30; ++i) v[i] = 700;
  v[5] = 900;
  s = findStep(v);
  CHECK(s.found);
  CHECK(s.at == 20);
  // Noise alone, a step down, and too few bytes to count: no step.
  std::vector<double> noise;
  for (int i = 0; i < 30; ++i) noise.push_back(1000 + ((i * 7) % 5) * 20);
  CHECK_FALSE(findStep(noise).found);
  std::vector<double> down(30, 1000);
  for (int i = 15; i < 30; ++i) down[i] = 800;
  CHECK_FALSE(findStep(down).found);
  std::vector<double> tiny(30, 1'000'000);
  for (int i = 15; i < 30; ++i) tiny[i] = 1'000'008;
  CHECK_FALSE(findStep(tiny).found);
}

TEST_CASE("a log cut short is a partial run, replaced by its complete log") {
  TempDir d;
  auto st = Store::open(d.path + "/runs.sqlite");
  storetest::checkPartialRuns(*st);
}

TEST_CASE("trend: the figures of whole runs (GC count, pause p99, leak counts)") {
  TempDir d;
  auto st = Store::open(d.path + "/runs.sqlite");
  storetest::checkRunFigures(*st);
}

TEST_CASE("trend: a site's bytes across builds, in the tag's numeric order, and its step") {
  TempDir d;
  auto st = Store::open(d.path + "/runs.sqlite");
  // Ingested out of order; builds 17-30 leak.
  for (int b : {30, 2, 9, 17, 1, 25, 3, 4, 5, 6, 7, 8, 10, 11, 12, 13, 14, 15, 16, 18, 19, 20, 21,
                22, 23, 24, 26, 27, 28, 29})
    REQUIRE(st->put(makeSummary(b, b >= 17)));
  FigureQuery q;
  q.point = "level_end#3";
  q.siteRegex = "^recordInput";
  TrendResult t = trend(*st, "build", q);
  REQUIRE(t.rows.size() == 30);
  for (size_t i = 0; i < 30; ++i) {
    CHECK(t.rows[i].tag == std::to_string(i + 1));
    CHECK(t.rows[i].value == (i + 1 >= 17 ? 15360u : 0u));
  }
  REQUIRE(t.step.found);
  CHECK(t.rows[t.step.at].tag == "17");
  CHECK(t.step.after - t.step.before == Approx(15360));
  // The chart: no bar before build 17, a full one in the step's colour from it on.
  heapman::map::Image img = trendChart(t, "recordInput by build");
  REQUIRE(img.width == kChartWidth);
  REQUIRE(img.height == kChartHeight);
  auto middle = [](size_t i) { return 80 + static_cast<int>((700.0 / 30) * (double(i) + 0.5)); };
  for (size_t i = 0; i < 30; ++i) {
    INFO("build " << i + 1);
    CHECK(img.at(middle(i), 300) == (i + 1 >= 17 ? kChartAfter : 0xffffffu));
    CHECK(img.at(middle(i), 60) == (i + 1 >= 17 ? kChartAfter : 0xffffffu));
  }
  // The same figure from a summary as from the store.
  uint64_t v = 0;
  REQUIRE(figureOf(makeSummary(20, true), q, &v));
  CHECK(v == 15360);
  // Live bytes of one heap at a point; a point no run has.
  q = {};
  q.point = "level_end#2";
  q.heap = "native";
  t = trend(*st, "build", q);
  REQUIRE(t.rows.size() == 30);
  CHECK(t.rows[0].value == 704);
  CHECK_FALSE(t.step.found);
  // Tags that are not numbers (commit hashes): the runs in the order they started.
  TempDir d2;
  auto byTime = Store::open(d2.path + "/runs.sqlite");
  for (int n : {3, 1, 2}) {
    RunSummary s = makeSummary(n, false);
    s.run.tags = {{"commit", n == 1 ? "f00d" : n == 2 ? "beef" : "0ace"}};
    REQUIRE(byTime->put(s));
  }
  TrendResult c = trend(*byTime, "commit", {});
  REQUIRE(c.rows.size() == 3);
  CHECK(c.rows[0].tag == "f00d");
  CHECK(c.rows[1].tag == "beef");
  CHECK(c.rows[2].tag == "0ace");
  q.point = "level_end#9";
  t = trend(*st, "build", q);
  CHECK(t.rows.empty());
  REQUIRE(t.warnings.size() == 1);
  CHECK(t.warnings[0] == "30 run(s) without the point level_end#9 left out");
}
