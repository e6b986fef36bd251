// A log cut at every byte offset: the prefix and header must be complete, after that the reader
// keeps exactly the intact chunks and says where intact data ends.
#include "test_support.h"

using namespace hmtest;

namespace {

bool sameChunk(const ChunkRef& a, const ChunkRef& b) {
  return a.number == b.number && a.offset == b.offset && a.header.type == b.header.type &&
         a.header.flags == b.header.flags && a.header.storedLength == b.header.storedLength &&
         a.header.rawLength == b.header.rawLength && a.header.firstSeq == b.header.firstSeq &&
         a.header.recordCount == b.header.recordCount &&
         a.header.headerCheck == b.header.headerCheck &&
         a.header.payloadChecksum == b.header.payloadChecksum;
}

struct Reference {
  Bytes bytes;
  std::vector<ChunkRef> chunks;
  std::vector<std::vector<Record>> records;  // per chunk (empty for RAM chunks)
  std::vector<std::vector<RamSegment>> segments;
  uint64_t headerEnd = 0;
};

Reference reference(bool finish) {
  Reference ref;
  ref.bytes = smallMultiChunkLog(finish);
  LogReader r = LogReader::fromBytes(ref.bytes);
  ref.chunks = r.chunks();
  for (const ChunkRef& c : ref.chunks) {
    bool ram = c.header.type == static_cast<uint16_t>(ChunkType::kRamDump);
    ref.records.push_back(ram ? std::vector<Record>{} : decodeChunk(r, c));
    ref.segments.push_back(ram ? r.ramSegments(c) : std::vector<RamSegment>{});
  }
  ref.headerEnd = firstChunkOffset(ref.bytes);
  return ref;
}

}  // namespace

TEST_CASE("a log truncated at every byte offset", "[truncation]") {
  const bool finished = GENERATE(true, false);
  INFO((finished ? "finished log" : "log without footer"));
  const Reference ref = reference(finished);
  const Bytes& full = ref.bytes;
  const size_t n = ref.chunks.size();
  REQUIRE(n >= 5);
  REQUIRE(full.size() < 8192);
  size_t ramChunks = 0;
  for (const ChunkRef& c : ref.chunks) ramChunks += c.header.type == 2;
  CHECK(ramChunks >= 1);
  const uint64_t dataEnd = ref.chunks.back().end();  // where the index chunk starts
  if (finished) {
    CHECK(full.size() > dataEnd + kChunkHeaderSize + kTrailerSize);
  } else {
    CHECK(full.size() == dataEnd);
  }
  const uint64_t trailerStart = finished ? full.size() - kTrailerSize : full.size();

  for (size_t len = 0; len <= full.size(); ++len) {
    INFO("length " << len << " of " << full.size());
    Bytes cut(full.begin(), full.begin() + static_cast<ptrdiff_t>(len));
    if (len == 0) {
      auto err = formatErrorOf([&] { LogReader::fromBytes(cut); });
      REQUIRE(err);
      CHECK(err->code() == ErrorCode::kEmpty);
      continue;
    }
    if (len < ref.headerEnd) {
      auto err = formatErrorOf([&] { LogReader::fromBytes(cut); });
      REQUIRE(err);
      INFO(describe(*err));
      CHECK(err->code() == ErrorCode::kTruncatedHeader);
      CHECK(err->chunk() == FormatError::kNoChunk);
      CHECK(err->offset() == len);
      continue;
    }
    LogReader r = LogReader::fromBytes(cut);
    const LogEnd& end = r.end();
    INFO("reason: " << end.reason);
    CHECK(end.fileBytes == len);
    CHECK(r.header() == testHeader());
    if (len == full.size() && finished) {
      CHECK(end.complete);
      CHECK(end.intactBytes == len);
      CHECK(end.reason.empty());
      CHECK(r.index().has_value());
    } else {
      CHECK_FALSE(end.complete);
      CHECK_FALSE(r.index().has_value());
    }
    // Exactly the chunks that end at or before the cut (the index chunk is never listed).
    size_t intactChunks = 0;
    while (intactChunks < n && ref.chunks[intactChunks].end() <= len) ++intactChunks;
    REQUIRE(r.chunks().size() == intactChunks);
    for (size_t k = 0; k < intactChunks; ++k) {
      INFO("chunk " << k);
      CHECK(sameChunk(r.chunks()[k], ref.chunks[k]));
      if (ref.chunks[k].header.type == 2)
        CHECK(r.ramSegments(r.chunks()[k]) == ref.segments[k]);
      else
        CHECK(decodeChunk(r, r.chunks()[k]) == ref.records[k]);
    }
    CHECK_NOTHROW(summarize(r));
    if (end.complete) continue;
    // Intact data ends where the last intact chunk ends; the reason says so and why.
    const uint64_t intact = intactChunks ? ref.chunks[intactChunks - 1].end() : ref.headerEnd;
    CHECK(end.intactBytes == intact);
    const std::string tail = "; " + std::to_string(intactChunks) + " intact chunk" +
                             (intactChunks == 1 ? "" : "s") + " end at byte " +
                             std::to_string(intact);
    CHECK_THAT(end.reason, Catch::EndsWith(tail));
    std::string why;
    const size_t next = intactChunks;  // number of the chunk the cut falls in
    if (finished && len >= trailerStart) {
      // The index chunk is whole but the 16-byte trailer is not: still truncated, and the
      // intact data ends before the index chunk.
      why = "the file ends inside the footer trailer at byte " + std::to_string(len);
    } else if (len == intact) {
      why = "no footer (the recorder did not finish)";
    } else if (len - intact < kChunkHeaderSize) {
      why = "the file ends inside the header of chunk " + std::to_string(next) + " at byte " +
            std::to_string(intact);
    } else {
      why = "chunk " + std::to_string(next) + " at byte " + std::to_string(intact) +
            " is cut short (needs ";
    }
    CHECK_THAT(end.reason, Catch::StartsWith(why));
  }
}

TEST_CASE("a log cut right after its header has no chunks", "[truncation]") {
  Bytes log = writeLog(testHeader(), {}, [](LogWriter&) {}, false);
  CHECK(log.size() == firstChunkOffset(log));
  LogReader r = LogReader::fromBytes(log);
  CHECK(r.chunks().empty());
  CHECK_FALSE(r.end().complete);
  CHECK(r.end().intactBytes == log.size());
  CHECK(r.end().reason == "no footer (the recorder did not finish); 0 intact chunks end at byte " +
                              std::to_string(log.size()));
  LogSummary s = summarize(r);
  CHECK(s.chunks == 0);
  CHECK(s.events == 0);
}

TEST_CASE("a prefix shorter than 8 bytes is truncated when it matches the magic", "[truncation]") {
  for (size_t len = 1; len < 8; ++len) {
    INFO("length " << len);
    Bytes magic(kMagic, kMagic + len);
    auto err = formatErrorOf([&] { LogReader::fromBytes(magic); });
    REQUIRE(err);
    CHECK(err->code() == ErrorCode::kTruncatedHeader);
    Bytes other = magic;
    other[len - 1] ^= 0x20;
    err = formatErrorOf([&] { LogReader::fromBytes(other); });
    REQUIRE(err);
    CHECK(err->code() == ErrorCode::kNotALog);
  }
}
