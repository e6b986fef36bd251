// summarize(): exact counts on a hand-built log, and sequence order checks.
#include "test_support.h"

using namespace hmtest;

namespace {

template <class T>
size_t kind() {
  return Record(std::in_place_type<T>).index();
}

struct Heap {
  uint64_t allocs, bytes, actualBytes, frees, reallocs;
};

void checkHeap(const LogSummary& s, HeapKind k, Heap want) {
  INFO("heap " << heapKindName(k));
  const HeapStats& h = s.heaps[static_cast<size_t>(k)];
  CHECK(h.allocs == want.allocs);
  CHECK(h.bytes == want.bytes);
  CHECK(h.actualBytes == want.actualBytes);
  CHECK(h.frees == want.frees);
  CHECK(h.reallocs == want.reallocs);
}

}  // namespace

TEST_CASE("summarize counts a hand-built log exactly", "[summary]") {
  WriterOptions o;
  o.maxCollectedPerRecord = 100;
  const uint64_t k2p40 = 1ull << 40;
  std::vector<uint64_t> big;
  for (uint64_t i = 0; i < 250; ++i) big.push_back(0x10'0000 + 16 * i);
  Bytes log = writeLog(testHeader(), o, [&](LogWriter& w) {
    // Chunk 0.
    w.write(LogString{1, "spawn"});
    w.write(LogString{2, "despawn"});
    w.write(Alloc{ev(100, 10, 0), HeapKind::kNative, 0x1000, 10, 16, 1, 0});          // TIME
    w.write(Alloc{ev(101, 10, 0), HeapKind::kNative, 0x2000, 20, 32, 1, 0});
    w.write(Alloc{ev(102, 20, 1), HeapKind::kNative, 0x3000, 30, 32, 2, 0});          // TIME THREAD
    w.write(Alloc{ev(103, 20, 1), HeapKind::kGcNormal, 0x4000, 100, 112, 2, 5});
    w.write(Alloc{ev(104, 20, 1), HeapKind::kManaged, 0x5000, k2p40, k2p40, 3, 0});
    w.write(Alloc{ev(105, 20, 1), HeapKind::kManaged, 0x6000, 0, 0, 3, 0});
    w.write(Free{ev(106, 30, 1), HeapKind::kNative, 0x1000});                         // TIME
    w.write(Free{ev(107, 30, 1), HeapKind::kNative, 0x2000});
    w.write(Free{ev(108, 30, 1), HeapKind::kGcNormal, 0x4000});
    w.write(Free{ev(109, 30, 1), HeapKind::kOther, 0x9999'0000});
    w.write(Realloc{ev(110, 30, 0), HeapKind::kNative, 0x3000, 0x3100, 40, 48, 2, 0}); // THREAD
    w.write(Realloc{ev(111, 30, 0), HeapKind::kGcTyped, 0, 0x7000, 8, 16, 4, 3});
    w.write(Realloc{ev(112, 30, 0), HeapKind::kGcTyped, 0x7000, 0x7000, 16, 16, 4, 3});
    w.write(CustomEvent{ev(113, 40, 0), 1, {}});                                      // TIME
    w.write(FrameMark{ev(114, 40, 0), 1});
    w.flush();
    // Chunk 1.
    w.write(GcBegin{ev(115, 50, 0), 1, 1u << 20, -1});                               // TIME
    w.write(Collected{1, {0x5000, 0x6000, 0x3100}});
    w.write(GcEnd{ev(116, 60, 0), 1, 1u << 20, 0, 10});                              // TIME
    w.write(CustomEvent{ev(117, 60, 2), 1, {1}});                                    // THREAD
    w.write(CustomEvent{ev(118, 60, 2), 2, {2}});
    w.write(CustomEvent{ev(119, 60, 2), 9, {}});  // no LogString for id 9
    w.write(CustomEvent{ev(120, 60, 2), 9, {}});
    w.write(CustomEvent{ev(121, 60, 2), 1, {}});
    w.write(Lost{ev(122, 70, 2), 7, 1, "full"});                                     // TIME
    w.write(Lost{ev(123, 70, 2), 5, 1, "full"});
    w.write(GcBegin{ev(124, 80, 2), 2, 1u << 20, -1});                               // TIME
    w.write(Collected{2, big});  // 3 records
    w.write(GcEnd{ev(125, 90, 2), 2, 1u << 20, 0, 10});                              // TIME
    w.write(FrameMark{ev(126, 90, 2), 2});
    w.write(FrameMark{ev(127, 90, 2), 3});
    w.write(FrameMark{ev(128, 90, 2), 4});
    w.write(ThreadStop{ev(129, 95, 2), 2});                                           // TIME
    // Chunk 2: RAM.
    w.write(RamSegment{SegmentKind::kObject, 2, 0x5000, 10, 0, true, Bytes(10, 1)});
    w.write(RamSegment{SegmentKind::kObject, 2, 0x6000, 10, 0, true, Bytes(10, 2)});
    w.write(RamSegment{SegmentKind::kObject, 2, 0x7000, 10, 0, true, Bytes(10, 1)});
  });
  LogReader r = LogReader::fromBytes(log);
  REQUIRE(r.chunks().size() == 3);
  const LogSummary s = summarize(r);

  std::array<uint64_t, kRecordKindCount> records{};
  records[kind<Alloc>()] = 6;
  records[kind<Free>()] = 4;
  records[kind<Realloc>()] = 3;
  records[kind<Collected>()] = 4;
  records[kind<LogString>()] = 2;
  records[kind<GcBegin>()] = 2;
  records[kind<GcEnd>()] = 2;
  records[kind<CustomEvent>()] = 6;
  records[kind<FrameMark>()] = 4;
  records[kind<ThreadStop>()] = 1;
  records[kind<Lost>()] = 2;
  for (size_t k = 0; k < kRecordKindCount; ++k) {
    INFO("records of kind " << recordKindName(k));
    CHECK(s.records[k] == records[k]);
  }
  checkHeap(s, HeapKind::kNative, {3, 60, 80, 2, 1});
  checkHeap(s, HeapKind::kGcNormal, {1, 100, 112, 1, 0});
  checkHeap(s, HeapKind::kGcAtomic, {0, 0, 0, 0, 0});
  checkHeap(s, HeapKind::kGcUncollectable, {0, 0, 0, 0, 0});
  checkHeap(s, HeapKind::kGcj, {0, 0, 0, 0, 0});
  checkHeap(s, HeapKind::kGcTyped, {0, 0, 0, 0, 2});
  checkHeap(s, HeapKind::kManaged, {2, k2p40, k2p40, 0, 0});
  checkHeap(s, HeapKind::kOther, {0, 0, 0, 1, 0});
  CHECK(s.chunks == 3);
  CHECK(s.recordChunks == 2);
  CHECK(s.ramChunks == 1);
  CHECK(s.unknownChunks == 0);
  CHECK(s.stateRecords == 13);  // the TIME and THREAD records marked above
  CHECK(s.firstSeq == 100);
  CHECK(s.lastSeq == 129);
  CHECK(s.events == 30);
  CHECK(s.durationNs == 95);
  CHECK(s.gcs == 2);
  CHECK(s.collectedObjects == 253);
  CHECK(s.lostEvents == 12);
  CHECK(s.ramSegments == 3);
  CHECK(s.ramBytes == 30);
  CHECK(s.ramDedupedSegments == 1);
  CHECK(s.customEvents == std::map<std::string, uint64_t>{{"spawn", 3}, {"despawn", 1}, {"#9", 2}});
  uint64_t stored = 0, raw = 0;
  for (const ChunkRef& c : r.chunks()) stored += c.header.storedLength, raw += c.header.rawLength;
  CHECK(s.storedBytes == stored);
  CHECK(s.rawBytes == raw);
  CHECK(r.index()->lostEvents == 12);
}

TEST_CASE("summarize of a log without records", "[summary]") {
  LogSummary s = summarize(LogReader::fromBytes(writeLog(testHeader(), {}, [](LogWriter&) {})));
  CHECK(s.chunks == 0);
  CHECK(s.events == 0);
  CHECK(s.firstSeq == 0);
  CHECK(s.lastSeq == 0);
  CHECK(s.customEvents.empty());
  for (uint64_t n : s.records) CHECK(n == 0);
}

TEST_CASE("sequence numbers going backwards are kBadSequence", "[summary]") {
  SECTION("within a chunk") {
    Bytes log = writeLog(testHeader(), {}, [](LogWriter& w) {
      w.write(Alloc{ev(5), HeapKind::kNative, 0x10, 1, 1, 0, 0});
      w.write(Alloc{ev(3), HeapKind::kNative, 0x20, 1, 1, 0, 0});
    });
    LogReader r = LogReader::fromBytes(log);
    // The records themselves decode (the format can express the step back) ...
    std::vector<Record> got = decodeAll(r);
    REQUIRE(got.size() == 2);
    CHECK(std::get<Alloc>(got[1]).ev.seq == 3);
    // ... but the log is invalid.
    auto err = formatErrorOf([&] { summarize(r); });
    REQUIRE(err);
    CHECK(err->code() == ErrorCode::kBadSequence);
    CHECK(err->chunk() == 0);
    CHECK(err->offset() == r.chunks()[0].offset);
    CHECK_THAT(err->what(), Catch::Contains("sequence number 3 does not follow 5"));
  }
  SECTION("a repeated sequence number") {
    Bytes log = writeLog(testHeader(), {}, [](LogWriter& w) {
      w.write(Alloc{ev(5), HeapKind::kNative, 0x10, 1, 1, 0, 0});
      w.write(FrameMark{ev(5), 1});
    });
    auto err = formatErrorOf([&] { summarize(LogReader::fromBytes(log)); });
    REQUIRE(err);
    CHECK(err->code() == ErrorCode::kBadSequence);
    CHECK_THAT(err->what(), Catch::Contains("sequence number 5 does not follow 5"));
  }
  SECTION("across chunks") {
    Bytes log = writeLog(testHeader(), {}, [](LogWriter& w) {
      w.write(FrameMark{ev(10), 1});
      w.write(FrameMark{ev(11), 2});
      w.flush();
      w.write(FrameMark{ev(9), 3});
    });
    LogReader r = LogReader::fromBytes(log);
    REQUIRE(r.chunks().size() == 2);
    auto err = formatErrorOf([&] { summarize(r); });
    REQUIRE(err);
    CHECK(err->code() == ErrorCode::kBadSequence);
    CHECK(err->chunk() == 1);
    CHECK(err->offset() == r.chunks()[1].offset);
    CHECK_THAT(err->what(), Catch::StartsWith("chunk 1 at byte " + std::to_string(r.chunks()[1].offset)) &&
                                Catch::Contains("sequence number 9 does not follow 11"));
  }
}
