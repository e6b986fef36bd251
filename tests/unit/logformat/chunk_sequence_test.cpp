// The chunk sequence (check.h, docs/DESIGN.md §1.6): a records chunk starts where the one before
// it ended, so a chunk missing from the middle of a footer-less log, written twice or moved is
// refused naming the chunk, by the scan where the chunk headers show it and by summarize()
// (`heapman verify`) where it takes the records; logs cut short still read. And the other rules
// verify shares with the replay: addresses, sequence limit, stack node ids, RAM references.
#include <xxhash.h>

#include <functional>

#include "heapman/logformat/check.h"
#include "test_support.h"

using namespace hmtest;

namespace {

constexpr uint16_t kRecordsType = static_cast<uint16_t>(ChunkType::kRecords);
constexpr uint16_t kRamType = static_cast<uint16_t>(ChunkType::kRamDump);

// Ten events (seq first .. first + 9): frame marks and allocations.
void tenEvents(LogWriter& w, uint64_t first) {
  for (uint64_t s = first; s < first + 10; ++s) {
    if (s % 2)
      w.write(FrameMark{ev(s, s * 10), s});
    else
      w.write(Alloc{ev(s, s * 10), HeapKind::kNative, 0x10000 + 0x100 * s, 32, 32, 0, 0});
  }
}

// A log without footer of six chunks: records (seq 0-9), records (10-19), a RAM dump of GC 1
// (written after seq 19), records (20-29), (30-39), (40-49).
Bytes sequenceLog() {
  Bytes log = writeLog(testHeader(), {}, [](LogWriter& w) {
    tenEvents(w, 0);
    w.flush();
    tenEvents(w, 10);
    w.flush();
    w.write(RamSegment{SegmentKind::kObject, 1, 0x10000, 64, 0, true, noise(64, 1)});
    w.write(RamSegment{SegmentKind::kObject, 1, 0x10200, 64, 0, true, noise(64, 1)});
    w.flush();
    for (uint64_t first : {20, 30, 40}) {
      tenEvents(w, first);
      w.flush();
    }
  }, false);
  LogReader r = LogReader::fromBytes(log);
  REQUIRE(r.chunks().size() == 6);
  const uint16_t types[] = {kRecordsType, kRecordsType, kRamType, kRecordsType, kRecordsType,
                            kRecordsType};
  const uint64_t firstSeqs[] = {0, 10, 20, 20, 30, 40};
  for (size_t i = 0; i < 6; ++i) {
    REQUIRE(r.chunks()[i].header.type == types[i]);
    REQUIRE(r.chunks()[i].header.firstSeq == firstSeqs[i]);
  }
  return log;
}

// The header of footer-less `log` followed by its chunks in `order` (chunk numbers, repeats
// allowed): the file a lost, repeated or moved chunk leaves.
Bytes reorder(const Bytes& log, const std::vector<size_t>& order) {
  LogReader r = LogReader::fromBytes(log);
  REQUIRE(!r.end().complete);
  Bytes out(log.begin(), log.begin() + static_cast<ptrdiff_t>(firstChunkOffset(log)));
  for (size_t k : order) {
    const ChunkRef& c = r.chunks().at(k);
    out.insert(out.end(), log.begin() + static_cast<ptrdiff_t>(c.offset),
               log.begin() + static_cast<ptrdiff_t>(c.end()));
  }
  return out;
}

std::string at(const LogReader& r, size_t chunk) {
  return "chunk " + std::to_string(chunk) + " at byte " + std::to_string(r.chunks().at(chunk).offset);
}

}  // namespace

TEST_CASE("the writer starts a records chunk where the one before it ended", "[sequence]") {
  Bytes log = writeLog(testHeader(), {}, [](LogWriter& w) {
    tenEvents(w, 0);
    w.flush();
    w.write(FrameMark{ev(100, 5), 1});  // a gap of 90 at the chunk boundary: a SEQ record
    w.write(FrameMark{ev(101, 5), 2});
  }, false);
  LogReader r = LogReader::fromBytes(log);
  REQUIRE(r.chunks().size() == 2);
  CHECK(r.chunks()[1].header.firstSeq == 10);
  CHECK(r.chunks()[1].header.recordCount == 4);  // TIME, SEQ, two frame marks
  std::vector<Record> got = decodeChunk(r, r.chunks()[1]);
  REQUIRE(got.size() == 2);
  CHECK(std::get<FrameMark>(got[0]).ev.seq == 100);
  LogSummary s = summarize(r);
  CHECK(s.events == 12);
  CHECK(s.lastSeq == 101);
}

