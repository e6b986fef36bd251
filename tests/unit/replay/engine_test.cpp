// The replay engine: exact state on a hand-written log, points and their errors, and the
// properties (seek P then P' == seek P'; checkpointed seek == full replay at every GC; the state
// equals an independent map replay).
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <filesystem>
#include <random>
#include <set>
#include <unordered_map>

#include "heapman/replay/queries.h"
#include "test_log.h"

using namespace rtest;
using namespace heapman::replay;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() /
           ("replay-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter()++));
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  static int& counter() {
    static int c = 0;
    return c;
  }
};

// With an index file next to the log, silent.
ReplayOptions indexed(uint64_t interval) {
  ReplayOptions o;
  o.checkpointEvents = interval;
  o.indexShare = 0;  // checkpoints every interval: these small logs exercise many of them
  o.notes = nullptr;
  return o;
}

ReplayOptions quiet(uint64_t interval = 300) {
  ReplayOptions o = indexed(interval);
  o.useIndex = false;
  return o;
}

// A small log whose state is known by hand.
std::vector<uint8_t> handLog() {
  LogBuilder b;
  b.put(LogString{1, "level_start"});
  b.put(TypeDef{7, "Enemy", 32, 0});
  b.put(StackNode{1, 0, 0x1000, false});
  b.put(StackNode{2, 1, 0x2000, false});
  b.put(Alloc{b.next(), HeapKind::kNative, 0xA0, 10, 16, 2, 0});        // seq 0
  b.put(Alloc{b.next(), HeapKind::kGcNormal, 0xB0, 32, 32, 1, 7});      // seq 1
  b.put(Alloc{b.next(), HeapKind::kGcNormal, 0xC0, 32, 32, 1, 7});      // seq 2
  b.put(CustomEvent{b.next(), 1, {}});                                   // seq 3
  b.put(Free{b.next(), HeapKind::kNative, 0xEE});                        // seq 4: unknown
  b.put(GcBegin{b.next(), 1, 1000, -1});                                 // seq 5
  b.put(Collected{1, {0xB0, 0xF0}});                                     // 0xF0 never lived
  b.put(GcEnd{b.next(), 1, 968, 32, 777});                               // seq 6
  b.put(Realloc{b.next(), HeapKind::kNative, 0xA0, 0xD0, 20, 24, 2, 0}); // seq 7
  b.put(Alloc{b.next(1), HeapKind::kNative, 0xD0, 5, 8, 1, 0});          // seq 8: replaces 0xD0
  b.put(FrameMark{b.next(), 1});                                         // seq 9
  b.put(Lost{b.next(), 4, 0, "ring full"});                             // seq 10
  b.put(CustomEvent{b.next(), 1, {}});                                   // seq 11
  return b.finish();
}

}  // namespace

TEST_CASE("hand-written log: exact state at each point", "[replay]") {
  Replay r(LogReader::fromBytes(handLog(), "hand.hml"), quiet());
  const LogTables& t = r.tables();
  CHECK(t.firstSeq == 0);
  CHECK(t.endSeq == 12);
  CHECK(t.eventCount == 12);
  REQUIRE(t.gcs.size() == 1);
  CHECK(t.gcs[0].collectedObjects == 1);
  CHECK(t.gcs[0].collectedBytes == 32);
  CHECK(t.gcs[0].unknownCollected == 1);
  CHECK(t.gcs[0].liveObjects == 2);
  CHECK(t.gcs[0].liveBytes == 42);
  CHECK(t.gcs[0].pauseNs == 777);
  CHECK(t.gcs[0].beginSeq == 5);
  CHECK(t.gcs[0].endSeq == 6);
  REQUIRE(t.events.size() == 2);
  CHECK(t.events[1].occurrence == 2);
  CHECK(t.lostEvents == 4);
  CHECK(t.stackNodes(2) == std::vector<uint32_t>{2, 1});

  r.seek(r.resolve("level_start#1"));
  CHECK(r.live().size() == 3);
  CHECK(r.counters().liveBytes == 74);
  r.seek(r.resolve("gc:1"));
  CHECK(r.live().size() == 2);
  CHECK_FALSE(r.live().find(0xB0));
  CHECK(r.counters().unknownFrees == 1);
  CHECK(r.counters().unknownCollected == 1);
  CHECK(r.counters().gcEnds == 1);
  r.seek(r.resolve("end"));
  REQUIRE(r.live().size() == 2);
  std::optional<LiveObject> d = r.live().find(0xD0);
  REQUIRE(d);
  CHECK(d->birthSeq() == 8);
  CHECK(r.info(d->info()) == heapman::replay::AllocInfo{HeapKind::kNative, 1, 5, 8, 1, 0});
  CHECK(r.epochOf(d->birthSeq()) == 1);
  CHECK(r.epochOf(r.live().find(0xC0)->birthSeq()) == 0);
  CHECK(r.counters().replacedAllocs == 1);
  CHECK(r.counters().lostEvents == 4);
  CHECK(r.counters().liveBytes == 37);
  r.seek(r.resolve("start"));
  CHECK(r.live().size() == 0);
  r.seek(r.resolve("seq:0"));
  CHECK(r.live().size() == 1);
  r.seek(r.resolve("frame:1"));
  CHECK(r.live().size() == 2);
  CHECK(r.describe(r.resolve("gc:1")) == "gc:1");
  CHECK(r.describe(r.resolve("level_start#2")) == "level_start#2");
  CHECK(r.describe(r.resolve("frame:1")) == "frame:1");
  CHECK(r.describe(r.resolve("seq:4")) == "seq:4");
}

