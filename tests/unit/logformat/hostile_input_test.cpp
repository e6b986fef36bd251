// Inputs built to make the reader spend: a tiny message that declares a huge segment, a chunk
// that claims an impossible decompressed size; and text with NUL bytes, which must survive.
#include <xxhash.h>

#include "alloc_tracker.h"
#include "test_support.h"

namespace hmtest {
namespace {

// A log whose one records chunk holds one EXTENDED LogString whose packed body is `body`.
Bytes logWithBody(const Bytes& body) {
  HandChunk h;
  h.extended(static_cast<uint32_t>(ExtKind::kString), false, body);
  Bytes payload = h.payload();
  return writeLog(testHeader(), {}, [&](LogWriter& w) {
    w.writeRawChunk(static_cast<uint16_t>(ChunkType::kRecords), payload, 0, 1);
  });
}

TEST_CASE("a compressible message declaring a huge segment is refused without allocating it",
          "[hostile]") {
  // Packed segment table word: 1 segment of 16 000 000 words (128 MB; tag 0x60: bytes 5 and 6
  // follow), within 16 words per body byte, then 1 MB of cheap words (tag 0x01, one byte each):
  // LZ4 shrinks the body to a few KB. The old reader allocated the declared 128 MB up front.
  Bytes body = {0x60, 0x24, 0xF4};
  for (int i = 0; i < 500'000; ++i) body.insert(body.end(), {0x01, 0x01});
  Bytes log = logWithBody(body);
  CHECK(log.size() < 20'000);
  AllocTrack track;
  auto err = formatErrorOf([&] { readAndSummarize(log); });
  REQUIRE(err);
  CHECK(err->code() == ErrorCode::kBadRecord);
  CHECK(err->chunk() == 0);
  CHECK(track.largest() < (8u << 20));  // what the words really are: 4 MB
}

TEST_CASE("zero runs cannot unpack past 16 words per packed byte", "[hostile]") {
  // A segment table declaring 16 M words (128 MB), then zero-word runs (tag 0x00, count 255:
  // 2 KiB each from 2 bytes) far beyond the 16 words per packed byte the reader allows.
  Bytes body = {0xF0, 0x00, 0x00, 0x00, 0x01};
  for (int i = 0; i < 2000; ++i) body.insert(body.end(), {0x00, 0xFF});
  Bytes log = logWithBody(body);
  AllocTrack track;
  auto err = formatErrorOf([&] { readAndSummarize(log); });
  REQUIRE(err);
  CHECK(err->code() == ErrorCode::kBadRecord);
  CHECK(track.largest() < (1u << 20));  // the old reader asked for 128 MB here
}

TEST_CASE("a chunk claiming more than LZ4 can expand is refused before allocating", "[hostile]") {
  Bytes log = writeLog(testHeader(), {}, [](LogWriter& w) {
    for (uint64_t i = 0; i < 2000; ++i)
      w.write(Alloc{ev(i), HeapKind::kNative, 0x1000 + 32 * i, 24, 24, 1, 0});
  });
  uint64_t off = firstChunkOffset(log);
  uint8_t* h = log.data() + off;
  REQUIRE((loadLe(h + 6, 2) & kChunkFlagLz4) != 0);
  uint64_t stored = loadLe(h + 8, 4);
  storeLe(h + 12, stored * 255 + 17, 4);  // rawLength just past LZ4's limit
  storeLe(h + 28, static_cast<uint32_t>(XXH3_64bits(h, 28)), 4);  // a consistent header check
  AllocTrack track;
  auto err = formatErrorOf([&] { readAndSummarize(log); });
  REQUIRE(err);
  CHECK(err->code() == ErrorCode::kBadChunkHeader);
  CHECK(err->chunk() == 0);
  CHECK(err->offset() == off);
  CHECK(track.largest() < stored * 255);
}

// Counts and lengths read from a records chunk with valid checksums (the real writer's), each
// claiming far more than the chunk holds: refused naming the chunk and its offset, and nothing
// near the claimed size is allocated.
TEST_CASE("counts and lengths beyond the chunk are refused without allocating", "[hostile]") {
  auto check = [](const HandChunk& h, const char* what) {
    Bytes payload = h.payload();
    Bytes log = writeLog(testHeader(), {}, [&](LogWriter& w) {
      w.writeRawChunk(static_cast<uint16_t>(ChunkType::kRecords), payload, 0, 1);
    });
    LogReader reader = LogReader::fromBytes(log);
    REQUIRE(reader.chunks().size() == 1);
    AllocTrack track;
    auto err = formatErrorOf([&] { (void)summarize(reader); });
    REQUIRE(err);
    CHECK(err->code() == ErrorCode::kBadRecord);
    CHECK(err->chunk() == 0);
    CHECK(err->offset() == reader.chunks()[0].offset);
    CHECK_THAT(err->what(), Catch::Contains(what));
    CHECK(track.largest() < (1u << 20));
  };
  SECTION("a collected set of 2^40 addresses") {
    HandChunk h;
    h.t.push_back(tag::kCollected);
    HandChunk::varint(h.m, 1);
    HandChunk::varint(h.m, uint64_t{1} << 40);
    h.m.insert(h.m.end(), 64, 0x01);
    check(h, "collected count too large");
  }
  SECTION("an extended record of 2^40 bytes") {
    HandChunk h;
    h.t.push_back(tag::kExtended);
    HandChunk::varint(h.m, static_cast<uint32_t>(ExtKind::kString));
    HandChunk::varint(h.m, 0);
    HandChunk::varint(h.m, uint64_t{1} << 40);
    h.m.insert(h.m.end(), 64, 0x00);
    check(h, "length runs past end of stream");
  }
  SECTION("stream lengths beyond the payload") {
    HandChunk h;
    h.time(5);
    Bytes payload;
    HandChunk::varint(payload, uint64_t{1} << 40);  // T
    HandChunk::varint(payload, 0);
    HandChunk::varint(payload, 0);
    payload.push_back(tag::kTime);
    Bytes log = writeLog(testHeader(), {}, [&](LogWriter& w) {
      w.writeRawChunk(static_cast<uint16_t>(ChunkType::kRecords), payload, 0, 1);
    });
    auto err = formatErrorOf([&] { readAndSummarize(log); });
    REQUIRE(err);
    CHECK(err->code() == ErrorCode::kBadRecord);
    CHECK(err->chunk() == 0);
    CHECK_THAT(err->what(), Catch::Contains("stream lengths exceed the payload"));
  }
}

TEST_CASE("text with NUL bytes keeps its full length", "[hostile][roundtrip]") {
  using namespace std::string_literals;
  Header header = testHeader();
  header.executable = "/games/a\0b"s;
  header.commandLine = {"x\0y\0"s, "\0"s};
  header.options = {{"k\0"s, "\0v"s}};
  std::vector<Record> records = {
      LogString{1, "level\0start"s},
      TypeDef{2, "Game.\0Enemy"s, 48, 0},
      MethodDef{3, "\0"s, 7},
      RootRange{ev(0), true, 0x1000, 64, RootSource::kRegistered, "ro\0ot"s},
      ThreadStart{ev(1), 1, 99, "ma\0in"s, 0x7000, 0x8000},
      ModuleLoad{ev(2), "/lib/\0x.so"s, 0x400000, 0x1000, {0, 1, 0}, {}},
      Lost{ev(3), 5, 1, "buffer\0full"s},
  };
  Bytes log = writeLog(header, {}, [&](LogWriter& w) {
    for (const Record& r : records) w.write(r);
  });
  LogReader r = LogReader::fromBytes(log);
  CHECK(r.header() == header);
  CHECK(r.header().executable.size() == 10);
  requireSameRecords(decodeAll(r), records);
}

}  // namespace
}  // namespace hmtest
