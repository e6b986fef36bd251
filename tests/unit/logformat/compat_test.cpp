// Compatibility gates: major/minor versions, unknown chunk types, unknown extended record kinds,
// reserved tags and other records a reader must refuse.
#include <xxhash.h>

#include "test_support.h"

using namespace hmtest;

namespace {

Bytes withVersion(Bytes log, uint16_t major, uint16_t minor) {
  storeLe(log.data() + 8, major, 2);
  storeLe(log.data() + 10, minor, 2);
  return log;
}

Bytes sampleLog() {
  return writeLog(testHeader(), {}, [](LogWriter& w) {
    w.write(LogString{1, "boot"});
    w.write(Alloc{ev(0, 5), HeapKind::kNative, 0x1000, 10, 16, 1, 0});
    w.write(CustomEvent{ev(1, 6), 1, {}});
    w.write(Free{ev(2, 7), HeapKind::kNative, 0x1000});
  });
}

// The raw payload of the only records chunk of a log written uncompressed.
Bytes onlyChunkPayload(const Bytes& log) {
  LogReader r = LogReader::fromBytes(log);
  REQUIRE(r.chunks().size() == 1);
  std::vector<uint8_t> buf;
  auto raw = r.payload(r.chunks()[0], buf);
  return Bytes(raw.begin(), raw.end());
}

// A records chunk payload holding: ALLOC (seq s) at 0x1000, an EXTENDED record of unknown kind
// 99 with 5 junk body bytes (an event when `event`), ALLOC at 0x2000. Built from a writer chunk
// of [ALLOC s, FrameMark s+1, ALLOC s+2] by replacing the FrameMark's EXTENDED record, which
// (no time, thread or sequence changes) is all of stream M.
Bytes payloadWithUnknownExtended(uint64_t s, bool event) {
  WriterOptions o;
  o.compress = false;
  Bytes log = writeLog(Header{}, o, [&](LogWriter& w) {
    w.write(Alloc{ev(s), HeapKind::kNative, 0x1000, 16, 16, 1, 0});
    w.write(FrameMark{ev(s + 1), 5});
    w.write(Alloc{ev(s + 2), HeapKind::kNative, 0x2000, 32, 32, 1, 0});
  });
  HandChunk h = HandChunk::parse(onlyChunkPayload(log));
  REQUIRE(h.t.size() == 3);
  REQUIRE(h.t[1] == tag::kExtended);
  HandChunk frame;
  frame.extended(static_cast<uint32_t>(ExtKind::kFrameMark), true, packedFrameMark(5));
  REQUIRE(h.m == frame.m);
  HandChunk unknown;
  unknown.extended(99, event, {0xde, 0xad, 0xbe, 0xef, 0x00});
  REQUIRE(unknown.m == Bytes{99, static_cast<uint8_t>(event ? 2 : 0), 5, 0xde, 0xad, 0xbe, 0xef, 0x00});
  h.m = unknown.m;
  return h.payload();
}

// Re-seals chunk `c` after its header bytes were edited: recomputes the header check.
void resealChunkHeader(Bytes& log, uint64_t offset) {
  storeLe(log.data() + offset + 28, static_cast<uint32_t>(XXH3_64bits(log.data() + offset, 28)), 4);
}

}  // namespace

TEST_CASE("a newer major version is refused with advice to upgrade", "[compat]") {
  const uint16_t major = GENERATE(static_cast<uint16_t>(kFormatMajor + 1), uint16_t{0xffff});
  auto err = formatErrorOf([&] { LogReader::fromBytes(withVersion(sampleLog(), major, 0)); });
  REQUIRE(err);
  CHECK(err->code() == ErrorCode::kNewerVersion);
  CHECK(err->offset() == 8);
  CHECK(err->chunk() == FormatError::kNoChunk);
  CHECK_THAT(err->what(), Catch::Contains("log format " + std::to_string(major) + ".0") &&
                              Catch::Contains("upgrade heapman"));
}

TEST_CASE("a major version older than supported is refused", "[compat]") {
  auto err = formatErrorOf([&] { LogReader::fromBytes(withVersion(sampleLog(), 0, 3)); });
  REQUIRE(err);
  CHECK(err->code() == ErrorCode::kOlderVersion);
  CHECK(err->offset() == 8);
  CHECK_THAT(err->what(), Catch::Contains("0.3") && Catch::Contains("older heapman"));
}

