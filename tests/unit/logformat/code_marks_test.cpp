// The footer's code marks (format minor 2): which records chunks hold what frame names depend on
// (ModuleLoad, JitRange, MethodDef). A lazily indexed replay reads those chunks first, so a mark
// that lies would change an answer: verify refuses it, as every query that reads the chunk does.
#include <catch2/catch.hpp>
#include <xxhash.h>

#include "capnp_codec.h"
#include "test_support.h"

using namespace heapman::log;
using namespace hmtest;

namespace {

// Three records chunks: allocations only; a module's load; a method and its JIT code. Then a RAM
// dump chunk.
Bytes threeChunks() {
  return writeLog(testHeader(), {}, [](LogWriter& w) {
    w.write(Alloc{ev(1), HeapKind::kNative, 0x1000, 16, 16, 0, 0});
    w.flush();
    w.write(Alloc{ev(2), HeapKind::kNative, 0x2000, 16, 16, 0, 0});
    w.write(ModuleLoad{ev(3), "/usr/lib/plugin.so", 0x7f0000000000, 0x10000, {2}, {}});
    w.flush();
    w.write(MethodDef{7, "Game:Update ()", 0x1234});
    w.write(JitRange{ev(4), 7, 0x40000000, 0x100});
    w.write(GcBegin{ev(5), 1, 4096, -1});
    w.write(GcEnd{ev(6), 1, 4096, 0, 5});
    w.flush();
    w.write(RamSegment{SegmentKind::kObject, 1, 0x1000, 4, 0, true, {1, 2, 3, 4}});
  });
}

// The log with its footer index replaced by `idx` (chunks, trailer and all consistent).
Bytes withFooter(const Bytes& log, const IndexData& idx) {
  const uint64_t at = loadLe(log.data() + log.size() - kTrailerSize, 8);
  Bytes out(log.begin(), log.begin() + static_cast<ptrdiff_t>(at));
  std::vector<uint8_t> body = detail::encodeIndex(idx);
  uint8_t h[kChunkHeaderSize] = {};
  std::memcpy(h, kChunkMagic, 4);
  storeLe(h + 4, static_cast<uint16_t>(ChunkType::kIndex), 2);
  storeLe(h + 8, body.size(), 4);
  storeLe(h + 12, body.size(), 4);
  storeLe(h + 16, loadLe(log.data() + at + 16, 8), 8);
  storeLe(h + 24, idx.chunks.size(), 4);
  storeLe(h + 28, static_cast<uint32_t>(XXH3_64bits(h, 28)), 4);
  storeLe(h + 32, XXH3_64bits(body.data(), body.size()), 8);
  out.insert(out.end(), h, h + kChunkHeaderSize);
  out.insert(out.end(), body.begin(), body.end());
  uint8_t trailer[kTrailerSize];
  storeLe(trailer, at, 8);
  std::memcpy(trailer + 8, kFooterMagic, 8);
  out.insert(out.end(), trailer, trailer + kTrailerSize);
  return out;
}

}  // namespace

TEST_CASE("code marks: the footer marks exactly the chunks holding ModuleLoad, JitRange or "
          "MethodDef records",
          "[index][marks]") {
  Bytes log = threeChunks();
  LogReader r = LogReader::fromBytes(log);
  REQUIRE(r.index().has_value());
  CHECK(r.minor() == 2);
  CHECK(r.index()->codeMarked);
  std::vector<bool> marks;
  for (const IndexEntry& e : r.index()->chunks) marks.push_back(e.namesCode);
  CHECK(marks == std::vector<bool>{false, true, true, false});
  CHECK_NOTHROW(summarize(r));
}

TEST_CASE("code marks: a records chunk written raw leaves the log unmarked", "[index][marks]") {
  Bytes log = writeLog(testHeader(), {}, [](LogWriter& w) {
    w.write(ModuleLoad{ev(0), "/bin/game", 0x400000, 0x1000, {}, {}});
    HandChunk h;
    h.extended(static_cast<uint32_t>(ExtKind::kFrameMark), true, packedFrameMark(1));
    w.writeRawChunk(static_cast<uint16_t>(ChunkType::kRecords), h.payload(), 1, 1);
  });
  LogReader r = LogReader::fromBytes(log);
  REQUIRE(r.index().has_value());
  CHECK_FALSE(r.index()->codeMarked);
  CHECK_NOTHROW(summarize(r));
}

TEST_CASE("code marks: a mark that disagrees with the chunk's records is corruption verify names",
          "[index][marks]") {
  const Bytes log = threeChunks();
  const IndexData good = *LogReader::fromBytes(log).index();
  const LogReader clean = LogReader::fromBytes(log);

  SECTION("a chunk marked that names no code") {
    IndexData bad = good;
    bad.chunks[0].namesCode = true;
    LogReader r = LogReader::fromBytes(withFooter(log, bad));
    REQUIRE(r.end().complete);  // the footer still matches the chunk headers
    auto e = formatErrorOf([&] { summarize(r); });
    REQUIRE(e);
    INFO(describe(*e));
    CHECK(e->code() == ErrorCode::kBadFooter);
    CHECK(e->chunk() == 0);
    CHECK(e->offset() == clean.chunks()[0].offset);
    CHECK_THAT(e->what(), Catch::Contains("marks this chunk as naming code") &&
                              Catch::Contains("holds none"));
  }
  SECTION("a chunk holding a ModuleLoad left unmarked") {
    IndexData bad = good;
    bad.chunks[1].namesCode = false;
    LogReader r = LogReader::fromBytes(withFooter(log, bad));
    auto e = formatErrorOf([&] { summarize(r); });
    REQUIRE(e);
    INFO(describe(*e));
    CHECK(e->code() == ErrorCode::kBadFooter);
    CHECK(e->chunk() == 1);
    CHECK_THAT(e->what(), Catch::Contains("does not mark this chunk"));
  }
  SECTION("a RAM dump chunk marked: the footer does not match the chunks") {
    IndexData bad = good;
    bad.chunks[3].namesCode = true;
    auto e = formatErrorOf([&] { LogReader::fromBytes(withFooter(log, bad)); });
    REQUIRE(e);
    CHECK(e->code() == ErrorCode::kBadFooter);
    CHECK_THAT(e->what(), Catch::Contains("does not match the chunks"));
  }
  SECTION("an older footer without marks reads and verifies as before") {
    IndexData old = good;
    old.codeMarked = false;
    for (IndexEntry& c : old.chunks) c.namesCode = false;
    LogReader r = LogReader::fromBytes(withFooter(log, old));
    REQUIRE(r.end().complete);
    CHECK_FALSE(r.index()->codeMarked);
    CHECK(summarize(r).events == summarize(clean).events);
  }
}
