// A lazily indexed replay (ReplayOptions::lazy): whatever points it is asked for, in whatever
// order, it answers as a replay indexed on open does, it reads only as far as they need, and the
// index file it writes at the end is that replay's byte for byte.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>

#include "heapman/replay/frames.h"
#include "test_log.h"

using namespace rtest;
using namespace heapman::replay;
namespace fs = std::filesystem;

namespace {

struct Dir {
  fs::path path;
  Dir() {
    path = fs::temp_directory_path() / ("lazy-index-test-" + std::to_string(::getpid()));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~Dir() { fs::remove_all(path); }
};

ReplayOptions options(const fs::path& index, bool lazy) {
  ReplayOptions o;
  o.checkpointEvents = 300;
  o.indexShare = 0;  // a checkpoint at every interval: many of them to resume between
  o.notes = nullptr;
  o.indexPath = index.string();
  o.lazy = lazy;
  return o;
}

std::vector<char> bytesOf(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Every birth and death a forward seek reports, in order.
struct Trace : Observer {
  std::vector<std::tuple<uint64_t, uint64_t, int, uint64_t>> seen;
  void born(const LiveObject& o) override { seen.emplace_back(o.address, o.birthSeq(), -1, 0); }
  void died(const LiveObject& o, Death how, uint64_t seq) override {
    seen.emplace_back(o.address, o.birthSeq(), static_cast<int>(how), seq);
  }
};

std::string somePoint(std::mt19937_64& rng, const LogTables& whole) {
  auto pick = [&](uint64_t n) { return std::uniform_int_distribution<uint64_t>(0, n - 1)(rng); };
  switch (pick(6)) {
    case 0: return "gc:" + std::to_string(1 + pick(whole.gcs.size()));
    case 1: return "level_start#" + std::to_string(1 + pick(10));
    case 2: return "level_end#" + std::to_string(1 + pick(9));
    case 3: return "frame:" + std::to_string(whole.frames[pick(whole.frames.size())].frame);
    case 4: return "seq:" + std::to_string(pick(whole.endSeq));
    default: return "start";
  }
}

}  // namespace

TEST_CASE("lazy index: random points and seeks answer as the index built on open does, and the "
          "file written at the end is the same",
          "[replay][index][property]") {
  Dir dir;
  const fs::path log = dir.path / "w.hml";
  writeFile(log.string(), makeWorkload(21, 30, 150, 2048, /*lost=*/false));
  Replay whole(log.string(), options(dir.path / "whole.hmx", false));
  REQUIRE(whole.indexed());
  REQUIRE(whole.index().checkpoints > 10);
  const uint64_t allEvents = whole.stats().eventsApplied;

  Replay lazy(log.string(), options(dir.path / "lazy.hmx", true));
  CHECK_FALSE(lazy.indexed());
  CHECK(lazy.stats().eventsApplied == 0);
  // What the paused pass knows of the end (describe's "end") is the footer's.
  CHECK(lazy.reader().index()->endSeq == whole.tables().endSeq);

  // An early point reads only the log up to it.
  uint64_t gc2 = lazy.resolve("gc:2");
  CHECK(gc2 == whole.resolve("gc:2"));
  lazy.seek(gc2);
  whole.seek(gc2);
  CHECK(engineState(lazy) == engineState(whole));
  CHECK_FALSE(lazy.indexed());
  CHECK(lazy.stats().eventsApplied < allEvents / 5);
  CHECK_FALSE(fs::exists(dir.path / "lazy.hmx"));

  std::mt19937_64 rng(5);
  for (int i = 0; i < 120 && !lazy.indexed(); ++i) {
    std::string text = somePoint(rng, whole.tables());
    INFO("step " << i << ": " << text);
    uint64_t want = whole.resolve(text);
    REQUIRE(lazy.resolve(text) == want);
    REQUIRE(lazy.describe(want) == whole.describe(want));
    if (rng() % 3 == 0 && want >= lazy.position()) {
      // Forward with an observer: the same births and deaths in the same order.
      Replay from(log.string(), options(dir.path / "whole.hmx", false));
      from.seek(lazy.position());
      Trace a, b;
      lazy.seek(want, &a);
      from.seek(want, &b);
      REQUIRE(a.seen == b.seen);
    } else {
      lazy.seek(want);
    }
    whole.seek(want);
    REQUIRE(engineState(lazy) == engineState(whole));
    REQUIRE(lazy.counters() == whole.counters());
  }

  lazy.completeIndex();
  REQUIRE(lazy.indexed());
  CHECK(lazy.index().built);
  CHECK(lazy.tables().gcs.size() == whole.tables().gcs.size());
  CHECK(lazy.tables().churnSpans == whole.tables().churnSpans);
  REQUIRE(fs::exists(dir.path / "lazy.hmx"));
  CHECK(bytesOf(dir.path / "lazy.hmx") == bytesOf(dir.path / "whole.hmx"));
  // Every event once: the pass never went back over what it had read.
  CHECK(lazy.stats().eventsApplied >= allEvents);

  // The written index serves the next open, which is indexed at once.
  Replay again(log.string(), options(dir.path / "lazy.hmx", true));
  CHECK(again.indexed());
  CHECK_FALSE(again.index().built);

  // A stale one is rebuilt on open, as the note says, not left stale behind a paused pass.
  writeFile(log.string(), makeWorkload(26, 30, 150, 2048, false));
  Replay stale(log.string(), options(dir.path / "lazy.hmx", true));
  CHECK(stale.indexed());
  CHECK(stale.index().built);
  CHECK(stale.index().why.find("stale") != std::string::npos);
}

TEST_CASE("lazy index: points the log lacks read it all and name the range as before",
          "[replay][index]") {
  Dir dir;
  const fs::path log = dir.path / "w.hml";
  writeFile(log.string(), makeWorkload(22, 12, 100, 2048, false));
  Replay whole(log.string(), options(dir.path / "whole.hmx", false));
  for (const char* text : {"gc:99", "level_end#50", "frame:100000", "boss", "seq:999999999"}) {
    INFO(text);
    Replay lazy(log.string(), options(dir.path / "lazy.hmx", true));
    std::string wholeSays, lazySays;
    try {
      whole.resolve(text);
    } catch (const ReplayError& e) {
      wholeSays = e.what();
    }
    try {
      lazy.resolve(text);
    } catch (const ReplayError& e) {
      lazySays = e.what();
    }
    CHECK_FALSE(wholeSays.empty());
    CHECK(lazySays == wholeSays);
    CHECK(lazy.indexed());
    fs::remove(dir.path / "lazy.hmx");
  }
  // "end" reads it all too, and the state is there.
  Replay lazy(log.string(), options(dir.path / "lazy.hmx", true));
  uint64_t end = lazy.resolve("end");
  CHECK(lazy.indexed());
  lazy.seek(end);
  whole.seek(end);
  CHECK(engineState(lazy) == engineState(whole));
}

TEST_CASE("lazy index: a log it could answer wrongly from a prefix is indexed on open",
          "[replay][index]") {
  Dir dir;
  SECTION("events lost: the warning counts the whole log's") {
    writeFile((dir.path / "w.hml").string(), makeWorkload(23, 8, 60, 2048, /*lost=*/true));
  }
  SECTION("truncated: no footer says where it ends") {
    auto bytes = makeWorkload(24, 8, 60, 2048, false);
    bytes.resize(bytes.size() * 2 / 3);
    writeFile((dir.path / "w.hml").string(), bytes);
  }
  Replay r((dir.path / "w.hml").string(), options(dir.path / "w.hmx", true));
  CHECK(r.indexed());
}

TEST_CASE("lazy index: a damaged chunk anywhere fails the open as without it",
          "[replay][index]") {
  Dir dir;
  auto bytes = makeWorkload(25, 20, 100, 2048, false);
  Replay whole(heapman::log::LogReader::fromBytes(bytes, "w.hml"), ReplayOptions{});
  // A byte in the payload of the last records chunk, far past the first points.
  const heapman::log::ChunkRef* last = nullptr;
  for (const auto& c : whole.reader().chunks())
    if (c.header.type == static_cast<uint16_t>(heapman::log::ChunkType::kRecords)) last = &c;
  REQUIRE(last);
  bytes[last->offset + heapman::log::kChunkHeaderSize + 5] ^= 0x40;
  writeFile((dir.path / "w.hml").string(), bytes);
  CHECK_THROWS_AS(Replay((dir.path / "w.hml").string(), options(dir.path / "w.hmx", true)),
                  heapman::log::FormatError);
}

TEST_CASE("lazy index: a frame outside every module loaded so far is noticed, for its module's "
          "load may come later",
          "[replay][index]") {
  // A plugin's constructor allocates before the recorder logs the plugin's load (dlopen).
  Dir dir;
  LogBuilder b;
  b.put(ModuleLoad{b.next(), "/bin/game", 0x400000, 0x10000, {1}, {{0, 0x10000, 5}}});
  b.put(StackNode{1, 0, 0x401000, false});  // in /bin/game
  b.put(StackNode{2, 0, 0x7f0000001000, false});  // in the plugin, not loaded yet
  b.put(Alloc{b.next(), heapman::log::HeapKind::kNative, 0x1000, 16, 16, 1, 0});
  b.put(GcBegin{b.next(), 1, 100, -1});
  b.put(GcEnd{b.next(), 1, 100, 0, 10});
  b.put(Alloc{b.next(), heapman::log::HeapKind::kNative, 0x2000, 16, 16, 2, 0});
  b.put(GcBegin{b.next(), 2, 100, -1});
  b.put(GcEnd{b.next(), 2, 100, 0, 10});
  b.put(ModuleLoad{b.next(), "/usr/lib/plugin.so", 0x7f0000000000, 0x10000, {2},
                   {{0, 0x10000, 5}}});
  b.put(GcBegin{b.next(), 3, 100, -1});
  b.put(GcEnd{b.next(), 3, 100, 0, 10});
  writeFile((dir.path / "w.hml").string(), b.finish());

  Replay lazy((dir.path / "w.hml").string(), options(dir.path / "w.hmx", true));
  lazy.seek(lazy.resolve("gc:1"));
  FrameNamer first(lazy.tables(), false);
  first.frames(1);
  CHECK_FALSE(first.namedOutsideModules());  // /bin/game is known
  lazy.seek(lazy.resolve("gc:2"));
  REQUIRE_FALSE(lazy.indexed());
  first.frames(2);
  CHECK(first.namedOutsideModules());
  CHECK(first.frames(2).front().module.empty());

  lazy.completeIndex();
  FrameNamer whole(lazy.tables(), false);
  CHECK(whole.frames(2).front().module == "plugin.so");
  CHECK_FALSE(whole.namedOutsideModules());
}

TEST_CASE("lazy index: the chunks the footer marks as naming code are read on open, so a prefix "
          "names its frames as the whole log does",
          "[replay][index]") {
  // The plugin's load and a Mono method's JIT code come in chunks after the point asked, as
  // above; the footer marks those chunks (format minor 2).
  Dir dir;
  LogBuilder b(2048, heapman::log::Runtime::Kind::kMono);
  b.put(ModuleLoad{b.next(), "/bin/game", 0x400000, 0x10000, {1}, {{0, 0x10000, 5}}});
  b.put(StackNode{1, 0, 0x401000, false});
  b.put(StackNode{2, 0, 0x7f0000001000, false});  // in the plugin, loaded later
  b.put(StackNode{3, 0, 0x40000010, false});      // in JIT code recorded later
  b.put(StackNode{4, 0, 7, true});                 // a managed frame of a method defined later
  b.put(Alloc{b.next(), heapman::log::HeapKind::kNative, 0x1000, 16, 16, 2, 0});
  b.put(Alloc{b.next(), heapman::log::HeapKind::kManaged, 0x2000, 16, 16, 3, 0});
  b.put(Alloc{b.next(), heapman::log::HeapKind::kManaged, 0x3000, 16, 16, 4, 0});
  b.put(GcBegin{b.next(), 1, 100, -1});
  b.put(GcEnd{b.next(), 1, 100, 0, 10});
  b.writer.flush();
  b.put(ModuleLoad{b.next(), "/usr/lib/plugin.so", 0x7f0000000000, 0x10000, {2},
                   {{0, 0x10000, 5}}});
  b.writer.flush();
  b.put(GcBegin{b.next(), 2, 100, -1});
  b.put(GcEnd{b.next(), 2, 100, 0, 10});
  b.writer.flush();
  b.put(MethodDef{7, "Game:Update ()", 0x1234});
  b.put(JitRange{b.next(), 7, 0x40000000, 0x100});
  b.put(GcBegin{b.next(), 3, 100, -1});
  b.put(GcEnd{b.next(), 3, 100, 0, 10});
  const auto bytes = b.finish();
  writeFile((dir.path / "w.hml").string(), bytes);

  Replay eager((dir.path / "w.hml").string(), options(dir.path / "eager.hmx", false));
  REQUIRE(eager.indexed());
  FrameNamer whole(eager.tables(), false);

  Replay lazy((dir.path / "w.hml").string(), options(dir.path / "w.hmx", true));
  REQUIRE(lazy.codeAhead());
  lazy.seek(lazy.resolve("gc:1"));
  REQUIRE_FALSE(lazy.indexed());
  CHECK(lazy.tables().modules.size() == 1);  // the pass itself has read only the first chunk
  FrameNamer ahead(lazy.tables(), false, lazy.codeAhead());
  for (uint32_t node = 1; node <= 4; ++node) {
    INFO("node " << node);
    CHECK(ahead.frames(node).front().function == whole.frames(node).front().function);
    CHECK(ahead.frames(node).front().module == whole.frames(node).front().module);
  }
  CHECK(ahead.frames(2).front().module == "plugin.so");
  CHECK(ahead.frames(3).front().function == "Game:Update ()");
  CHECK(ahead.frames(4).front().function == "Game:Update ()");
  CHECK_FALSE(ahead.namedOutsideModules());

  // A log written before the marks (its footer says nothing of them) reads nothing ahead, and a
  // Mono one is indexed on open: a later JIT range may rename an earlier frame.
  const auto marked = heapman::log::LogReader::fromBytes(bytes, "w.hml");
  REQUIRE(marked.index()->codeMarked);
  heapman::log::MemorySink sink;
  {
    heapman::log::LogWriter copy(sink, marked.header(), LogBuilder::options(2048));
    std::vector<uint8_t> buffer;
    for (const heapman::log::ChunkRef& c : marked.chunks())
      if (c.header.type == static_cast<uint16_t>(heapman::log::ChunkType::kRecords))
        copy.writeRawChunk(c.header.type, marked.payload(c, buffer), c.header.firstSeq,
                           c.header.recordCount);
    copy.finish();
  }
  REQUIRE_FALSE(heapman::log::LogReader::fromBytes(sink.bytes, "old.hml").index()->codeMarked);
  writeFile((dir.path / "old.hml").string(), sink.bytes);
  Replay old((dir.path / "old.hml").string(), options(dir.path / "old.hmx", true));
  CHECK_FALSE(old.codeAhead());
  CHECK(old.indexed());
}
