// Damaged and crafted logs in the engine: what `heapman verify` refuses, queries refuse too (a
// chunk missing, written twice or out of order, an address or stack node id no log holds); a
// corrupt chunk in the middle leaves the chunks before it readable (ReplayOptions::intactPrefix);
// sizes read from the file cannot make the engine allocate beyond what the file holds; a
// cancelled seek leaves a usable replay.
#include <catch2/catch.hpp>

#include <atomic>

#include "heapman/logformat/summary.h"
#include "../logformat/test_support.h"  // formatErrorOf, HandChunk
#include "test_log.h"

using namespace rtest;
using namespace heapman::replay;

namespace {

ReplayOptions quiet(bool intactPrefix = false) {
  ReplayOptions o;
  o.checkpointEvents = 300;
  o.useIndex = false;
  o.notes = nullptr;
  o.intactPrefix = intactPrefix;
  return o;
}

using hmtest::formatErrorOf;

// Copies every chunk of `log` into a new log with the real writer (so every checksum is
// right), writing the chunk numbered `twice` a second time right after itself.
std::vector<uint8_t> withChunkTwice(const std::vector<uint8_t>& log, uint32_t twice) {
  LogReader in = LogReader::fromBytes(log);
  LogBuilder b;
  std::vector<uint8_t> buf;
  for (const ChunkRef& c : in.chunks()) {
    auto raw = in.payload(c, buf);
    for (int i = 0; i < (c.number == twice ? 2 : 1); ++i)
      b.writer.writeRawChunk(c.header.type, raw, c.header.firstSeq, c.header.recordCount);
  }
  return b.finish();
}

// The header of `log` and its chunks but the one numbered `lost`, without footer: the log of a
// recorder that died, with a chunk missing from its middle.
std::vector<uint8_t> withoutChunk(const std::vector<uint8_t>& log, uint32_t lost) {
  LogReader in = LogReader::fromBytes(log);
  auto at = [&](uint64_t offset) { return log.begin() + static_cast<ptrdiff_t>(offset); };
  std::vector<uint8_t> out(log.begin(), at(in.chunks().at(0).offset));
  for (const ChunkRef& c : in.chunks())
    if (c.number != lost) out.insert(out.end(), at(c.offset), at(c.end()));
  return out;
}

// What a query answers over the prefix before the damaged chunk `bad` of `log` (numbered in
// `log`): the damage verify names, the state at its end that of the intact log there.
void checkPrefixAnswer(const std::vector<uint8_t>& log, const std::vector<uint8_t>& intactLog,
                       uint32_t bad, ErrorCode code) {
  LogReader intact = LogReader::fromBytes(intactLog);
  auto verify = formatErrorOf([&] { (void)summarize(LogReader::fromBytes(log)); });
  REQUIRE(verify);
  INFO(verify->what());
  CHECK(verify->code() == code);
  CHECK(verify->chunk() == bad);
  // A strict replay refuses it as verify does; in the queries' mode it answers before it.
  auto strict = formatErrorOf([&] { Replay r(LogReader::fromBytes(log), quiet()); });
  REQUIRE(strict);
  CHECK(strict->code() == code);
  CHECK(strict->chunk() == bad);
  CHECK(strict->offset() == verify->offset());
  Replay r(LogReader::fromBytes(log, "damaged", ReadMode::kIntactPrefix), quiet(true));
  REQUIRE(r.damage());
  CHECK(r.damage()->code() == code);
  CHECK(r.damage()->chunk() == bad);
  CHECK(r.damage()->offset() == verify->offset());
  CHECK(r.reader().chunks().size() == bad);  // every reader of the log stops there too
  uint64_t end = r.resolve("end");
  CHECK(end == intact.chunks().at(bad).header.firstSeq);
  r.seek(end);
  CHECK(engineState(r) == referenceState(intact, end));
}

}  // namespace

TEST_CASE("a chunk missing from a footer-less log: verify and queries say where",
          "[replay][damaged]") {
  const auto good = makeWorkload(5, 20, 150);
  LogReader intact = LogReader::fromBytes(good);
  REQUIRE(intact.chunks().size() > 8);
  REQUIRE(intact.chunks()[6].header.type == static_cast<uint16_t>(ChunkType::kRecords));
  // Chunk 6 lost: chunk 7 takes its place and number, and its records do not continue chunk 5's.
  checkPrefixAnswer(withoutChunk(good, 6), good, 6, ErrorCode::kBadSequence);
}

TEST_CASE("a chunk written twice is refused by queries as by verify", "[replay][damaged]") {
  // A finished log whose footer lists the copy too: the reader refuses it at the copy.
  const auto good = makeWorkload(3, 8, 100);
  auto log = withChunkTwice(good, 2);
  auto strict = formatErrorOf([&] { (void)LogReader::fromBytes(log); });
  REQUIRE(strict);
  CHECK(strict->code() == ErrorCode::kBadSequence);
  CHECK(strict->chunk() == 3);
  CHECK_THAT(strict->what(), Catch::Contains("repeats chunk 2"));
  Replay r(LogReader::fromBytes(log, "twice", ReadMode::kIntactPrefix), quiet(true));
  REQUIRE(r.damage());
  CHECK(r.damage()->code() == ErrorCode::kBadSequence);
  CHECK(r.damage()->chunk() == 3);
  CHECK(r.damage()->offset() == strict->offset());
  LogReader intact = LogReader::fromBytes(good);
  uint64_t end = r.resolve("end");
  CHECK(end == intact.chunks().at(3).header.firstSeq);
  r.seek(end);
  CHECK(engineState(r) == referenceState(intact, end));
}