TEST_CASE("a newer minor version still reads", "[compat]") {
  const uint16_t minor = GENERATE(static_cast<uint16_t>(kFormatMinor + 1), uint16_t{0xffff});
  const Bytes log = sampleLog();
  LogReader plain = LogReader::fromBytes(log);
  LogReader r = LogReader::fromBytes(withVersion(log, kFormatMajor, minor));
  CHECK(r.major() == kFormatMajor);
  CHECK(r.minor() == minor);
  CHECK(r.end().complete);
  CHECK(r.header() == plain.header());
  requireSameRecords(decodeAll(r), decodeAll(plain));
  CHECK(summarize(r).events == 3);
}

TEST_CASE("an unknown chunk type is skipped by its length", "[compat]") {
  const bool finish = GENERATE(true, false);
  INFO((finish ? "with footer" : "without footer (scanned)"));
  const Bytes junk = noise(100, 77);
  Bytes log = writeLog(testHeader(), {}, [&](LogWriter& w) {
    w.write(FrameMark{ev(1, 10), 1});
    w.write(Alloc{ev(2, 20), HeapKind::kGcNormal, 0x1000, 24, 32, 0, 0});
    w.writeRawChunk(77, junk, 3, 9);
    w.write(Free{ev(3, 30), HeapKind::kGcNormal, 0x1000});
    w.write(FrameMark{ev(4, 40), 2});
  }, finish);
  LogReader r = LogReader::fromBytes(log);
  CHECK(r.end().complete == finish);
  REQUIRE(r.chunks().size() == 3);
  CHECK(r.chunks()[0].known());
  CHECK(r.chunks()[1].header.type == 77);
  CHECK_FALSE(r.chunks()[1].known());
  CHECK(r.chunks()[1].header.storedLength == junk.size());
  CHECK(r.chunks()[2].header.type == 1);
  requireSameRecords(decodeAll(r), {
      FrameMark{ev(1, 10), 1},
      Alloc{ev(2, 20), HeapKind::kGcNormal, 0x1000, 24, 32, 0, 0},
      Free{ev(3, 30), HeapKind::kGcNormal, 0x1000},
      FrameMark{ev(4, 40), 2},
  });
  LogSummary s = summarize(r);
  CHECK(s.chunks == 3);
  CHECK(s.recordChunks == 2);
  CHECK(s.unknownChunks == 1);
  CHECK(s.events == 4);
  CHECK(s.lastSeq == 4);
}

TEST_CASE("an unknown extended record kind is skipped and keeps its sequence number", "[compat]") {
  const bool finish = GENERATE(true, false);
  const bool event = GENERATE(true, false);
  INFO((finish ? "with footer" : "without footer") << ", unknown record is "
                                                   << (event ? "an event" : "a definition"));
  const uint64_t s = 50;
  const uint64_t second = event ? s + 2 : s + 1;  // the unknown event took s + 1
  Bytes log = writeLog(testHeader(), {}, [&](LogWriter& w) {
    w.write(FrameMark{ev(s - 2), 1});
    w.write(Alloc{ev(s - 1), HeapKind::kNative, 0x500, 8, 8, 0, 0});
    w.writeRawChunk(static_cast<uint16_t>(ChunkType::kRecords), payloadWithUnknownExtended(s, event), s, 3);
    // The next chunk continues the raw one's sequence numbers, the unknown event's included.
    w.write(Alloc{ev(second + 1), HeapKind::kNative, 0x3000, 8, 8, 0, 0});
  }, finish);
  LogReader r = LogReader::fromBytes(log);
  REQUIRE(r.chunks().size() == 3);
  requireSameRecords(decodeAll(r), {
      FrameMark{ev(s - 2), 1},
      Alloc{ev(s - 1), HeapKind::kNative, 0x500, 8, 8, 0, 0},
      Alloc{ev(s), HeapKind::kNative, 0x1000, 16, 16, 1, 0},
      Alloc{ev(second), HeapKind::kNative, 0x2000, 32, 32, 1, 0},
      Alloc{ev(second + 1), HeapKind::kNative, 0x3000, 8, 8, 0, 0},
  });
  LogSummary sum = summarize(r);
  CHECK(sum.events == 5);  // the unknown record is no known event
  CHECK(sum.records[0] == 4);
  CHECK(sum.firstSeq == s - 2);
  CHECK(sum.lastSeq == second + 1);
}