TEST_CASE("a footer-less log missing a chunk in the middle is refused at the gap",
          "[sequence]") {
  const Bytes good = sequenceLog();
  CHECK_NOTHROW(readAndSummarize(good));
  // Records chunk 3 (seq 20-29) lost: chunk 3 of the damaged file holds 30-39.
  const Bytes lost = reorder(good, {0, 1, 2, 4, 5});
  LogReader r = LogReader::fromBytes(lost);  // the headers alone cannot tell
  REQUIRE(r.chunks().size() == 5);
  auto err = formatErrorOf([&] { (void)summarize(r); });
  REQUIRE(err);
  INFO(describe(*err));
  CHECK(err->code() == ErrorCode::kBadSequence);
  CHECK(err->chunk() == 3);
  CHECK(err->offset() == r.chunks()[3].offset);
  CHECK(std::string(err->what()) ==
        at(r, 3) + ": records start at sequence number 30, but the records before it (chunk 1) "
                   "end at 20: 10 sequence numbers are missing (a chunk lost from the log)");
  // The last chunk lost is a log cut short at a chunk boundary: intact.
  LogSummary s = summarize(LogReader::fromBytes(reorder(good, {0, 1, 2, 3, 4})));
  CHECK(s.lastSeq == 39);
  // Format minor 0's recorder left gaps of its own between chunks: only a step back counts there.
  Bytes minor0 = lost;
  storeLe(minor0.data() + 10, 0, 2);
  LogReader old = LogReader::fromBytes(minor0);
  REQUIRE(old.minor() == 0);
  CHECK(summarize(old).events == 40);
  Bytes swapped = reorder(good, {0, 1, 2, 4, 3});
  storeLe(swapped.data() + 10, 0, 2);
  CHECK(formatErrorOf([&] { (void)LogReader::fromBytes(swapped); }));
}

TEST_CASE("a chunk written twice is refused by the scan, in both read modes", "[sequence]") {
  const size_t twice = GENERATE(as<size_t>{}, 1, 2, 4);  // records, RAM dump, records
  INFO("chunk " << twice << " written twice");
  const Bytes good = sequenceLog();
  std::vector<size_t> order;
  for (size_t k = 0; k < 6; ++k) {
    order.push_back(k);
    if (k == twice) order.push_back(k);
  }
  const Bytes log = reorder(good, order);
  auto err = formatErrorOf([&] { (void)LogReader::fromBytes(log); });
  REQUIRE(err);
  INFO(describe(*err));
  LogReader prefix = LogReader::fromBytes(log, "twice", ReadMode::kIntactPrefix);
  CHECK(err->code() == ErrorCode::kBadSequence);
  CHECK(err->chunk() == static_cast<int64_t>(twice + 1));
  CHECK(std::string(err->what()) ==
        "chunk " + std::to_string(twice + 1) + " at byte " +
            std::to_string(LogReader::fromBytes(good).chunks()[twice].end()) + ": repeats chunk " +
            std::to_string(twice) +
            " (the same sequence number, length and payload checksum): a chunk written twice");
  // The queries' reader keeps the chunks before the copy and says why it stopped.
  REQUIRE(prefix.chunks().size() == twice + 1);
  REQUIRE(prefix.end().corruption);
  CHECK(prefix.end().corruption->chunk() == err->chunk());
  CHECK(prefix.end().corruption->offset() == err->offset());
  CHECK_NOTHROW(summarize(prefix));
}

TEST_CASE("chunks out of order are refused", "[sequence]") {
  const Bytes good = sequenceLog();
  SECTION("two records chunks swapped: the scan") {
    const Bytes log = reorder(good, {0, 1, 2, 4, 3, 5});
    auto err = formatErrorOf([&] { (void)LogReader::fromBytes(log); });
    REQUIRE(err);
    CHECK(err->code() == ErrorCode::kBadSequence);
    CHECK(err->chunk() == 4);
    CHECK_THAT(err->what(), Catch::EndsWith("records start at sequence number 20, before the "
                                            "records of chunk 3 (30): chunks out of order"));
  }
  SECTION("a RAM dump moved before the records written before it") {
    const Bytes log = reorder(good, {2, 0, 1, 3, 4, 5});
    LogReader r = LogReader::fromBytes(log);
    auto err = formatErrorOf([&] { (void)summarize(r); });
    REQUIRE(err);
    CHECK(err->code() == ErrorCode::kBadSequence);
    CHECK(err->chunk() == 0);
    CHECK(std::string(err->what()) ==
          at(r, 0) + ": RAM dump written at sequence number 20, but the records chunk after it "
                     "(chunk 1) ends at 10: a chunk out of order");
  }
  SECTION("a RAM dump moved after records written after it") {
    const Bytes log = reorder(good, {0, 1, 3, 2, 4, 5});
    LogReader r = LogReader::fromBytes(log);
    auto err = formatErrorOf([&] { (void)summarize(r); });
    REQUIRE(err);
    CHECK(err->code() == ErrorCode::kBadSequence);
    CHECK(err->chunk() == 3);
    CHECK(std::string(err->what()) ==
          at(r, 3) + ": RAM dump written at sequence number 20, but the records before it "
                     "already reach 29: a chunk repeated or out of order");
  }
}

