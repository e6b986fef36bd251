// Round trips: every record kind, the header and the footer index, written with LogWriter into a
// MemorySink and read back with LogReader::fromBytes, compared field by field; byte-exact
// re-encoding; many small chunks; the byte layout of format.h checked by hand.
#include <xxhash.h>

#include <algorithm>
#include <limits>
#include <set>

#include "test_support.h"

using namespace hmtest;

namespace {

constexpr uint64_t kHuge = 0xffff'ffff'ffff'fff0ull;
constexpr uint64_t k2p40 = 1ull << 40;
constexpr uint32_t kU32Max = std::numeric_limits<uint32_t>::max();
constexpr uint64_t kU64Max = std::numeric_limits<uint64_t>::max();
constexpr uint32_t kPerCollected = 100;  // WriterOptions::maxCollectedPerRecord in these tests

// Records with edge values, in a valid order (strictly increasing sequence numbers).
std::vector<Record> edgeRecords() {
  std::vector<Record> r;
  uint64_t seq = 1000;
  uint64_t t = 0;
  uint32_t th = 0;
  auto e = [&] { return ev(seq++, t, th); };

  r.push_back(ThreadStart{e(), 0, 4242, "main", 0x7ffd'0000'0000, 0x7ffd'0080'0000});
  t = 10;
  r.push_back(ModuleLoad{e(), "/usr/lib/libgame.so", 0x7f00'0000'0000, 0x20'0000,
                         {0xde, 0xad, 0xbe, 0xef, 0x00, 0x01},
                         {{0, 0x1000, 5}, {0x1000, 0x8000, 4}, {kHuge, k2p40, kU32Max}}});
  r.push_back(ModuleLoad{e(), "", 0, 0, {}, {}});
  r.push_back(LogString{1, "level_start"});
  r.push_back(LogString{2, ""});
  r.push_back(LogString{kU32Max, "\xe6\x97\xa5\xe6\x9c\xac unicode \xc3\xbc"});
  r.push_back(TypeDef{1, "Game.Enemy", 48, 0xdead'beef'cafe'f00d});
  r.push_back(TypeDef{0, "", 0, 0});
  r.push_back(TypeDef{kU32Max, "System.Collections.Generic.List<Game.Enemy>", k2p40, kHuge});
  r.push_back(TypeDef{3, "Game.Level", 64, 1, TypeLayout::kFields, {16, 24, 56}, 0, 0});
  r.push_back(TypeDef{4, "Game.Pair[]", 0, 2, TypeLayout::kArray, {8}, 16, 32});
  r.push_back(TypeDef{5, "System.String", 0, 3, TypeLayout::kPointerFree, {}, 0, 0});
  r.push_back(MethodDef{1, "Game.Level:Spawn (int)", 0x7f00'aabb'ccdd});
  r.push_back(MethodDef{kU32Max, "", 0});
  // Stack nodes, native and managed; ids jump forwards and backwards, frames up and down.
  r.push_back(StackNode{1, 0, 0x401000, false});
  r.push_back(StackNode{2, 1, 0x401100, false});
  r.push_back(StackNode{3, 2, kHuge, false});
  r.push_back(StackNode{4, 1, 0, false});
  r.push_back(StackNode{5, 0, 1, true});
  r.push_back(StackNode{6, 5, 0xffff'ffff, true});
  r.push_back(StackNode{kU32Max, 6, 0x401000, false});
  r.push_back(StackNode{7, kU32Max, 2, true});
  r.push_back(StackNode{0, 0, kU64Max, true});
  t = 20;
  r.push_back(JitRange{e(), 1, 0x7f10'0000'0000, 0x400});
  r.push_back(JitRange{e(), kU32Max, kHuge, 0});

  // One allocation per heap kind, odd kinds with a type id, odd kinds with slack.
  for (int k = 0; k < kHeapKindCount; ++k) {
    t = 100 + static_cast<uint64_t>(k);
    uint64_t size = 16u * static_cast<uint64_t>(k);
    r.push_back(Alloc{e(), static_cast<HeapKind>(k), 0x10000 + 0x100u * static_cast<uint64_t>(k),
                      size, size + (k % 2 ? 8u : 0u), static_cast<uint32_t>(k),
                      k % 2 ? static_cast<uint32_t>(k + 100) : 0u});
  }
  // Edge addresses and sizes.
  r.push_back(Alloc{e(), HeapKind::kNative, 0, 0, 0, 0, 0});
  r.push_back(Alloc{e(), HeapKind::kNative, kHuge, k2p40, k2p40, 3, 0});
  r.push_back(Alloc{e(), HeapKind::kGcNormal, 0x10, k2p40, k2p40 + 4096, kU32Max, kU32Max});
  // Frees of recent allocations of this chunk (the one-byte forms; in the old ring coding,
  // "hits in the recent-allocs ring"), of an address never allocated (coded by address), and of
  // an allocation under another heap kind than it was allocated with.
  r.push_back(Free{e(), HeapKind::kNative, kHuge});
  r.push_back(Free{e(), HeapKind::kNative, 0});
  r.push_back(Free{e(), HeapKind::kGcNormal, 0x1234'5678});
  r.push_back(Free{e(), HeapKind::kGcAtomic, 0x10});  // allocated as kGcNormal
  // Allocations at an address just freed (recently freed / same-size reuse) and elsewhere.
  r.push_back(Alloc{e(), HeapKind::kNative, 0x1234'5678, 64, 64, 1, 0});
  r.push_back(Alloc{e(), HeapKind::kNative, kHuge, k2p40, k2p40, 3, 0});
  r.push_back(Alloc{e(), HeapKind::kGcAtomic, 0x9999'0000, 64, 64, 1, 7});
  // 70 same-size allocations in a row, then frees far back (more than 64 allocations ago),
  // in allocation order, of the newest, and reuse of the freed blocks (last freed first).
  for (uint64_t i = 0; i < 70; ++i)
    r.push_back(Alloc{e(), HeapKind::kGcj, 0x20'0000 + i * 32, 32, 32, 2, i % 3 ? 0u : 5u});
  r.push_back(Free{e(), HeapKind::kGcj, 0x20'0000});
  for (uint64_t i = 2; i < 6; ++i) r.push_back(Free{e(), HeapKind::kGcj, 0x20'0000 + i * 32});
  r.push_back(Free{e(), HeapKind::kGcj, 0x20'0000 + 69 * 32});
  r.push_back(Alloc{e(), HeapKind::kGcj, 0x20'0000 + 69 * 32, 32, 32, 2, 0});
  r.push_back(Alloc{e(), HeapKind::kGcj, 0x20'0000 + 5 * 32, 32, 32, 2, 0});
  r.push_back(Alloc{e(), HeapKind::kGcj, 0x20'0000 + 4 * 32, 30, 32, 2, 5});
  // The same address allocated twice without a free in between (a free the recorder missed),
  // then freed once.
  r.push_back(Alloc{e(), HeapKind::kNative, 0x8000, 16, 16, 1, 0});
  r.push_back(Alloc{e(), HeapKind::kNative, 0x8000, 24, 32, 1, 0});
  r.push_back(Free{e(), HeapKind::kNative, 0x8000});
  r.push_back(Free{e(), HeapKind::kNative, 0x8000});
  // Reallocs, with and without type.
  r.push_back(Realloc{e(), HeapKind::kNative, 0x20'0020, 0x30'0000, 100, 104, 2, 0});
  r.push_back(Realloc{e(), HeapKind::kGcTyped, 0x30'0000, 0x30'0000, 50, 56, 2, 9});
  r.push_back(Realloc{e(), HeapKind::kOther, 0, kHuge, k2p40, k2p40, 0, 0});
  r.push_back(Realloc{e(), HeapKind::kManaged, kHuge, 0, 0, 0, 0, kU32Max});
  // Sequence gaps: small, large, huge.
  seq += 1;
  r.push_back(Alloc{e(), HeapKind::kNative, 0x40'0000, 8, 8, 1, 0});
  seq += 1000;
  r.push_back(Free{e(), HeapKind::kNative, 0x40'0000});
  seq += k2p40;
  r.push_back(Alloc{e(), HeapKind::kNative, 0x40'0000, 8, 8, 1, 0});
  // Time going backwards and forwards, to the top of the range and back.
  t = 1'000'000'000;
  r.push_back(Free{e(), HeapKind::kNative, 0x40'0000});
  t = 500;
  r.push_back(Alloc{e(), HeapKind::kNative, 0x41'0000, 8, 8, 1, 0});
  t = 0;
  r.push_back(Free{e(), HeapKind::kNative, 0x41'0000});
  t = kU64Max - 5;
  r.push_back(FrameMark{e(), 1});
  t = 1;
  r.push_back(FrameMark{e(), kU64Max});
  // Thread switches.
  th = 1;
  r.push_back(ThreadStart{e(), 1, 4243, "worker", 0, 0});
  r.push_back(Alloc{e(), HeapKind::kNative, 0x50'0000, 24, 32, 1, 0});
  th = 7;
  r.push_back(Free{e(), HeapKind::kNative, 0x50'0000});
  th = kU32Max;
  r.push_back(Alloc{e(), HeapKind::kNative, 0x50'0000, 24, 32, 1, 0});
  th = 0;
  r.push_back(Free{e(), HeapKind::kNative, 0x50'0000});
  th = 1;
  t = 2000;
  // Garbage collections with root sets and collected sets (sorted input).
  r.push_back(GcBegin{e(), 1, 1u << 30, -1});
  RootSet rs{e(), 1, {}};
  for (int s = 0; s <= static_cast<int>(kLastRootSource); ++s)
    rs.roots.push_back({0x60'1000 + 0x100u * static_cast<uint64_t>(s), 0x2000,
                        static_cast<RootSource>(s), static_cast<uint32_t>(s)});
  rs.roots.push_back({kHuge, 0, RootSource::kMonoHandle, kU32Max});
  r.push_back(rs);
  r.push_back(Collected{1, {0, 0x10000, 0x10100, kHuge}});
  std::vector<uint64_t> big;
  for (uint64_t i = 0; i < 2 * kPerCollected + 50; ++i) big.push_back(0x7000'0000 + i * i * 16);
  r.push_back(Collected{1, big});
  r.push_back(Collected{1, {}});
  t = 2500;
  r.push_back(GcEnd{e(), 1, 1u << 29, 1u << 28, 123'456});
  r.push_back(GcBegin{e(), 2, 0, 2});
  r.push_back(RootSet{e(), 2, {}});
  r.push_back(GcEnd{e(), 2, kHuge, 0, 0});
  r.push_back(GcBegin{e(), kU32Max, k2p40, std::numeric_limits<int32_t>::min()});
  r.push_back(GcEnd{e(), kU32Max, k2p40, k2p40, kU64Max});
  // Root ranges for every source, added and removed.
  for (int s = 0; s <= static_cast<int>(kLastRootSource); ++s)
    r.push_back(RootRange{e(), s % 2 == 0, 0x60'0000 + static_cast<uint64_t>(s), 0x100,
                          static_cast<RootSource>(s), s % 3 ? "label " + std::to_string(s) : ""});
  r.push_back(RootRange{e(), false, kHuge, k2p40, RootSource::kRegistered, "top"});
  r.push_back(CustomEvent{e(), 1, {1, 2, 3, 0, 255}});
  r.push_back(CustomEvent{e(), kU32Max, {}});
  r.push_back(CustomEvent{e(), 2, {7}, kU32Max});  // with the stack that raised it
  r.push_back(Lost{e(), 17, 3, "ring buffer full"});
  r.push_back(Lost{e(), 0, 0, ""});
  r.push_back(Lost{e(), kU64Max, kU32Max, "everything"});
  r.push_back(GcHandle{e(), 7, GcHandleType::kWeakTrackResurrection, 0x7f00'1234'5670, true});
  r.push_back(GcHandle{e(), kU32Max, GcHandleType::kPinned, 0, false});
  r.push_back(GcHandle{e(), 0, GcHandleType::kOther, kU64Max, true});
  r.push_back(Finalize{e(), 0x7f00'1234'5670});
  r.push_back(Finalize{e(), kU64Max});
  r.push_back(ModuleUnload{e(), 0x7f00'0000'0000});
  r.push_back(ModuleUnload{e(), 0});
  r.push_back(ThreadStop{e(), 1});
  th = 0;
  r.push_back(ThreadStop{e(), 0});
  return r;
}

// What decoding yields: collected sets larger than kPerCollected come back as several records.
std::vector<Record> expectedDecoded(const std::vector<Record>& input) {
  std::vector<Record> out;
  for (const Record& rec : input) {
    const auto* c = std::get_if<Collected>(&rec);
    if (!c || c->addresses.size() <= kPerCollected) {
      out.push_back(rec);
      continue;
    }
    for (size_t i = 0; i < c->addresses.size(); i += kPerCollected) {
      size_t n = std::min<size_t>(kPerCollected, c->addresses.size() - i);
      out.push_back(Collected{c->gcNumber, {c->addresses.begin() + static_cast<ptrdiff_t>(i),
                                            c->addresses.begin() + static_cast<ptrdiff_t>(i + n)}});
    }
  }
  return out;
}

WriterOptions options(uint32_t chunkBytes, bool compress) {
  WriterOptions o;
  o.recordsChunkBytes = chunkBytes;
  o.ramChunkBytes = chunkBytes;
  o.compress = compress;
  o.maxCollectedPerRecord = kPerCollected;
  return o;
}

// Re-encodes a decoded log with a fresh writer, chunk by chunk in file order.
Bytes rewrite(const LogReader& r, const WriterOptions& o) {
  MemorySink sink;
  LogWriter w(sink, r.header(), o);
  for (const ChunkRef& c : r.chunks()) {
    if (c.header.type == static_cast<uint16_t>(ChunkType::kRecords)) {
      for (const Record& rec : decodeChunk(r, c)) w.write(rec);
    } else if (c.header.type == static_cast<uint16_t>(ChunkType::kRamDump)) {
      for (const RamSegment& s : r.ramSegments(c)) w.write(s);
    }
    // A chunk the writer closed because it was full is closed already; the last one of a run
    // was closed by flush() in the original too.
    w.flush();
  }
  w.finish();
  REQUIRE(w.ok());
  return sink.bytes;
}

std::vector<uint8_t> pattern(size_t n, uint32_t seed) {
  std::vector<uint8_t> b(n);
  uint32_t x = seed;
  for (auto& v : b) {
    x = x * 1664525u + 1013904223u;
    v = static_cast<uint8_t>(x >> 24);
  }
  return b;
}

}  // namespace

TEST_CASE("every record kind round-trips field by field", "[roundtrip]") {
  const auto params = GENERATE(table<uint32_t, bool>(
      {{256u << 10, true}, {256u << 10, false}, {256, true}, {256, false}, {64, true}}));
  const uint32_t chunkBytes = std::get<0>(params);
  const bool compress = std::get<1>(params);
  INFO("recordsChunkBytes " << chunkBytes << ", compress " << compress);
  const std::vector<Record> input = edgeRecords();
  const Header header = testHeader();

  std::set<size_t> kinds;
  for (const Record& rec : input) kinds.insert(rec.index());
  REQUIRE(kinds.size() == kRecordKindCount);  // the input covers every alternative of Record

  Bytes log = writeLog(header, options(chunkBytes, compress), [&](LogWriter& w) {
    for (const Record& rec : input) w.write(rec);
  });
  LogReader r = LogReader::fromBytes(log);
  CHECK(r.major() == kFormatMajor);
  CHECK(r.minor() == kFormatMinor);
  CHECK(r.header() == header);
  CHECK(r.end().complete);
  CHECK(r.end().intactBytes == log.size());
  CHECK(r.end().fileBytes == log.size());
  CHECK(r.end().reason.empty());
  REQUIRE(r.index().has_value());
  if (chunkBytes < 1024) {
    CHECK(r.chunks().size() >= 5);
  } else {
    CHECK(r.chunks().size() == 1);
  }

  const std::vector<Record> got = decodeAll(r);
  requireSameRecords(got, expectedDecoded(input));

  // The big collected set comes back as three records of the same GC whose concatenation is
  // the input set.
  const auto& bigIn = std::get<Collected>(*std::find_if(input.begin(), input.end(), [](const Record& x) {
    return std::holds_alternative<Collected>(x) && std::get<Collected>(x).addresses.size() > kPerCollected;
  }));
  std::vector<uint64_t> concat;
  size_t pieces = 0;
  for (const Record& rec : got) {
    const auto* c = std::get_if<Collected>(&rec);
    if (!c || c->gcNumber != 1 || c->addresses.size() < 50) continue;
    ++pieces;
    concat.insert(concat.end(), c->addresses.begin(), c->addresses.end());
  }
  CHECK(pieces == 3);
  CHECK(concat == bigIn.addresses);

  // The format carries these values, but a log may not hold them all: the full check refuses
  // the first beyond its rules (check.h), the stack node id 2^32 - 1 with 6 nodes before it.
  auto err = formatErrorOf([&] { (void)summarize(r); });
  REQUIRE(err);
  CHECK(err->code() == ErrorCode::kBadRecord);
  CHECK_THAT(err->what(), Catch::Contains("stack node id 4294967295 is beyond the 6 stack nodes"));
}

TEST_CASE("collected addresses are sorted by the writer", "[roundtrip]") {
  Bytes log = writeLog(testHeader(), options(256u << 10, true), [](LogWriter& w) {
    w.write(Collected{5, {0x300, 0x100, kHuge, 0, 0x200, 0x100}});
    w.write(Collected{6, {}});
  });
  LogReader r = LogReader::fromBytes(log);
  requireSameRecords(decodeAll(r), {Collected{5, {0, 0x100, 0x100, 0x200, 0x300, kHuge}},
                                    Collected{6, {}}});
}

TEST_CASE("a large collected set comes out sorted whatever its spread", "[roundtrip]") {
  // Shuffled, with duplicates, near and far addresses (the radix sort's digits cover the span).
  std::vector<uint64_t> set;
  uint64_t x = 88172645463325252ull;
  for (int i = 0; i < 5000; ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    set.push_back(i % 3 == 0 ? 0x7f00'0000'0000 + (x & 0xFFFF'FFF0) : 0x5500'0000 + (x & 0xFFFF0));
  }
  set.push_back(0);
  set.push_back(kHuge);
  set.push_back(set[17]);
  std::vector<uint64_t> expected = set;
  std::sort(expected.begin(), expected.end());
  Bytes log = writeLog(testHeader(), options(256u << 10, true), [&](LogWriter& w) {
    w.write(Collected{3, set});
  });
  LogReader r = LogReader::fromBytes(log);
  std::vector<uint64_t> got;
  for (const Record& rec : decodeAll(r))
    if (const auto* c = std::get_if<Collected>(&rec)) got.insert(got.end(), c->addresses.begin(), c->addresses.end());
  CHECK(got == expected);
}

TEST_CASE("a collected set is split into records of maxCollectedPerRecord", "[roundtrip]") {
  std::vector<uint64_t> set;
  for (uint64_t i = 0; i < 10; ++i) set.push_back(i * 8);
  WriterOptions o;
  o.maxCollectedPerRecord = 4;
  Bytes log = writeLog(testHeader(), o, [&](LogWriter& w) { w.write(Collected{9, set}); });
  LogReader r = LogReader::fromBytes(log);
  requireSameRecords(decodeAll(r), {Collected{9, {0, 8, 16, 24}}, Collected{9, {32, 40, 48, 56}},
                                    Collected{9, {64, 72}}});
  CHECK(r.chunks().at(0).header.recordCount == 3);
  CHECK(r.index()->chunks.at(0).gcNumbers == std::vector<uint32_t>{9});
}

TEST_CASE("headers round-trip", "[roundtrip][header]") {
  Header h = GENERATE(Header{}, testHeader(), [] {
    Header x;
    x.recorderVersion = "r";
    x.startWallTimeNs = std::numeric_limits<int64_t>::min();
    x.startClockNs = kU64Max;
    x.clock = "";
    x.pointerSize = 4;
    x.pid = kU32Max;
    x.parentPid = kU32Max;
    x.commandLine = {"a b", "\"quoted\"", "\xc3\xa9"};
    x.runtimes = {{Runtime::Kind::kMono, "6.12"}};
    return x;
  }());
  Bytes log = writeLog(h, {}, [](LogWriter&) {});
  LogReader r = LogReader::fromBytes(log);
  CHECK(r.header() == h);
  CHECK(r.chunks().empty());
  CHECK(r.end().complete);
  REQUIRE(r.index().has_value());
  IndexData empty{true, {}, 0, 0, 0, 0};
  empty.codeMarked = true;
  CHECK(*r.index() == empty);
}

TEST_CASE("the footer index describes every chunk exactly", "[roundtrip][index]") {
  Bytes log = writeLog(testHeader(), {}, [](LogWriter& w) {
    w.write(LogString{1, "tick"});
    w.write(Alloc{ev(10, 100, 0), HeapKind::kNative, 0x1000, 16, 16, 0, 0});
    w.write(GcBegin{ev(11, 100, 1), 3, 4096, -1});
    w.write(Collected{3, {0x10}});
    w.write(GcEnd{ev(12, 250, 1), 3, 4096, 1024, 5});
    w.write(CustomEvent{ev(13, 250, 1), 1, {}});
    w.write(Lost{ev(14, 90, 0), 5, 2, "full"});
    w.flush();
    w.write(RamSegment{SegmentKind::kObject, 3, 0x1000, 4, 0, true, {1, 2, 3, 4}});
  });
  LogReader r = LogReader::fromBytes(log);
  REQUIRE(r.chunks().size() == 2);
  const uint64_t off0 = firstChunkOffset(log);
  const ChunkRef& c0 = r.chunks()[0];
  const ChunkRef& c1 = r.chunks()[1];
  CHECK(c0.offset == off0);
  CHECK(c1.offset == c0.end());
  // Records chunk: string, TIME, alloc, THREAD, gc_begin, collected, TIME, gc_end, custom,
  // TIME (backwards), THREAD, lost.
  IndexEntry e0{off0, 1, 10, 14, 12, {3}, {1}, 100, 90};
  IndexEntry e1{c0.end(), 2, 15, 14, 1, {3}, {}, 0, 0};
  IndexData want{true, {e0, e1}, 15, 250, 13, 5, 5};  // 5 events: seq 10..14
  want.codeMarked = true;  // and no chunk names code
  REQUIRE(r.index().has_value());
  CHECK(*r.index() == want);
  CHECK(c0.header.firstSeq == 10);
  CHECK(c0.header.recordCount == 12);
  CHECK(c1.header.firstSeq == 15);
  CHECK(c1.header.recordCount == 1);
  // Trailer: index offset, then "HMFOOTER".
  const uint8_t* tr = log.data() + log.size() - kTrailerSize;
  CHECK(loadLe(tr, 8) == c1.end());
  CHECK(std::memcmp(tr + 8, "HMFOOTER", 8) == 0);
  CHECK(std::memcmp(log.data() + c1.end(), "HMCK", 4) == 0);
  CHECK(loadLe(log.data() + c1.end() + 4, 2) == 3);  // index chunk type
}

TEST_CASE("the index matches the records of every chunk of a many-chunk log", "[roundtrip][index]") {
  const std::vector<Record> input = edgeRecords();
  Bytes log = writeLog(testHeader(), options(256, true), [&](LogWriter& w) {
    for (const Record& rec : input) w.write(rec);
  });
  LogReader r = LogReader::fromBytes(log);
  REQUIRE(r.index().has_value());
  const IndexData& idx = *r.index();
  REQUIRE(idx.chunks.size() == r.chunks().size());
  REQUIRE(r.chunks().size() >= 5);
  uint64_t nextSeq = 0, endTime = 0, total = 0, lost = 0;
  size_t marked = 0;  // chunks that name code
  for (size_t k = 0; k < r.chunks().size(); ++k) {
    INFO("chunk " << k);
    const ChunkRef& c = r.chunks()[k];
    IndexEntry want;
    want.offset = c.offset;
    want.type = 1;
    want.recordCount = c.header.recordCount;
    bool any = false;
    auto gc = [&](uint32_t g) {
      if (std::find(want.gcNumbers.begin(), want.gcNumbers.end(), g) == want.gcNumbers.end())
        want.gcNumbers.push_back(g);
    };
    for (const Record& rec : decodeChunk(r, c)) {
      std::visit(
          [&](const auto& x) {
            using T = std::decay_t<decltype(x)>;
            if constexpr (requires { x.ev; }) {
              if (!any) want.firstSeq = x.ev.seq, want.firstTimeNs = x.ev.timeNs;
              any = true;
              want.lastSeq = x.ev.seq;
              want.lastTimeNs = x.ev.timeNs;
              endTime = std::max(endTime, x.ev.timeNs);
            }
            if constexpr (std::is_same_v<T, GcBegin> || std::is_same_v<T, GcEnd> ||
                          std::is_same_v<T, RootSet> || std::is_same_v<T, Collected>)
              gc(x.gcNumber);
            if constexpr (std::is_same_v<T, CustomEvent>)
              if (std::find(want.eventNameIds.begin(), want.eventNameIds.end(), x.nameId) ==
                  want.eventNameIds.end())
                want.eventNameIds.push_back(x.nameId);
            if constexpr (std::is_same_v<T, Lost>) lost += x.count;
            if constexpr (std::is_same_v<T, ModuleLoad> || std::is_same_v<T, JitRange> ||
                          std::is_same_v<T, MethodDef>)
              want.namesCode = true;
          },
          rec);
    }
    if (!any) want.firstSeq = nextSeq, want.lastSeq = nextSeq - 1;
    nextSeq = want.lastSeq + 1;
    total += want.recordCount;
    CHECK(c.header.firstSeq == want.firstSeq);
    CHECK(idx.chunks[k] == want);
    marked += want.namesCode;
  }
  CHECK(idx.codeMarked);
  CHECK(marked > 0);
  CHECK(marked < idx.chunks.size());
  CHECK(idx.complete);
  CHECK(idx.endSeq == nextSeq);
  CHECK(idx.endTimeNs == endTime);
  CHECK(idx.recordCount == total);
  CHECK(idx.lostEvents == lost);  // wraps: one Lost has count 2^64-1
}

TEST_CASE("chunks decode on their own: delta state resets at every chunk", "[roundtrip]") {
  const std::vector<Record> input = edgeRecords();
  Bytes log = writeLog(testHeader(), options(256, false), [&](LogWriter& w) {
    for (const Record& rec : input) w.write(rec);
  });
  LogReader r = LogReader::fromBytes(log);
  REQUIRE(r.chunks().size() >= 5);
  // Decode the chunks last to first, each with a fresh decoder, and put them back in order.
  std::vector<std::vector<Record>> parts(r.chunks().size());
  for (size_t k = r.chunks().size(); k-- > 0;) {
    std::vector<uint8_t> buf;
    auto raw = r.payload(r.chunks()[k], buf);
    decodeRecords(raw, r.chunks()[k].header.firstSeq,
                  [&](const auto& x) { parts[k].emplace_back(x); });
  }
  std::vector<Record> all;
  for (auto& p : parts) all.insert(all.end(), p.begin(), p.end());
  requireSameRecords(all, expectedDecoded(input));
}

TEST_CASE("re-encoding the decoded records reproduces the log byte for byte", "[roundtrip]") {
  const auto params =
      GENERATE(table<uint32_t, bool>({{256u << 10, true}, {256, true}, {256, false}, {100, true}}));
  const uint32_t chunkBytes = std::get<0>(params);
  const bool compress = std::get<1>(params);
  INFO("chunk bytes " << chunkBytes << ", compress " << compress);
  const WriterOptions o = [&] {
    WriterOptions x = options(chunkBytes, compress);
    x.maxSegmentBytes = 300;
    return x;
  }();
  const std::vector<Record> input = edgeRecords();
  const size_t half = input.size() / 2;
  const auto seg = pattern(700, 1);
  Bytes log = writeLog(testHeader(), o, [&](LogWriter& w) {
    for (size_t i = 0; i < half; ++i) w.write(input[i]);
    w.flush();
    w.write(RamSegment{SegmentKind::kObject, 1, 0x1000, 700, 0, true, seg});        // split in 3
    w.write(RamSegment{SegmentKind::kStaticRoot, 1, 0x9000, 700, 0, true, seg});    // all deduped
    w.write(RamSegment{SegmentKind::kThreadStack, 2, 0, 0, 0, true, {}});           // empty
    w.write(RamSegment{SegmentKind::kOther, 2, kHuge, 5, 0x1234, false, {}});        // no bytes
    w.write(RamSegment{SegmentKind::kObject, 2, 0x2000, 64, 0, true, pattern(64, 2)});
    for (size_t i = half; i < input.size(); ++i) w.write(input[i]);
    w.write(RamSegment{SegmentKind::kObject, 3, 0x3000, 32, 0, true, pattern(32, 3)});
  });
  LogReader r = LogReader::fromBytes(log);
  REQUIRE(r.header() == testHeader());
  Bytes again = rewrite(r, o);
  CHECK(again.size() == log.size());
  CHECK(again == log);
}

TEST_CASE("the byte layout follows format.h", "[roundtrip][layout]") {
  Header h = testHeader();
  WriterOptions o;
  o.compress = false;
  Bytes log = writeLog(h, o, [](LogWriter& w) {
    w.write(StackNode{1, 0, 0x401000, false});
    w.write(FrameMark{ev(7), 5});
  });
  // Prefix.
  REQUIRE(log.size() > kPrefixSize);
  CHECK(std::memcmp(log.data(), "HEAPMAN\x1a", 8) == 0);
  CHECK(loadLe(log.data() + 8, 2) == 1);
  CHECK(loadLe(log.data() + 10, 2) == kFormatMinor);
  const uint64_t hlen = loadLe(log.data() + 12, 4);
  CHECK(loadLe(log.data() + 16, 8) == XXH3_64bits(log.data() + kPrefixSize, hlen));
  // The one records chunk, stored raw: a STACK NODE and an EXTENDED FrameMark.
  const uint8_t* c = log.data() + kPrefixSize + hlen;
  const Bytes payload = {
      0x02, 0x00, 0x00,                    // stream lengths T, A, S
      tag::kStackNative, tag::kExtended,   // T
      0x02, 0x02, 0x80, 0xc0, 0x80, 0x04,  // M: zz(1 - 0), zz(1 - 0), zz(0x401000)
      0x09, 0x02, 0x06,                    // M: kind FrameMark, flags event, body length
      0x10, 0x02, 0x10, 0x01, 0x01, 0x05,  // M: packed Cap'n Proto FrameMark{frame = 5}
  };
  CHECK(std::memcmp(c, "HMCK", 4) == 0);
  CHECK(loadLe(c + 4, 2) == 1);    // type: records
  CHECK(loadLe(c + 6, 2) == 0);    // flags: raw
  CHECK(loadLe(c + 8, 4) == payload.size());
  CHECK(loadLe(c + 12, 4) == payload.size());
  CHECK(loadLe(c + 16, 8) == 7);   // first sequence number
  CHECK(loadLe(c + 24, 4) == 2);   // records
  CHECK(loadLe(c + 28, 4) == static_cast<uint32_t>(XXH3_64bits(c, 28)));
  CHECK(loadLe(c + 32, 8) == XXH3_64bits(c + kChunkHeaderSize, payload.size()));
  CHECK(Bytes(c + kChunkHeaderSize, c + kChunkHeaderSize + payload.size()) == payload);
  CHECK(packedFrameMark(5) == Bytes(payload.end() - 6, payload.end()));
  // Index chunk right after, then the trailer pointing at it.
  const uint64_t idxOff = kPrefixSize + hlen + kChunkHeaderSize + payload.size();
  CHECK(loadLe(log.data() + log.size() - 16, 8) == idxOff);
  CHECK(loadLe(log.data() + idxOff + 4, 2) == 3);
  CHECK(idxOff + kChunkHeaderSize + loadLe(log.data() + idxOff + 8, 4) + kTrailerSize == log.size());
}

TEST_CASE("a hand-encoded records chunk decodes as format.h says", "[roundtrip][layout]") {
  HandChunk h;
  h.stackNode(false, 10, 3, 0x401000);        // node 10, parent 7, frame 0x401000
  h.extended(9, true, packedFrameMark(1));    // FrameMark 1: seq 100, time 0, thread 0
  h.time(5000);                               // time 5000 (from 0 at chunk start)
  h.thread(3);
  h.extended(9, true, packedFrameMark(2));    // seq 101
  h.stackNode(true, -5, 5, -0x400ff0);        // node 5, parent 0, frame 0x10
  h.collected(4, {0x20, 0x30});
  h.time(-1000);                              // time goes back to 4000
  h.extended(99, false, {1, 2, 3});           // unknown definition: skipped, no sequence number
  h.extended(9, true, packedFrameMark(0));    // seq 102
  h.extended(98, true, {0xff});               // unknown event: skipped, takes seq 103
  h.extended(9, true, packedFrameMark(3));    // seq 104
  std::vector<Record> got;
  uint32_t n = decodeRecords(h.payload(), 100, [&](const auto& x) { got.emplace_back(x); });
  CHECK(n == 12);
  requireSameRecords(got, {
                              StackNode{10, 7, 0x401000, false},
                              FrameMark{ev(100, 0, 0), 1},
                              FrameMark{ev(101, 5000, 3), 2},
                              StackNode{5, 0, 0x10, true},
                              Collected{4, {0x20, 0x30}},
                              FrameMark{ev(102, 4000, 3), 0},
                              FrameMark{ev(104, 4000, 3), 3},
                          });
}

TEST_CASE("allocator-like churn round-trips over many chunks", "[roundtrip][churn]") {
  const auto params = GENERATE(table<uint64_t, uint32_t, bool>(
      {{1, 256u << 10, true}, {2, 4096, true}, {3, 512, false}, {4, 300, true}}));
  const uint64_t seed = std::get<0>(params);
  WriterOptions o = options(std::get<1>(params), std::get<2>(params));
  INFO("seed " << seed << ", chunk bytes " << o.recordsChunkBytes);
  const std::vector<Record> input = churn(seed, 20000, seed * 1000);
  Bytes log = writeLog(testHeader(), o, [&](LogWriter& w) {
    for (const Record& rec : input) w.write(rec);
  });
  LogReader r = LogReader::fromBytes(log);
  requireSameRecords(decodeAll(r), expectedDecoded(input));
  LogSummary s = summarize(r);
  CHECK(s.events == static_cast<uint64_t>(std::count_if(input.begin(), input.end(), [](const Record& x) {
          return std::visit([](const auto& y) { return requires { y.ev; }; }, x);
        })));
  CHECK(rewrite(r, o) == log);
}
