// RAM dump segments: round trip, content deduplication by XXH3-64, splitting of large segments.
#include <xxhash.h>

#include <map>

#include "test_support.h"

using namespace hmtest;


TEST_CASE("RAM segments round-trip with every kind", "[ram]") {
  const std::vector<RamSegment> in = {
      {SegmentKind::kObject, 1, 0x1000, 48, XXH3_64bits(noise(48, 1).data(), 48), true, noise(48, 1)},
      {SegmentKind::kStaticRoot, 1, 0x60'0000, 5, XXH3_64bits(noise(5, 2).data(), 5), true, noise(5, 2)},
      {SegmentKind::kThreadStack, 2, 0xffff'ffff'ffff'fff0ull, 16,
       XXH3_64bits(noise(16, 3).data(), 16), true, noise(16, 3)},
      {SegmentKind::kOther, 0xffff'ffffu, 0x10, 1, XXH3_64bits("\x7f", 1), true, {0x7f}},
      // Given without bytes (the caller knows they were dumped before): kept as is.
      {SegmentKind::kObject, 3, 0x2000, 48, XXH3_64bits(noise(48, 1).data(), 48), false, {}},
  };
  Bytes log = writeLog(testHeader(), {}, [&](LogWriter& w) {
    for (const RamSegment& s : in) w.write(s);
  });
  LogReader r = LogReader::fromBytes(log);
  REQUIRE(r.chunks().size() == 1);
  CHECK(r.chunks()[0].header.type == static_cast<uint16_t>(ChunkType::kRamDump));
  CHECK(r.chunks()[0].header.recordCount == in.size());
  CHECK(r.index()->chunks.at(0).gcNumbers == std::vector<uint32_t>{1, 2, 0xffff'ffffu, 3});
  const std::vector<RamSegment> got = r.ramSegments(r.chunks()[0]);
  REQUIRE(got.size() == in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    INFO("segment " << i);
    CHECK(got[i] == in[i]);
  }
  LogSummary s = summarize(r);
  CHECK(s.ramChunks == 1);
  CHECK(s.ramSegments == 5);
  CHECK(s.ramBytes == 48 + 5 + 16 + 1 + 48);
  CHECK(s.ramDedupedSegments == 1);
}

TEST_CASE("identical RAM contents are stored once", "[ram]") {
  const Bytes a = noise(200, 11), b = noise(200, 12);
  const uint64_t ha = XXH3_64bits(a.data(), a.size()), hb = XXH3_64bits(b.data(), b.size());
  WriterOptions o;
  o.ramChunkBytes = 256;  // the duplicate lands in a later chunk than the original
  Bytes log = writeLog(testHeader(), o, [&](LogWriter& w) {
    w.write(RamSegment{SegmentKind::kObject, 1, 0x1000, 200, 0, true, a});
    w.write(RamSegment{SegmentKind::kObject, 1, 0x2000, 200, 0, true, b});
    w.write(RamSegment{SegmentKind::kStaticRoot, 2, 0x9000, 200, 0, true, a});  // same as a
    w.write(RamSegment{SegmentKind::kObject, 3, 0x1000, 200, 0, true, a});      // again
  });
  LogReader r = LogReader::fromBytes(log);
  const std::vector<RamSegment> got = allSegments(r);
  const std::vector<RamSegment> want = {
      {SegmentKind::kObject, 1, 0x1000, 200, ha, true, a},
      {SegmentKind::kObject, 1, 0x2000, 200, hb, true, b},
      {SegmentKind::kStaticRoot, 2, 0x9000, 200, ha, false, {}},
      {SegmentKind::kObject, 3, 0x1000, 200, ha, false, {}},
  };
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    INFO("segment " << i);
    CHECK(got[i] == want[i]);
  }
  REQUIRE(r.chunks().size() == 2);  // a and b fill the first chunk; the duplicates go in the next
  CHECK(r.chunks()[0].header.recordCount == 2);
  LogSummary s = summarize(r);
  CHECK(s.ramSegments == 4);
  CHECK(s.ramDedupedSegments == 2);
  CHECK(s.ramBytes == 800);
}

TEST_CASE("a segment larger than maxSegmentBytes is split into pieces", "[ram]") {
  WriterOptions o;
  o.maxSegmentBytes = 1000;
  o.ramChunkBytes = 1500;
  const Bytes big = noise(3500, 21);
  const uint64_t base = 0x7f00'0000'0000ull;
  Bytes log = writeLog(testHeader(), o, [&](LogWriter& w) {
    w.write(RamSegment{SegmentKind::kThreadStack, 4, base, big.size(), 0, true, big});
  });
  LogReader r = LogReader::fromBytes(log);
  const std::vector<RamSegment> got = allSegments(r);
  REQUIRE(got.size() == 4);
  const uint64_t lengths[] = {1000, 1000, 1000, 500};
  Bytes concat;
  uint64_t off = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("piece " << i);
    CHECK(got[i].kind == SegmentKind::kThreadStack);
    CHECK(got[i].gcNumber == 4);
    CHECK(got[i].address == base + off);
    CHECK(got[i].length == lengths[i]);
    CHECK(got[i].hasBytes);
    REQUIRE(got[i].bytes.size() == lengths[i]);
    CHECK(got[i].hash == XXH3_64bits(big.data() + off, lengths[i]));
    concat.insert(concat.end(), got[i].bytes.begin(), got[i].bytes.end());
    off += lengths[i];
  }
  CHECK(concat == big);
  // A piece costs 20 bytes of framing plus its bytes: pieces 1+2 and 3+4 fill 1500-byte chunks.
  REQUIRE(r.chunks().size() == 2);
  CHECK(r.chunks()[0].header.recordCount == 2);
  CHECK(r.chunks()[1].header.recordCount == 2);
}

TEST_CASE("split pieces with repeated contents deduplicate against each other", "[ram]") {
  WriterOptions o;
  o.maxSegmentBytes = 64;
  Bytes zeros(64 * 3 + 10, 0);
  Bytes log = writeLog(testHeader(), o, [&](LogWriter& w) {
    w.write(RamSegment{SegmentKind::kObject, 1, 0x1000, zeros.size(), 0, true, zeros});
  });
  LogReader r = LogReader::fromBytes(log);
  const std::vector<RamSegment> got = allSegments(r);
  REQUIRE(got.size() == 4);
  const uint64_t h64 = XXH3_64bits(zeros.data(), 64);
  CHECK(got[0] == RamSegment{SegmentKind::kObject, 1, 0x1000, 64, h64, true, Bytes(64, 0)});
  CHECK(got[1] == RamSegment{SegmentKind::kObject, 1, 0x1040, 64, h64, false, {}});
  CHECK(got[2] == RamSegment{SegmentKind::kObject, 1, 0x1080, 64, h64, false, {}});
  CHECK(got[3] == RamSegment{SegmentKind::kObject, 1, 0x10c0, 10, XXH3_64bits(zeros.data(), 10),
                             true, Bytes(10, 0)});
  // Resolving the deduplicated pieces by hash restores the input.
  std::map<uint64_t, Bytes> byHash;
  Bytes concat;
  for (const RamSegment& s : got) {
    if (s.hasBytes) byHash[s.hash] = s.bytes;
    REQUIRE(byHash.count(s.hash) == 1);
    concat.insert(concat.end(), byHash[s.hash].begin(), byHash[s.hash].end());
  }
  CHECK(concat == zeros);
}

TEST_CASE("a RAM segment whose bytes do not match its length stops the writer", "[ram]") {
  MemorySink sink;
  LogWriter w(sink, testHeader());
  w.write(RamSegment{SegmentKind::kObject, 1, 0x1000, 10, 0, true, Bytes(9, 1)});
  CHECK_FALSE(w.ok());
  CHECK(w.error() == "RAM segment length does not match its bytes");
  const size_t before = sink.bytes.size();
  w.write(Alloc{ev(1), HeapKind::kNative, 0x10, 1, 1, 0, 0});
  w.finish();
  CHECK(sink.bytes.size() == before);
}

// A zero-length segment has a null data pointer; it must still be stored, not deduplicated.
TEST_CASE("a fresh zero-length RAM segment keeps hasBytes", "[ram]") {
  const RamSegment empty{SegmentKind::kThreadStack, 2, 0x7ffd'0000, 0, XXH3_64bits(nullptr, 0), true, {}};
  Bytes log = writeLog(testHeader(), {}, [&](LogWriter& w) { w.write(empty); });
  LogReader r = LogReader::fromBytes(log);
  const std::vector<RamSegment> got = allSegments(r);
  REQUIRE(got.size() == 1);
  CHECK(got[0].hasBytes);
  CHECK(got[0] == empty);
  CHECK(summarize(r).ramDedupedSegments == 0);
}