TEST_CASE("a reserved record tag makes the chunk undecodable", "[compat]") {
  HandChunk h;
  h.extended(static_cast<uint32_t>(ExtKind::kFrameMark), true, packedFrameMark(1));
  h.t.push_back(tag::kFirstReserved);
  Bytes log = writeLog(testHeader(), {}, [&](LogWriter& w) {
    w.write(FrameMark{ev(1), 1});
    w.writeRawChunk(static_cast<uint16_t>(ChunkType::kRecords), h.payload(), 2, 2);
  });
  LogReader r = LogReader::fromBytes(log);  // the chunk list is fine; its records are not
  REQUIRE(r.chunks().size() == 2);
  const ChunkRef bad = r.chunks()[1];
  for (int pass = 0; pass < 2; ++pass) {
    auto err = formatErrorOf([&] {
      if (pass == 0)
        decodeAll(r);
      else
        summarize(r);
    });
    REQUIRE(err);
    INFO(describe(*err));
    CHECK(err->code() == ErrorCode::kBadRecord);
    CHECK(err->chunk() == 1);
    CHECK(err->offset() == bad.offset);
    CHECK_THAT(err->what(),
               Catch::StartsWith("chunk 1 at byte " + std::to_string(bad.offset) + ": ") &&
                   Catch::Contains("unknown record tag " + std::to_string(tag::kFirstReserved)) &&
                   Catch::Contains("upgrade heapman"));
  }
}

TEST_CASE("malformed records chunks are refused naming the chunk", "[compat]") {
  struct Case {
    const char* name;
    Bytes payload;
    uint32_t count;
    const char* message;
  };
  HandChunk ok;
  ok.extended(static_cast<uint32_t>(ExtKind::kFrameMark), true, packedFrameMark(1));
  HandChunk contradicts;  // a FrameMark claiming to be a definition
  contradicts.extended(static_cast<uint32_t>(ExtKind::kFrameMark), false, packedFrameMark(1));
  HandChunk badBody;  // a known kind whose body is not a Cap'n Proto message
  badBody.extended(static_cast<uint32_t>(ExtKind::kFrameMark), true, {0xff, 0xff});
  Bytes trailing = ok.payload();
  trailing.push_back(0x00);
  Bytes overlong = ok.payload();
  overlong[0] = 0x7f;  // T claims 127 bytes
  Bytes cutBody = ok.payload();
  cutBody.pop_back();
  const std::vector<Case> cases = {
      {"count mismatch", ok.payload(), 2, "chunk declares 2 records but holds 1"},
      {"event flag contradicts kind", contradicts.payload(), 1, "event flag contradicts its kind"},
      {"undecodable body", badBody.payload(), 1, "extended record 9"},
      {"bytes after the last record", trailing, 1, "streams hold bytes after the last record"},
      {"stream lengths too long", overlong, 1, "stream lengths exceed the payload"},
      {"body cut short", cutBody, 1, "records do not decode"},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    Bytes log = writeLog(testHeader(), {}, [&](LogWriter& w) {
      w.write(FrameMark{ev(0), 1});
      w.flush();
      w.write(FrameMark{ev(1), 1});
      w.writeRawChunk(static_cast<uint16_t>(ChunkType::kRecords), c.payload, 2, c.count);
    });
    LogReader r = LogReader::fromBytes(log);
    REQUIRE(r.chunks().size() == 3);
    auto err = formatErrorOf([&] { summarize(r); });
    REQUIRE(err);
    INFO(describe(*err));
    CHECK(err->code() == ErrorCode::kBadRecord);
    CHECK(err->chunk() == 2);
    CHECK(err->offset() == r.chunks()[2].offset);
    CHECK_THAT(err->what(), Catch::Contains(c.message));
  }
}

TEST_CASE("a chunk with unknown flags is refused", "[compat]") {
  Bytes log = sampleLog();
  const uint64_t off = firstChunkOffset(log);
  storeLe(log.data() + off + 6, loadLe(log.data() + off + 6, 2) | 0x4, 2);
  resealChunkHeader(log, off);
  auto err = formatErrorOf([&] { LogReader::fromBytes(log); });
  REQUIRE(err);
  CHECK(err->code() == ErrorCode::kBadChunkHeader);
  CHECK(err->chunk() == 0);
  CHECK(err->offset() == off);
  CHECK_THAT(err->what(), Catch::Contains("unknown chunk flags"));
}

TEST_CASE("a chunk claiming more than kMaxChunkRaw is refused before it is read", "[compat]") {
  Bytes log = sampleLog();
  const uint64_t off = firstChunkOffset(log);
  storeLe(log.data() + off + 12, uint64_t{kMaxChunkRaw} + 1, 4);
  resealChunkHeader(log, off);
  auto err = formatErrorOf([&] { LogReader::fromBytes(log); });
  REQUIRE(err);
  CHECK(err->code() == ErrorCode::kBadChunkHeader);
  CHECK(err->chunk() == 0);
  CHECK_THAT(err->what(), Catch::Contains("chunk lengths are inconsistent"));
}
