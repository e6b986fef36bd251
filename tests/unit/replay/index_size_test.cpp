// The index file's size against its log's (issue 17, item 11): a program whose heap only grows
// between collections (a guile program: bdwgc, most objects live to the end) once got an index
// 8x its log, since every checkpoint held the whole live set. Logs of that shape and of a malloc
// churn, written with the real LogWriter; the index must stay under a tenth of the log and seeks
// through it must still give the state a full replay gives.
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <random>

#include "test_log.h"

using namespace rtest;
using namespace heapman::replay;
namespace fs = std::filesystem;

namespace {

struct Dir {
  fs::path path = fs::temp_directory_path() / ("index-size-test-" + std::to_string(::getpid()));
  Dir() { fs::create_directories(path); }
  ~Dir() { fs::remove_all(path); }
};

// bdwgc-like: objects carved from 4 KiB blocks of one size class each, in address order, a few
// hundred (size, stack) combinations; a collection every `perGc` allocations frees a quarter of
// what was born since the one before, the rest lives on (the heap grows like guile's).
std::vector<uint8_t> growingHeap(uint32_t allocs, uint32_t perGc) {
  LogBuilder b(64 * 1024);
  std::mt19937_64 rng(17);
  for (uint32_t s = 1; s <= 300; ++s) b.put(StackNode{s, s > 30 ? s % 30 : 0, 0x400000 + 64 * s, false});
  std::vector<uint64_t> bump(8), blockEnd(8);
  uint64_t nextBlock = 0x7f0000000000;
  std::vector<uint64_t> young;
  uint32_t gc = 0;
  for (uint32_t i = 0; i < allocs; ++i) {
    size_t cls = rng() % 8;
    uint64_t size = 16 * (cls + 1);
    if (bump[cls] + size > blockEnd[cls]) {
      bump[cls] = nextBlock;
      blockEnd[cls] = nextBlock + 4096;
      nextBlock += 4096;
    }
    uint64_t addr = bump[cls];
    bump[cls] += size;
    uint32_t stack = static_cast<uint32_t>(31 + rng() % 270);
    b.put(Alloc{b.next(), HeapKind::kGcNormal, addr, size - rng() % 8, size, stack, 0});
    young.push_back(addr);
    if ((i + 1) % perGc == 0) {
      ++gc;
      b.put(GcBegin{b.next(), gc, 0, 0});
      std::vector<uint64_t> dead;
      for (uint64_t a : young)
        if (rng() % 4 == 0) dead.push_back(a);
      b.put(Collected{gc, dead});
      b.put(GcEnd{b.next(), gc, 0, 0, 1000});
      young.clear();
    }
  }
  return b.finish();
}

// malloc churn: a live set of a few thousand objects, most die young.
std::vector<uint8_t> churn(uint32_t events) {
  LogBuilder b(64 * 1024);
  std::mt19937_64 rng(23);
  for (uint32_t s = 1; s <= 40; ++s) b.put(StackNode{s, s > 8 ? s % 8 : 0, 0x400000 + 64 * s, false});
  std::vector<uint64_t> live;
  uint64_t next = 0x10000;
  for (uint32_t i = 0; i < events; ++i) {
    if (live.size() < 4000 && (live.empty() || rng() % 2)) {
      uint64_t a = next;
      next += 16 * (1 + rng() % 8);
      b.put(Alloc{b.next(), HeapKind::kNative, a, 8 + rng() % 200, 208, static_cast<uint32_t>(9 + rng() % 32), 0});
      live.push_back(a);
    } else {
      size_t k = rng() % live.size();
      b.put(Free{b.next(), HeapKind::kNative, live[k]});
      live[k] = live.back();
      live.pop_back();
    }
  }
  return b.finish();
}

void checkIndex(const std::string& log, uint64_t interval, size_t minCheckpoints) {
  ReplayOptions o;
  o.checkpointEvents = interval;
  o.indexFloor = 0;  // the share alone (a test log is far below ten times the floor)
  o.notes = nullptr;
  {
    Replay r(log, o);
    REQUIRE(r.index().built);
  }
  uint64_t logBytes = fs::file_size(log), indexBytes = fs::file_size(log + ".hmx");
  INFO("log " << logBytes << " bytes, index " << indexBytes << " bytes");
  CHECK(indexBytes * 10 <= logBytes);
  Replay r(log, o);
  REQUIRE_FALSE(r.index().built);
  CHECK(r.index().checkpoints >= minCheckpoints);
  ReplayOptions plain = o;
  plain.useIndex = false;
  Replay full(log, plain);
  // Seeks through the loaded index, backwards and forwards, equal replays from the start.
  uint64_t first = r.tables().firstSeq, end = r.tables().endSeq;
  for (uint64_t k : {9, 3, 7, 1, 10, 5, 0}) {
    uint64_t at = first + (end - first) * k / 10;
    r.seek(at);
    full.replayFromStart(at);
    INFO("seek to seq " << at);
    REQUIRE(engineState(r) == engineState(full));
    REQUIRE(r.counters() == full.counters());
  }
}

}  // namespace