TEST_CASE("the footer's chunk list is held to the scan's order", "[sequence]") {
  // Every chunk copied into a finished log, chunk 1 twice: the footer's index lists the copy
  // as a chunk of its own, with offsets and headers that match the file.
  const Bytes good = sequenceLog();
  LogReader in = LogReader::fromBytes(good);
  const Bytes log = writeLog(testHeader(), {}, [&](LogWriter& w) {
    std::vector<uint8_t> buf;
    for (const ChunkRef& c : in.chunks()) {
      auto raw = in.payload(c, buf);
      for (int i = 0; i < (c.number == 1 ? 2 : 1); ++i)
        w.writeRawChunk(c.header.type, raw, c.header.firstSeq, c.header.recordCount);
    }
  });
  auto err = formatErrorOf([&] { (void)LogReader::fromBytes(log); });
  REQUIRE(err);
  CHECK(err->code() == ErrorCode::kBadSequence);
  CHECK(err->chunk() == 2);
  CHECK_THAT(err->what(), Catch::Contains(": repeats chunk 1 "));
}

TEST_CASE("logs cut short at any chunk still read, a RAM dump last included",
          "[sequence][truncation]") {
  // A RAM dump that fills its chunk while a records chunk is open is written first, marked
  // with the open chunk's next sequence number (15); its records (10-19) follow it.
  WriterOptions o;
  o.ramChunkBytes = 64;
  const Bytes log = writeLog(testHeader(), o, [](LogWriter& w) {
    tenEvents(w, 0);
    w.flush();
    for (uint64_t s = 10; s < 15; ++s) w.write(FrameMark{ev(s, s), s});
    w.write(RamSegment{SegmentKind::kObject, 1, 0x10000, 100, 0, true, noise(100, 2)});
    for (uint64_t s = 15; s < 20; ++s) w.write(FrameMark{ev(s, s), s});
    w.flush();
    tenEvents(w, 20);
  });
  LogReader full = LogReader::fromBytes(log);
  REQUIRE(full.end().complete);
  REQUIRE(full.chunks().size() == 4);
  CHECK(full.chunks()[1].header.type == kRamType);
  CHECK(full.chunks()[1].header.firstSeq == 15);
  CHECK(full.chunks()[2].header.firstSeq == 10);
  CHECK(summarize(full).lastSeq == 29);
  for (const ChunkRef& c : full.chunks()) {
    INFO("cut after chunk " << c.number);
    Bytes cut(log.begin(), log.begin() + static_cast<ptrdiff_t>(c.end()));
    LogReader r = LogReader::fromBytes(cut);
    CHECK_FALSE(r.end().complete);
    CHECK(r.chunks().size() == c.number + 1);
    CHECK_NOTHROW(summarize(r));
  }
}

TEST_CASE("an event of an unknown extended kind ending a chunk counts in the chunk sequence",
          "[sequence][compat]") {
  HandChunk h;
  h.extended(static_cast<uint32_t>(ExtKind::kFrameMark), true, packedFrameMark(7));  // seq 50
  h.extended(99, true, {1, 2, 3});                                                  // seq 51
  const Bytes log = writeLog(testHeader(), {}, [&](LogWriter& w) {
    w.write(FrameMark{ev(49), 6});
    w.writeRawChunk(kRecordsType, h.payload(), 50, 2);
    w.write(FrameMark{ev(52), 8});  // the next chunk starts at 52, after the unknown event
  }, false);
  LogReader r = LogReader::fromBytes(log);
  REQUIRE(r.chunks().size() == 3);
  CHECK(r.chunks()[2].header.firstSeq == 52);
  LogSummary s = summarize(r);
  CHECK(s.events == 3);
  CHECK(s.lastSeq == 52);
}

