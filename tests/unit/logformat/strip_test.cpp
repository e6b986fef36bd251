// stripRamDumps: a copy of a log without its RAM dumps keeps every record, verifies, and says in
// its header that the dumps were stripped.
#include "heapman/logformat/strip.h"
#include "test_support.h"

using namespace hmtest;

namespace {

uint64_t chunksOfType(const LogReader& r, ChunkType type) {
  uint64_t n = 0;
  for (const ChunkRef& c : r.chunks()) n += c.header.type == static_cast<uint16_t>(type);
  return n;
}

Bytes strip(const Bytes& log, StripResult& result) {
  LogReader in = LogReader::fromBytes(log, "original", ReadMode::kIntactPrefix);
  MemorySink out;
  result = stripRamDumps(in, out);
  return out.bytes;
}

}  // namespace

TEST_CASE("strip: every record kept, no RAM dump chunk, the copy verifies", "[strip]") {
  const Bytes original = smallMultiChunkLog();
  LogReader in = LogReader::fromBytes(original);
  const uint64_t ramChunks = chunksOfType(in, ChunkType::kRamDump);
  REQUIRE(ramChunks >= 2);
  StripResult result;
  const Bytes copy = strip(original, result);
  CHECK(result.ok);
  CHECK(result.sourceComplete);
  CHECK(result.ramChunks == ramChunks);
  CHECK(result.records == decodeAll(in).size());
  LogReader out = LogReader::fromBytes(copy, "stripped");
  CHECK(out.end().complete);
  CHECK(chunksOfType(out, ChunkType::kRamDump) == 0);
  requireSameRecords(decodeAll(out), decodeAll(in));
  CHECK(out.header() == in.header());  // no ram_dumps option in the test header: unchanged
  LogSummary s = summarize(out);  // every chunk, every rule
  CHECK(s.ramChunks == 0);
  CHECK(copy.size() < original.size());
}

TEST_CASE("strip: the header's ram_dumps option says stripped", "[strip]") {
  Header h = testHeader();
  h.options = {{"depth", "32"}, {"ram_dumps", "every"}};
  const Bytes original = writeLog(h, {}, [&](LogWriter& w) {
    for (const Record& r : churn(3, 50, 1)) w.write(r);
    w.write(RamSegment{SegmentKind::kObject, 1, 0x1000, 64, 0, true, noise(64, 9)});
  });
  StripResult result;
  LogReader out = LogReader::fromBytes(strip(original, result), "stripped");
  const std::vector<std::pair<std::string, std::string>> want = {{"depth", "32"},
                                                                 {"ram_dumps", "stripped"}};
  CHECK(out.header().options == want);
  CHECK(result.ramChunks == 1);
}

TEST_CASE("strip: a log that ends early is copied up to its last intact chunk", "[strip]") {
  const Bytes unfinished = smallMultiChunkLog(/*finish=*/false);
  StripResult result;
  const Bytes copy = strip(unfinished, result);
  CHECK(!result.sourceComplete);
  CHECK(result.ok);
  LogReader in = LogReader::fromBytes(unfinished, "original", ReadMode::kIntactPrefix);
  LogReader out = LogReader::fromBytes(copy, "stripped");
  CHECK(out.end().complete);
  requireSameRecords(decodeAll(out), decodeAll(in));
}