TEST_CASE("an allocation above 2^48 is a corrupt log for queries as for verify",
          "[replay][damaged]") {
  // Twenty allocations in chunk 0, then chunk 1 with one at `address` and five frame marks.
  auto logWith = [](uint64_t address) {
    LogBuilder b;
    for (uint64_t i = 0; i < 20; ++i)
      b.put(Alloc{b.next(), HeapKind::kNative, 0x10000 + 0x100 * i, 64, 64, 0, 0});
    b.writer.flush();
    b.put(Alloc{b.next(), HeapKind::kNative, address, 64, 64, 0, 0});
    for (uint64_t i = 0; i < 5; ++i) b.put(FrameMark{b.next(), i});
    return b.finish();
  };
  checkPrefixAnswer(logWith(uint64_t{1} << 48), logWith(0x7fff0000), 1, ErrorCode::kBadRecord);
}

TEST_CASE("a stack node id beyond what the log holds is refused, not allocated",
          "[replay][damaged]") {
  // One records chunk: T = {STACK_NATIVE}, M = zz(id - 0), zz(id - parent 0), zz(frame 0x1000).
  // Valid checksums (the real writer); the old engine sized its stack table by the id: 64 GiB.
  const uint64_t id = 0xFFFFFFF0u;
  hmtest::HandChunk c;
  c.stackNode(false, static_cast<int64_t>(id), static_cast<int64_t>(id), 0x1000);
  std::vector<uint8_t> payload = c.payload();
  LogBuilder b;
  b.writer.writeRawChunk(static_cast<uint16_t>(ChunkType::kRecords), payload, 0, 1);
  auto log = b.finish();
  LogReader reader = LogReader::fromBytes(log);
  REQUIRE(reader.chunks().size() == 1);
  auto err = formatErrorOf([&] { Replay r(LogReader::fromBytes(log), quiet()); });
  REQUIRE(err);
  CHECK(err->code() == ErrorCode::kBadRecord);
  CHECK(err->chunk() == 0);
  CHECK(err->offset() == reader.chunks()[0].offset);
  CHECK_THAT(err->what(), Catch::Contains("stack node id 4294967280"));
  // `heapman verify` refuses it alike.
  auto verify = formatErrorOf([&] { (void)summarize(reader); });
  REQUIRE(verify);
  CHECK(verify->code() == err->code());
  CHECK(verify->offset() == err->offset());
  CHECK(std::string(verify->what()) == err->what());
}

TEST_CASE("a corrupt chunk in the middle: queries replay the intact chunks before it",
          "[replay][damaged]") {
  const auto good = makeWorkload(5, 20, 150);
  LogReader intact = LogReader::fromBytes(good);
  REQUIRE(intact.chunks().size() > 8);
  const ChunkRef bad = intact.chunks()[6];
  REQUIRE(bad.header.type == static_cast<uint16_t>(ChunkType::kRecords));

  SECTION("payload byte flipped (found while decoding)") {
    auto log = good;
    log[bad.offset + kChunkHeaderSize + bad.header.storedLength / 2] ^= 0x40;
    CHECK(formatErrorOf([&] { Replay r(LogReader::fromBytes(log), quiet()); }));
    Replay r(LogReader::fromBytes(log), quiet(true));
    REQUIRE(r.damage());
    CHECK(r.damage()->code() == ErrorCode::kBadChecksum);
    CHECK(r.damage()->chunk() == 6);
    CHECK(r.damage()->offset() == bad.offset);
    CHECK(r.tables().endSeq <= bad.header.firstSeq);
    uint64_t end = r.resolve("end");
    r.seek(end);
    CHECK(engineState(r) == referenceState(intact, end));
    // Every GC before the damage, as in the intact log.
    Replay whole(LogReader::fromBytes(good), quiet());
    size_t n = 0;
    for (const GcRecord& g : whole.tables().gcs) n += g.ended && g.endSeq < bad.header.firstSeq;
    CHECK(r.tables().gcs.size() == n);
  }
  SECTION("chunk header magic damaged (found by the scan)") {
    auto log = good;
    log[bad.offset] ^= 0x01;
    Replay r(LogReader::fromBytes(log, "damaged", ReadMode::kIntactPrefix), quiet(true));
    REQUIRE(r.damage());
    CHECK(r.damage()->code() == ErrorCode::kBadChunkHeader);
    CHECK(r.damage()->chunk() == 6);
    CHECK(r.damage()->offset() == bad.offset);
    CHECK(r.reader().chunks().size() == 6);
    uint64_t end = r.resolve("end");
    CHECK(end == bad.header.firstSeq);
    r.seek(end);
    CHECK(engineState(r) == referenceState(intact, end));
    // The strict reader (verify, info) still refuses the log.
    auto strict = formatErrorOf([&] { (void)LogReader::fromBytes(log); });
    REQUIRE(strict);
    CHECK(strict->chunk() == 6);
  }
}

TEST_CASE("a cancelled seek throws Interrupted and the next seek is exact", "[replay][damaged]") {
  const auto log = makeWorkload(9, 20, 150);
  std::atomic<bool> cancel{false};
  ReplayOptions o = quiet();
  o.cancel = &cancel;
  Replay r(LogReader::fromBytes(log), o);
  uint64_t mid = r.resolve("gc:10"), end = r.resolve("end");
  r.seek(mid);
  cancel = true;
  CHECK_THROWS_AS(r.seek(end), Interrupted);
  cancel = false;
  r.seek(r.resolve("gc:12"));
  CHECK(engineState(r) == referenceState(r.reader(), r.resolve("gc:12")));
  r.seek(end);
  CHECK(engineState(r) == referenceState(r.reader(), end));
}