TEST_CASE("summarize refuses what the replay refuses", "[sequence][check]") {
  // Each case: one chunk of good records, then one holding the bad record.
  auto logWith = [](auto&& bad) {
    return writeLog(testHeader(), {}, [&](LogWriter& w) {
      w.write(StackNode{1, 0, 0x401000, false});
      tenEvents(w, 0);
      w.flush();
      bad(w);
    }, false);
  };
  struct Case {
    const char* name;
    std::function<void(LogWriter&)> write;
    ErrorCode code;
    std::string what;
  };
  const uint64_t k2p48 = kAddressLimit;
  const std::vector<Case> cases = {
      {"an allocation at 2^48",
       [&](LogWriter& w) { w.write(Alloc{ev(10), HeapKind::kNative, k2p48, 8, 8, 1, 0}); },
       ErrorCode::kBadRecord,
       "records do not decode: allocation at 0x1000000000000 (seq 10) is above 2^48: not a "
       "user-space address"},
      {"a realloc to 2^48 + 16",
       [&](LogWriter& w) {
         w.write(Realloc{ev(10), HeapKind::kNative, 0x10000, k2p48 + 16, 8, 8, 1, 0});
       },
       ErrorCode::kBadRecord,
       "records do not decode: allocation at 0x1000000000010 (seq 10) is above 2^48: not a "
       "user-space address"},
      {"a sequence number beyond 2^40 - 1",
       [&](LogWriter& w) { w.write(FrameMark{ev(kMaxSeq + 1), 1}); }, ErrorCode::kBadSequence,
       "sequence number 1099511627776 is beyond 1099511627775, the largest a log may hold"},
      {"a stack node id far beyond the nodes before it",
       [&](LogWriter& w) { w.write(StackNode{70000, 1, 0x401000, false}); },
       ErrorCode::kBadRecord,
       "records do not decode: stack node id 70000 is beyond the 1 stack nodes defined before "
       "it (ids count up from 1)"},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    const Bytes log = logWith(c.write);
    LogReader r = LogReader::fromBytes(log);
    REQUIRE(r.chunks().size() == 2);
    auto err = formatErrorOf([&] { (void)summarize(r); });
    REQUIRE(err);
    CHECK(err->code() == c.code);
    CHECK(err->chunk() == 1);
    CHECK(std::string(err->what()) == at(r, 1) + ": " + c.what);
  }
  // The largest of each is fine.
  const Bytes edge = logWith([&](LogWriter& w) {
    w.write(Alloc{ev(10), HeapKind::kNative, k2p48 - 16, 8, 8, 1, 0});
    w.write(StackNode{1 + LogCheck::kStackIdSlack, 1, 0x401000, false});
    w.write(FrameMark{ev(kMaxSeq), 1});
  });
  CHECK_NOTHROW(readAndSummarize(edge));
}

TEST_CASE("a RAM dump segment without bytes must name stored content of its length",
          "[sequence][check][ram]") {
  const Bytes bytes = noise(48, 3);
  const uint64_t hash = XXH3_64bits(bytes.data(), bytes.size());
  auto logWith = [&](const RamSegment& ref) {
    return writeLog(testHeader(), {}, [&](LogWriter& w) {
      w.write(RamSegment{SegmentKind::kObject, 1, 0x1000, 48, 0, true, bytes});
      w.flush();
      w.write(ref);
    }, false);
  };
  CHECK_NOTHROW(readAndSummarize(logWith({SegmentKind::kObject, 2, 0x1000, 48, hash, false, {}})));
  SECTION("content never stored") {
    LogReader r = LogReader::fromBytes(logWith({SegmentKind::kObject, 2, 0x2000, 48, hash + 1, false, {}}));
    auto err = formatErrorOf([&] { (void)summarize(r); });
    REQUIRE(err);
    CHECK(err->code() == ErrorCode::kBadRecord);
    CHECK(err->chunk() == 1);
    CHECK_THAT(err->what(), Catch::StartsWith(at(r, 1) + ": RAM dump segment at 0x2000 (GC 2, 48 "
                                                         "bytes) refers to content 0x") &&
                                Catch::EndsWith(" that no earlier segment stored"));
  }
  SECTION("stored with another length") {
    LogReader r = LogReader::fromBytes(logWith({SegmentKind::kObject, 2, 0x2000, 4096, hash, false, {}}));
    auto err = formatErrorOf([&] { (void)summarize(r); });
    REQUIRE(err);
    CHECK(err->code() == ErrorCode::kBadRecord);
    CHECK(err->chunk() == 1);
    CHECK_THAT(err->what(), Catch::EndsWith(" that an earlier segment stored as 48 bytes"));
  }
}