TEST_CASE("index of a growing bdwgc heap stays under a tenth of its log", "[replay][index]") {
  Dir dir;
  std::string log = (dir.path / "grow.hml").string();
  writeFile(log, growingHeap(400'000, 20'000));
  checkIndex(log, 20'000, 0);
}

TEST_CASE("index of a malloc churn stays under a tenth of its log and keeps its checkpoints",
          "[replay][index]") {
  Dir dir;
  std::string log = (dir.path / "churn.hml").string();
  writeFile(log, churn(600'000));
  checkIndex(log, 20'000, 10);
}

// guile-like (bench/guile_churn.scm): each round allocates `perRound` pairs and strings from two
// stacks, taking the addresses its size class freed in order, then carving; a collection after
// every round frees the round before the last `keep` (4). A steady heap of a few thousand objects that
// checkpoints to a fraction of a byte each, in a log that takes ~0.3 bytes an event.
namespace {

// `scatter`: new objects are carved with random gaps between them, so that the live set's
// addresses (a checkpoint) take more bytes than the log's reuse of freed ones.
std::vector<uint8_t> steadyHeap(uint32_t rounds, uint32_t perRound, uint32_t keep = 4,
                                bool scatter = false) {
  std::mt19937 rng(7);
  LogBuilder b(64 * 1024);
  b.put(StackNode{1, 0, 0x400100, false});
  b.put(StackNode{2, 0, 0x400200, false});
  std::vector<std::vector<uint64_t>> freed(2), born;
  uint64_t carve[2] = {0x7f0000000000, 0x7f4000000000};
  uint32_t gc = 0;
  for (uint32_t r = 0; r < rounds; ++r) {
    born.emplace_back();
    for (uint32_t i = 0; i < perRound; ++i) {
      size_t cls = i % 2;
      uint64_t size = 16 * (cls + 1), addr;
      if (!freed[cls].empty()) {
        addr = freed[cls].back();
        freed[cls].pop_back();
      } else {
        addr = carve[cls];
        carve[cls] += size + (scatter ? 16 * (rng() % 256) : 0);
      }
      b.put(Alloc{b.next(), HeapKind::kGcNormal, addr, size, size, static_cast<uint32_t>(cls + 1), 0});
      born.back().push_back(addr);
    }
    ++gc;
    b.put(GcBegin{b.next(), gc, 0, 0});
    if (born.size() > keep) {
      std::vector<uint64_t> dead = born[born.size() - keep - 1];
      std::sort(dead.begin(), dead.end());
      b.put(Collected{gc, dead});
      for (auto it = dead.rbegin(); it != dead.rend(); ++it)  // reused lowest first
        freed[(*it >> 40) == 0x7f ? 0 : 1].push_back(*it);
      born[born.size() - keep - 1].clear();
    }
    b.put(GcEnd{b.next(), gc, 0, 0, 1000});
  }
  return b.finish();
}

}  // namespace

// The index pass guesses a checkpoint's bytes from the last one it wrote; before the first it
// has only a guess (2 bytes an object, where a bdwgc heap in address order takes a fraction of
// that), which once kept a guile log's first checkpoint back to two thirds of the log: every seek
// before it replayed from the start. The first one is measured, not guessed.
TEST_CASE("checkpoints of a growing heap start early in the log", "[replay][index]") {
  Dir dir;
  std::string log = (dir.path / "early.hml").string();
  writeFile(log, steadyHeap(200, 5000));
  ReplayOptions o;
  o.checkpointEvents = 20'000;
  o.notes = nullptr;
  { Replay build(log, o); }
  Replay r(log, o);
  REQUIRE_FALSE(r.index().built);
  uint64_t first = r.tables().firstSeq, end = r.tables().endSeq;
  r.seek(first + (end - first) / 4);
  INFO("checkpoints " << r.index().checkpoints << ", events applied " << r.stats().eventsApplied);
  CHECK(r.stats().checkpointLoads == 1);
  CHECK(r.stats().eventsApplied <= 40'000);
}

// A log that compresses well (guile's: 0.2 bytes an event) would have its checkpoints far apart
// under a tenth of its bytes, and every seek replay that far. Under ten times the index floor
// the floor's bytes are spread over it instead.
TEST_CASE("a small log that compresses well gets the index floor's checkpoints, spread over it",
          "[replay][index]") {
  Dir dir;
  std::string log = (dir.path / "small.hml").string();
  writeFile(log, steadyHeap(300, 5000, 30, true));  // 150 k objects live
  ReplayOptions o;
  o.checkpointEvents = 20'000;
  o.notes = nullptr;
  ReplayOptions tenth = o;
  tenth.indexFloor = 0;
  tenth.indexPath = log + ".tenth.hmx";
  { Replay build(log, o); }
  { Replay build(log, tenth); }
  const uint64_t logBytes = fs::file_size(log), indexBytes = fs::file_size(log + ".hmx");
  Replay r(log, o), share(log, tenth);
  REQUIRE_FALSE(r.index().built);
  INFO("log " << logBytes << " bytes, index " << indexBytes << " bytes, checkpoints "
              << r.index().checkpoints << " (a tenth of the log: " << share.index().checkpoints
              << ")");
  CHECK(indexBytes > logBytes / 10);
  CHECK(indexBytes <= o.indexFloor);
  CHECK(r.index().checkpoints >= 4 * share.index().checkpoints);
  // Every seek, backwards from the end, starts from a checkpoint near it: one is taken once the
  // events since the last outnumber the live objects (150 k), where a tenth of the log fits one.
  const uint64_t first = r.tables().firstSeq, end = r.tables().endSeq;
  for (uint64_t k = 9; k >= 1; --k) {
    const Replay::Stats before = r.stats();
    r.seek(first + (end - first) * k / 10);
    INFO("seek " << k << "/10");
    CHECK(r.stats().eventsApplied - before.eventsApplied <= 300'000);
  }
}