TEST_CASE("points: syntax and range errors name the valid range", "[replay][points]") {
  Replay r(LogReader::fromBytes(handLog(), "hand.hml"), quiet());
  auto err = [&](const std::string& p) {
    try {
      r.resolve(p);
    } catch (const ReplayError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(err("gc:2") == "unknown GC 2 (log has GCs 1..1)");
  // GC numbers are the collector's count: a log that starts later (Mono's start-up collection
  // runs before the recorder) says why an earlier number is missing.
  LogBuilder late;
  late.put(GcBegin{late.next(), 2, 1000, -1});
  late.put(GcEnd{late.next(), 2, 968, 32, 777});
  Replay lr(LogReader::fromBytes(late.finish(), "late.hml"), quiet());
  try {
    lr.resolve("gc:1");
    FAIL("gc:1 resolved");
  } catch (const ReplayError& e) {
    CHECK(std::string(e.what()) ==
          "unknown GC 1 (log has GCs 2..2; GC 1 ran before recording started (GC numbers are the "
          "collector's own count))");
  }
  CHECK(err("level_start#3") == "event 'level_start' occurs 2 times; asked for occurrence 3");
  CHECK(err("boss") == "unknown event 'boss' (known events: level_start)");
  CHECK(err("frame:9") == "unknown frame 9 (log has frames 1..1)");
  CHECK(err("seq:12") == "seq:12 is outside the log (seq 0..11)");
  CHECK(err("gc:x").rfind("malformed point 'gc:x': a GC number must be a non-negative integer", 0) == 0);
  CHECK(err("lvl#0").rfind("malformed point 'lvl#0': occurrences count from 1", 0) == 0);
  CHECK(err("").rfind("malformed point '': empty", 0) == 0);
  CHECK(err("foo:3").rfind("malformed point 'foo:3': unknown prefix 'foo:'", 0) == 0);
  Point p = parsePoint("level_end#3");
  CHECK(p.kind == Point::Kind::kEvent);
  CHECK(p.name == "level_end");
  CHECK(p.number == 3);
  CHECK(parsePoint("level_end").number == 1);
}

TEST_CASE("state at every GC equals an independent map replay", "[replay][property]") {
  auto bytes = makeWorkload(1, 40, 120);
  Replay r(LogReader::fromBytes(bytes, "w.hml"), quiet(250));
  REQUIRE(r.tables().gcs.size() == 40);
  REQUIRE(r.index().checkpoints > 10);
  for (const GcRecord& g : r.tables().gcs) {
    uint64_t limit = r.resolve("gc:" + std::to_string(g.number));
    r.seek(limit);
    INFO("gc " << g.number);
    RefState want = referenceState(r.reader(), limit);
    REQUIRE(engineState(r) == want);
    CHECK(g.liveObjects == want.size());
  }
  r.seek(r.resolve("end"));
  CHECK(engineState(r) == referenceState(r.reader(), r.tables().endSeq));
}

TEST_CASE("checkpointed seek equals full replay at every GC, in any order", "[replay][property]") {
  auto bytes = makeWorkload(2, 30, 200);
  Replay seeker(LogReader::fromBytes(bytes, "w.hml"), quiet(400));
  Replay full(LogReader::fromBytes(bytes, "w.hml"), quiet(400));
  std::vector<uint32_t> order;
  for (const GcRecord& g : seeker.tables().gcs) order.push_back(g.number);
  std::mt19937 rng(7);
  std::shuffle(order.begin(), order.end(), rng);
  for (uint32_t n : order) {
    uint64_t limit = seeker.resolve("gc:" + std::to_string(n));
    seeker.seek(limit);
    full.replayFromStart(limit);
    INFO("gc " << n);
    REQUIRE(engineState(seeker) == engineState(full));
    REQUIRE(seeker.counters() == full.counters());
  }
  CHECK(seeker.stats().checkpointLoads > 0);
}

// 60 random pairs (P, P'): `a` seeks P then P', bring(q) takes `b` to P' its own way; both
// states and counters agree, and equal the reference replay's at P'.
template <class Bring>
void checkSeekPairs(Replay& a, Replay& b, uint64_t seed, Bring bring) {
  std::mt19937_64 rng(seed);
  uint64_t first = a.tables().firstSeq, end = a.tables().endSeq;
  for (int i = 0; i < 60; ++i) {
    uint64_t p = first + rng() % (end - first + 1), q = first + rng() % (end - first + 1);
    a.seek(p);
    a.seek(q);
    bring(q);
    INFO("P " << p << " P' " << q);
    REQUIRE(engineState(a) == engineState(b));
    REQUIRE(a.counters() == b.counters());
    REQUIRE(engineState(a) == referenceState(a.reader(), q));
  }
}

TEST_CASE("seek P then P' equals seek P' directly", "[replay][property]") {
  auto bytes = makeWorkload(3, 25, 150);
  Replay a(LogReader::fromBytes(bytes, "w.hml"), quiet(300));
  Replay b(LogReader::fromBytes(bytes, "w.hml"), quiet(300));
  checkSeekPairs(a, b, 11, [&](uint64_t q) { b.replayFromStart(q); });
}

// Decoding into blocks on the applying thread (what a large live set gets without a second
// thread: ReplayOptions::decodeBlocksAbove) gives the state records straight from the decoder
// give, also for seeks that stop mid-block and resume mid-chunk. The test binary runs with
// HEAPMAN_REPLAY_THREADS=1 (CMakeLists.txt), where `b` decodes straight into the engine.
TEST_CASE("seeks decoded into blocks on one thread equal seeks decoded straight", "[replay]") {
  auto bytes = makeWorkload(4, 25, 150);
  ReplayOptions blocks = quiet(300);
  blocks.decodeBlocksAbove = 0;
  Replay a(LogReader::fromBytes(bytes, "w.hml"), blocks);
  Replay b(LogReader::fromBytes(bytes, "w.hml"), quiet(300));
  checkSeekPairs(a, b, 13, [&](uint64_t q) { b.seek(q); });
  CHECK(a.stats().eventsApplied > 0);
}

// Replay::keepState: a seek at or past a kept position starts there (no replay before it) and
// gives the state a replay from the start gives, also between GCs with collected sets pending
// and mid-chunk; kept states count toward their bound once each.
TEST_CASE("seeks from kept states equal a replay from the start", "[replay][property]") {
  auto bytes = makeWorkload(3, 25, 150);
  Replay a(LogReader::fromBytes(bytes, "w.hml"), quiet(300));  // no checkpoints (no index)
  Replay b(LogReader::fromBytes(bytes, "w.hml"), quiet(300));
  std::mt19937_64 rng(5);
  uint64_t first = a.tables().firstSeq, end = a.tables().endSeq;
  std::vector<uint64_t> kept;
  for (int i = 0; i < 6; ++i) kept.push_back(first + rng() % (end - first + 1));
  for (const GcRecord& g : a.tables().gcs)
    if (g.ended) {
      kept.push_back(g.endSeq);  // just before a GcEnd: its collected sets pending
      break;
    }
  std::sort(kept.begin(), kept.end());
  for (uint64_t k : kept) {
    a.seek(k);
    REQUIRE(a.keepState());
    REQUIRE(a.keepState());  // the same position again: kept once
  }
  std::vector<uint64_t> asks;
  for (uint64_t k : kept) asks.insert(asks.end(), {k, std::min(k + 1, end)});
  for (int i = 0; i < 40; ++i) asks.push_back(first + rng() % (end - first + 1));
  for (uint64_t q : asks) {
    auto from = std::upper_bound(kept.begin(), kept.end(), q);
    a.seek(end);
    uint64_t before = a.stats().eventsApplied;
    a.seek(q);
    b.replayFromStart(q);
    INFO("seek " << q);
    REQUIRE(engineState(a) == engineState(b));
    REQUIRE(a.counters() == b.counters());
    if (from != kept.begin())  // from the kept state before q: only the events after it
      CHECK(a.stats().eventsApplied - before <= q - *(from - 1));
  }
}

TEST_CASE("observer sees every birth and death of a forward range", "[replay]") {
  auto bytes = makeWorkload(4, 12, 100);
  Replay r(LogReader::fromBytes(bytes, "w.hml"), quiet());
  struct Count : Observer {
    int64_t born_ = 0, died_ = 0;
    void born(const LiveObject&) override { ++born_; }
    void died(const LiveObject&, Death, uint64_t) override { ++died_; }
  } c;
  uint64_t a = r.resolve("gc:3"), b = r.resolve("gc:9");
  r.seek(a);
  int64_t before = static_cast<int64_t>(r.live().size());
  r.seek(b, &c);
  CHECK(c.born_ > 0);
  CHECK(c.died_ > 0);
  CHECK(before + c.born_ - c.died_ == static_cast<int64_t>(r.live().size()));
  CHECK_THROWS_AS(r.seek(a, &c), ReplayError);
}

TEST_CASE("index file: built once, reused, rebuilt when stale or corrupt", "[replay][index]") {
  TempDir dir;
  std::string log = (dir.path / "w.hml").string();
  writeFile(log, makeWorkload(5, 20, 150));
  ReplayOptions o = indexed(300);
  RefState atGc10;
  std::vector<ThreadStart> threads;
  {
    Replay r(log, o);
    CHECK(r.index().built);
    CHECK(r.index().path == log + ".hmx");
    CHECK(r.index().checkpoints > 3);
    r.seek(r.resolve("gc:10"));
    atGc10 = engineState(r);
    threads = r.tables().threads;
  }
  REQUIRE(fs::exists(log + ".hmx"));
  REQUIRE(threads.size() == 2);
  CHECK(threads[1].stackLow == 0x7f0000001000);
  CHECK(threads[1].stackHigh == 0x7f0000101000);
  {
    Replay r(log, o);
    CHECK_FALSE(r.index().built);
    CHECK(r.tables().gcs.size() == 20);
    // The threads as the index holds them: the stack bounds too (index version 5).
    REQUIRE(r.tables().threads.size() == threads.size());
    for (size_t i = 0; i < threads.size(); ++i) {
      const ThreadStart& t = r.tables().threads[i];
      CHECK(t.index == threads[i].index);
      CHECK(t.name == threads[i].name);
      CHECK(t.stackLow == threads[i].stackLow);
      CHECK(t.stackHigh == threads[i].stackHigh);
    }
    r.seek(r.resolve("gc:10"));
    CHECK(engineState(r) == atGc10);
    CHECK(r.stats().eventsApplied < r.tables().eventCount);  // started from a checkpoint
  }
  // Corrupt one byte in the middle of the index.
  {
    auto sz = fs::file_size(log + ".hmx");
    FILE* f = std::fopen((log + ".hmx").c_str(), "r+b");
    std::fseek(f, static_cast<long>(sz / 2), SEEK_SET);
    int c = std::fgetc(f);
    std::fseek(f, static_cast<long>(sz / 2), SEEK_SET);
    std::fputc(c ^ 0x5a, f);
    std::fclose(f);
    Replay r(log, o);
    CHECK(r.index().built);
    CHECK(r.index().why.find("corrupt") != std::string::npos);
    r.seek(r.resolve("gc:10"));
    CHECK(engineState(r) == atGc10);
  }
  // A different interval makes it stale.
  {
    ReplayOptions o2 = o;
    o2.checkpointEvents = 500;
    Replay r(log, o2);
    CHECK(r.index().built);
    CHECK(r.index().why.find("stale: built with a checkpoint interval of 300") != std::string::npos);
  }
  // The log changed (recorded again): stale.
  writeFile(log, makeWorkload(55, 20, 150));
  {
    ReplayOptions o2 = o;
    o2.checkpointEvents = 500;
    Replay r(log, o2);
    CHECK(r.index().built);
    CHECK(r.index().why.find("stale: the log changed") != std::string::npos);
  }
}

TEST_CASE("index file falls back to the cache directory when the log's is not writable",
          "[replay][index]") {
  TempDir dir;
  auto bytes = makeWorkload(6, 5, 50);
  std::string log = (dir.path / "w.hml").string();
  writeFile(log, bytes);
  std::string cache = (dir.path / "cache").string();
  ::setenv("XDG_CACHE_HOME", cache.c_str(), 1);
  ReplayOptions o;
  o.notes = nullptr;
  o.indexPath = "/proc/heapman-no-such-dir/w.hml.hmx";  // cannot be created, even by root
  {
    Replay r(log, o);
    CHECK(r.index().built);
    CHECK(r.index().path.rfind(cache + "/heapman/w.hml-", 0) == 0);
  }
  {
    Replay r(log, o);
    CHECK_FALSE(r.index().built);
    CHECK(r.index().path.rfind(cache + "/heapman/w.hml-", 0) == 0);
  }
  ::unsetenv("XDG_CACHE_HOME");
}

TEST_CASE("truncated log replays up to its last intact chunk", "[replay]") {
  auto bytes = makeWorkload(8, 20, 150);
  bytes.resize(bytes.size() * 6 / 10);
  Replay r(LogReader::fromBytes(bytes, "cut.hml"), quiet());
  CHECK_FALSE(r.reader().end().complete);
  REQUIRE(r.tables().gcs.size() > 3);
  uint64_t end = r.resolve("end");
  r.seek(end);
  CHECK(engineState(r) == referenceState(r.reader(), end));
}

// A free of address 0 (never allocated; an empty slot's address field is 0 too) finds nothing:
// it must not mark an empty slot dead nor change the count, however full the table is.
TEST_CASE("LiveSet: erasing address 0 finds nothing", "[replay][liveset]") {
  LiveSet s;
  LiveObject out;
  CHECK_FALSE(s.erase(0, &out));
  CHECK(s.size() == 0);
  for (uint64_t i = 1; i <= 1000; ++i) s.insert({16 * i, i}, &out);
  for (int k = 0; k < 3; ++k) CHECK_FALSE(s.erase(0, &out));
  CHECK(s.size() == 1000);
  size_t n = 0;
  s.forEach([&](const LiveObject& o) { n += o.address != 0; });
  CHECK(n == 1000);
  CHECK(s.erase(16, &out));
  CHECK(out.packed == 1);
  CHECK(s.size() == 999);
}

TEST_CASE("LiveSet matches a hash map under random inserts and erases", "[replay][liveset]") {
  LiveSet s;
  std::unordered_map<uint64_t, uint64_t> m;
  std::mt19937_64 rng(42);
  for (int i = 0; i < 200000; ++i) {
    uint64_t a = 16 * (1 + rng() % 5000);
    if (rng() % 3) {
      LiveObject old;
      bool had = s.insert({a, uint64_t(i)}, &old);
      CHECK(had == (m.count(a) == 1));
      if (had) CHECK(old.packed == m[a]);
      m[a] = uint64_t(i);
    } else {
      LiveObject out;
      bool had = s.erase(a, &out);
      REQUIRE(had == (m.count(a) == 1));
      if (had) CHECK(out.packed == m[a]);
      m.erase(a);
    }
    REQUIRE(s.size() == m.size());
  }
  size_t n = 0;
  s.forEach([&](const LiveObject& o) {
    ++n;
    REQUIRE(m.at(o.address) == o.packed);
  });
  CHECK(n == m.size());
  // Addresses near the 2^48 limit work like any other.
  LiveSet edge;
  std::unordered_map<uint64_t, uint64_t> em;
  for (uint64_t i = 1; i <= 5000; ++i) {
    uint64_t a = (i % 2) ? LiveSet::kAddressLimit - 16 * i : 16 * i;
    LiveObject old;
    REQUIRE_FALSE(edge.insert({a, i}, &old));
    em[a] = i;
  }
  for (uint64_t i = 1; i <= 5000; i += 3) {
    uint64_t a = (i % 2) ? LiveSet::kAddressLimit - 16 * i : 16 * i;
    LiveObject out;
    REQUIRE(edge.erase(a, &out));
    REQUIRE(out.address == a);
    REQUIRE(out.packed == i);
    em.erase(a);
  }
  REQUIRE(edge.size() == em.size());
  edge.forEach([&](const LiveObject& o) { REQUIRE(em.at(o.address) == o.packed); });
  for (auto& [a, v] : em) REQUIRE(edge.find(a)->packed == v);
  // Bytes per live object at scale: 16-byte slots at a load of 0.7..0.875.
  LiveSet big;
  LiveObject dummy;
  for (uint64_t i = 1; i <= 1000000; ++i) big.insert({i * 48, i}, &dummy);
  double perObject = double(big.memoryBytes()) / double(big.size());
  CHECK(perObject <= 24.0);
  CHECK(perObject >= 18.0);
  // After most objects die the table is rebuilt at rest, not on every erase.
  for (uint64_t i = 1; i <= 900000; ++i) REQUIRE(big.erase(i * 48, &dummy));
  CHECK(double(big.memoryBytes()) / double(big.size()) > 100.0);
  big.shrinkToFit();
  perObject = double(big.memoryBytes()) / double(big.size());
  CHECK(perObject <= 24.0);
  CHECK(perObject >= 18.0);
  for (uint64_t i = 900001; i <= 1000000; ++i) REQUIRE(big.find(i * 48)->packed == i);
}

TEST_CASE("any flipped byte of the index file is detected and the index rebuilt", "[replay][index]") {
  TempDir dir;
  std::string log = (dir.path / "w.hml").string();
  auto bytes = makeWorkload(9, 12, 120);
  writeFile(log, bytes);
  ReplayOptions o = indexed(200);
  std::vector<uint8_t> good;
  RefState want;
  {
    Replay r(log, o);
    r.seek(r.resolve("gc:7"));
    want = engineState(r);
    FILE* in = std::fopen((log + ".hmx").c_str(), "rb");
    int c;
    while ((c = std::fgetc(in)) != EOF) good.push_back(static_cast<uint8_t>(c));
    std::fclose(in);
  }
  REQUIRE(good.size() > 200);
  std::mt19937_64 rng(99);
  for (int i = 0; i < 40; ++i) {
    std::vector<uint8_t> bad = good;
    size_t at = i < 12 ? static_cast<size_t>(i * 8) : rng() % bad.size();  // header fields too
    bad[at] ^= static_cast<uint8_t>(1 + rng() % 255);
    FILE* out = std::fopen((log + ".hmx").c_str(), "wb");
    std::fwrite(bad.data(), 1, bad.size(), out);
    std::fclose(out);
    Replay r(log, o);
    INFO("flipped byte " << at);
    CHECK(r.index().built);
    r.seek(r.resolve("gc:7"));
    CHECK(engineState(r) == want);
  }
}

TEST_CASE("sortByAddress orders live objects as std::sort does", "[replay][liveset]") {
  std::mt19937_64 rng(17);
  // Sizes around the radix path's threshold; addresses in one heap (shared high bits), spread
  // over the whole user address space, and one per page with a random low bit.
  for (size_t n : {0u, 1u, 5u, 4095u, 4096u, 50000u}) {
    for (int spread = 0; spread < 3; ++spread) {
      std::vector<LiveObject> v;
      std::set<uint64_t> used;
      while (v.size() < n) {
        uint64_t a = spread == 0   ? 0x7f3a00000000 + 16 * (rng() % (uint64_t{1} << 26))
                     : spread == 1 ? 8 * (rng() % (LiveSet::kAddressLimit / 8))
                                   : 0x55aa00001000 + 8 * (rng() % 2) + 4096 * v.size();
        if (used.insert(a).second) v.push_back({a, LiveObject::pack(v.size(), 1)});
      }
      std::vector<LiveObject> expected = v;
      std::sort(expected.begin(), expected.end(),
                [](const LiveObject& a, const LiveObject& b) { return a.address < b.address; });
      sortByAddress(v);
      INFO("n " << n << " spread " << spread);
      REQUIRE(v.size() == expected.size());
      for (size_t i = 0; i < v.size(); ++i) {
        REQUIRE(v[i].address == expected[i].address);
        REQUIRE(v[i].packed == expected[i].packed);
      }
    }
  }
}

TEST_CASE("churn over any range from the index's spans equals a replay of that range",
          "[replay][index][churn]") {
  TempDir dir;
  std::string log = (dir.path / "w.hml").string();
  writeFile(log, makeWorkload(9, 30, 150));
  ReplayOptions o = indexed(300);
  Replay built(log, o);
  REQUIRE(built.index().built);
  const LogTables& t = built.tables();
  REQUIRE(t.churnSpansIndexed);
  // A span from the start, one from each checkpoint.
  REQUIRE(t.churnSpans.size() == built.index().checkpoints + 1);
  REQUIRE(t.churnSpans.size() > 10);
  CHECK(t.churnSpans[0].from == 0);
  // The spans sum to the whole log's births and deaths, as the tables count them.
  uint64_t born = 0, collected = 0;
  for (const ChurnSpan& s : t.churnSpans) {
    REQUIRE(std::is_sorted(s.infos.begin(), s.infos.end()));
    REQUIRE(s.counts.size() == s.infos.size() * ChurnSpan::kColumns);
    for (size_t k = 0; k < s.infos.size(); ++k) {
      born += s.counts[k * ChurnSpan::kColumns];
      collected += s.counts[k * ChurnSpan::kColumns + 2];
    }
  }
  uint64_t collectedByGcs = 0;
  for (const GcRecord& g : t.gcs) collectedByGcs += g.collectedObjects;
  CHECK(collected == collectedByGcs);
  CHECK(born > t.allocs / 2);

  // Read back from the index file: the same spans.
  Replay loaded(log, o);
  REQUIRE(!loaded.index().built);
  CHECK(loaded.tables().churnSpans == t.churnSpans);

  // Ranges: every pair of points among the start, the end, each span boundary and the events
  // either side of it, GC ends and a few seqs mid-chunk; against an observed replay of the range.
  std::set<uint64_t> points{0, t.firstSeq, t.endSeq, t.endSeq + 5};
  for (const ChurnSpan& s : t.churnSpans)
    for (uint64_t d : {0, 1, 2})
      for (uint64_t p : {s.from - std::min(s.from, d), s.from + d}) points.insert(p);
  for (const GcRecord& g : t.gcs) points.insert(g.endSeq + 1);
  std::mt19937_64 rng(3);
  for (int i = 0; i < 20; ++i) points.insert(rng() % (t.endSeq + 1));
  std::vector<uint64_t> at(points.begin(), points.end());
  Replay reference(log, o);
  auto same = [](InfoCounts x, InfoCounts y) {
    size_t n = std::max(x.objects.size(), y.objects.size());
    x.objects.resize(n), x.bytes.resize(n), y.objects.resize(n), y.bytes.resize(n);
    return x.objects == y.objects && x.bytes == y.bytes;
  };
  size_t compared = 0;
  for (size_t i = 0; i < at.size(); ++i)
    for (size_t j = i; j < at.size(); j += 1 + (j % 3)) {
      GarbageCounter want(t);
      reference.seek(at[i]);
      reference.seek(at[j], &want);
      GarbageCounter got = countGarbage(loaded, at[i], at[j]);
      INFO("[" << at[i] << ", " << at[j] << ")");
      REQUIRE(same(got.births, want.births));
      REQUIRE(same(got.collected, want.collected));
      REQUIRE(same(got.freed, want.freed));
      ++compared;
    }
  CHECK(compared > 500);
}

// The index's series of `t` (log at `log`) against a replay of the log with an observer that
// counts what the index pass counted: every point's bytes, objects and peak; births; blocks.
void checkSeriesAgainstReplay(const std::string& log, const LogTables& t) {
  const std::vector<SeriesPoint>& s = t.series;
  struct Watch : Observer {
    const LogTables& t;
    std::array<uint64_t, kHeapKindCount> bytes{}, objects{};
    uint64_t total = 0, peak = 0;
    std::vector<uint64_t> births;
    std::set<uint64_t> blocks;
    explicit Watch(const LogTables& tables) : t(tables), births(tables.infos.size()) {}
    void born(const LiveObject& x) override {
      const heapman::replay::AllocInfo& i = t.infos[x.info()];
      bytes[size_t(i.heap)] += i.size, ++objects[size_t(i.heap)], total += i.size;
      peak = std::max(peak, total);
      ++births[x.info()];
      uint64_t size = std::max<uint64_t>(1, i.actualSize ? i.actualSize : i.size);
      for (uint64_t b = x.address >> kAddressBlockBits;
           b <= (x.address + size - 1) >> kAddressBlockBits; ++b)
        blocks.insert(b);
    }
    void died(const LiveObject& x, Death, uint64_t) override {
      const heapman::replay::AllocInfo& i = t.infos[x.info()];
      bytes[size_t(i.heap)] -= i.size, --objects[size_t(i.heap)], total -= i.size;
    }
  };
  Replay ref(log, quiet());
  Watch w(ref.tables());
  for (const SeriesPoint& p : s) {
    ref.seek(p.limit, &w);
    INFO("point at " << p.limit);
    REQUIRE(p.bytes == w.bytes);
    REQUIRE(p.objects == w.objects);
    REQUIRE(p.peak == std::max(w.peak, w.total));
    w.peak = w.total;
  }
  CHECK(t.births == w.births);
  CHECK(t.addressBlocks == std::vector<uint64_t>(w.blocks.begin(), w.blocks.end()));

}

TEST_CASE("the index's live series, births and address blocks equal an observed replay",
          "[replay][index][series]") {
  TempDir dir;
  std::string log = (dir.path / "w.hml").string();
  writeFile(log, makeWorkload(11, 40, 300));
  ReplayOptions o = indexed(300);
  o.seriesPoints = 16;  // thinned several times over this log
  Replay built(log, o);
  REQUIRE(built.index().built);
  const LogTables& t = built.tables();
  REQUIRE(t.seriesIndexed);
  const std::vector<SeriesPoint>& s = t.series;
  REQUIRE(!s.empty());
  CHECK(t.seriesEvery > 64);
  size_t fine = 0, gcPoints = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) REQUIRE(s[i].limit > s[i - 1].limit);
    if (s[i].gc) {
      ++gcPoints;
    } else if (i + 1 < s.size()) {
      ++fine;
      CHECK(s[i].limit % t.seriesEvery == 0);
    }
  }
  CHECK(fine <= o.seriesPoints);
  CHECK(fine >= o.seriesPoints / 2);
  CHECK(s.back().limit == t.endSeq);
  size_t ended = 0;
  for (const GcRecord& g : t.gcs)
    if (g.ended) {
      ++ended;
      auto at = std::lower_bound(s.begin(), s.end(), g.endSeq + 1,
                                 [](const SeriesPoint& p, uint64_t l) { return p.limit < l; });
      REQUIRE(at != s.end());
      CHECK(at->limit == g.endSeq + 1);
      CHECK(at->gc);
    }
  CHECK(gcPoints == ended);

  checkSeriesAgainstReplay(log, t);

  // Read back from the index file: the same counts.
  Replay loaded(log, o);
  REQUIRE(!loaded.index().built);
  CHECK(loaded.tables().series == s);
  CHECK(loaded.tables().seriesEvery == t.seriesEvery);
  CHECK(loaded.tables().births == t.births);
  CHECK(loaded.tables().addressBlocks == t.addressBlocks);
  CHECK(loaded.tables().seriesIndexed);
}

TEST_CASE("points the series thins away carry their peak to the next", "[replay][index][series]") {
  // A heap that rises, then falls to nothing, no GCs: the highest total lies between points that
  // the thinning takes away.
  TempDir dir;
  std::string log = (dir.path / "hill.hml").string();
  LogBuilder b;
  b.put(StackNode{1, 0, 0x1000, false});
  for (uint64_t k = 0; k < 1500; ++k)
    b.put(Alloc{b.next(), HeapKind::kNative, 0x10000 + k * 64, 48, 48, 1, 0});
  for (uint64_t k = 0; k < 1500; ++k) b.put(Free{b.next(), HeapKind::kNative, 0x10000 + k * 64});
  writeFile(log, b.finish());
  ReplayOptions o = indexed(300);
  o.seriesPoints = 4;
  Replay r(log, o);
  const LogTables& t = r.tables();
  REQUIRE(t.seriesIndexed);
  CHECK(t.seriesEvery == 1024);
  uint64_t peak = 0;
  for (const SeriesPoint& p : t.series) peak = std::max(peak, p.peak);
  CHECK(peak == 1500 * 48);
  checkSeriesAgainstReplay(log, t);
}
