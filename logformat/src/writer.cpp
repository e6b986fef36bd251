#include "heapman/logformat/writer.h"

#include <errno.h>
#include <lz4.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cstring>
#include <unordered_set>

#include "capnp_codec.h"
#include "flat_map.h"
#include "heapman/logformat/chunk_model.h"

namespace heapman::log {

bool FdSink::write(const void* data, size_t n) {
  auto* p = static_cast<const uint8_t*>(data);
  while (n > 0) {
    ssize_t w = ::write(fd_, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      error_ = std::strerror(errno);
      return false;
    }
    if (w == 0) {
      error_ = "write returned 0";
      return false;
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool MemorySink::write(const void* data, size_t n) {
  auto* p = static_cast<const uint8_t*>(data);
  bytes.insert(bytes.end(), p, p + n);
  return true;
}

// Per-chunk encoder state: the decoder's state (format.h) plus the lookups only the encoder
// needs. Reset by resetChunk().
struct LogWriter::Impl {
  static constexpr uint32_t kNoInfo = UINT32_MAX;  // findInfo: not in this chunk's dictionary
  ByteBuffer t, a, s, m;
  uint32_t count = 0;
  bool haveEvent = false;
  uint64_t chunkFirstSeq = 0;
  uint64_t nextSeq = 0;
  uint64_t curTime = 0;
  uint32_t curThread = 0;
  uint64_t lastFrame = 0;
  uint32_t lastNodeId = 0;
  ChunkModel model;
  // Live address -> allocation ordinal in this chunk; placed by address (flat_map.h).
  detail::FlatMap<detail::FlatKeys::kByAddress> ordinalOf{16};
  detail::FlatMap<> infoIndex{10};  // AllocInfo hash -> dictionary index
  // The entry the last allocation named: a run of allocations of one kind (one site, one class)
  // finds it without hashing. An index, compared through model.infos: a copy of the caller's
  // AllocInfo would read its just-written fields as one wide load, which store forwarding
  // cannot serve (that stall cost more than the hash).
  uint32_t lastInfoIndex = kNoInfo;
  IndexEntry entry;

  ByteBuffer ram;
  uint32_t ramCount = 0;
  IndexEntry ramEntry;
  std::unordered_set<uint64_t> ramHashes;

  uint64_t globalNextSeq = 0;  // one past the last event's sequence number
  bool seqStarted = false;     // a records chunk with an event was written: globalNextSeq holds
  uint64_t endTime = 0;
  IndexData index;
  bool rawRecords = false;  // a records chunk written raw: which chunks name code is unknown
  std::vector<uint8_t> scratch;

  void resetChunk() {
    t.clear(), a.clear(), s.clear(), m.clear();
    count = 0;
    haveEvent = false;
    curTime = 0;
    curThread = 0;
    lastFrame = 0;
    lastNodeId = 0;
    model.reset();
    ordinalOf.clear();
    infoIndex.clear();
    lastInfoIndex = kNoInfo;
    entry = IndexEntry{};
  }
  size_t rawSize() const { return t.size() + a.size() + s.size() + m.size() + 15; }

  static uint64_t infoHash(const AllocInfo& info) {
    // A lookup key only (entries are compared in full on a hit; two infos with one key cost a
    // duplicate dictionary entry, never a wrong one): three independent multiplies, folded, so
    // the hash is a few cycles on the writer's busiest path rather than a chain of mixing rounds.
    uint64_t h = (info.size << 3 | static_cast<uint64_t>(info.heap)) * 0x9E3779B97F4A7C15ull ^
                 (info.actualSize - info.size) * 0xBF58476D1CE4E5B9ull ^
                 (uint64_t{info.stackId} << 32 | info.typeId) * 0x94D049BB133111EBull;
    return h ^ (h >> 31);
  }
  // The dictionary index of `info` in this chunk, or kNoInfo. `cls`: the allocation's size class,
  // whose last entry is tried second (one class, one site or type, mostly; its entry is in cache).
  // A plain index, not std::optional: GCC returns that pair through a stack slot written in two
  // narrow stores and read back as one wide load, a store-forwarding stall (~15 cycles) on the
  // writer's busiest call (it was most of this function's time in perf).
  // Inline in writeAlloc (always_inline, with putInfo's new-entry path out of line): as calls
  // they cost ~35 instructions an allocation on guile's log (callgrind), spills and frame.
  [[gnu::always_inline]] uint32_t findInfo(const AllocInfo& info,
                                           ChunkModel::SizeClass* cls = nullptr) {
    if (lastInfoIndex != kNoInfo && model.infos[lastInfoIndex] == info) return lastInfoIndex;
    // A hint only (a chunk reset zeroes it): in range and equal, or not used.
    if (cls && cls->lastInfo < model.infos.size() && model.infos[cls->lastInfo] == info) {
      lastInfoIndex = cls->lastInfo;
      return lastInfoIndex;
    }
    const uint32_t* found = infoIndex.find(infoHash(info));
    if (found && model.infos[*found] == info) {
      lastInfoIndex = *found;
      return *found;
    }
    return kNoInfo;
  }
  // Writes the dictionary reference for `info` into S (a new entry when unseen in this chunk).
  [[gnu::always_inline]] uint32_t putInfo(const AllocInfo& info,
                                          ChunkModel::SizeClass* cls = nullptr) {
    if (uint32_t known = findInfo(info, cls); known != kNoInfo) {
      s.putVarint(known);
      return known;
    }
    return addInfo(info);
  }
  [[gnu::noinline]] uint32_t addInfo(const AllocInfo& info) {
    auto idx = static_cast<uint32_t>(model.infos.size());
    s.putVarint(idx);
    s.putByte(static_cast<uint8_t>(info.heap));
    s.putVarint(info.size);
    s.putVarint(info.actualSize - info.size);
    s.putVarint(info.stackId);
    s.putVarint(info.typeId);
    model.infos.push_back(info);
    infoIndex.insert(infoHash(info), idx);
    lastInfoIndex = idx;
    return idx;
  }
  void noteGc(uint32_t gc, IndexEntry& e) {
    if (std::find(e.gcNumbers.begin(), e.gcNumbers.end(), gc) == e.gcNumbers.end())
      e.gcNumbers.push_back(gc);
  }
};

LogWriter::LogWriter(Sink& sink, const Header& header, WriterOptions options)
    : sink_(sink), options_(options), impl_(std::make_unique<Impl>()) {
  impl_->resetChunk();
  std::vector<uint8_t> body = detail::encodeHeader(header);
  uint8_t prefix[kPrefixSize];
  std::memcpy(prefix, kMagic, 8);
  storeLe(prefix + 8, kFormatMajor, 2);
  storeLe(prefix + 10, kFormatMinor, 2);
  storeLe(prefix + 12, body.size(), 4);
  storeLe(prefix + 16, XXH3_64bits(body.data(), body.size()), 8);
  if (emit(prefix, sizeof prefix)) emit(body.data(), body.size());
}

LogWriter::~LogWriter() = default;

void LogWriter::fail(const std::string& why) {
  if (ok_) error_ = why;
  ok_ = false;
}

bool LogWriter::emit(const void* p, size_t n) {
  if (!ok_) return false;
  if (!sink_.write(p, n)) {
    std::string e = sink_.error();
    fail(e.empty() ? std::string("write failed") : e);
    return false;
  }
  offset_ += n;
  return true;
}

// The per-record helpers are inline (writer.cpp is their only user): they run for every record.
__attribute__((always_inline)) inline void LogWriter::noteTime(const EventCommon& ev) {
  Impl& d = *impl_;
  if (ev.timeNs != d.curTime) {
    d.t.putByte(tag::kTime);
    d.m.putZigzag(static_cast<int64_t>(ev.timeNs - d.curTime));
    d.curTime = ev.timeNs;
    ++d.count;
  }
  if (ev.thread != d.curThread) {
    d.t.putByte(tag::kThread);
    d.m.putVarint(ev.thread);
    d.curThread = ev.thread;
    ++d.count;
  }
}

// Emits TIME, THREAD and SEQ records as needed before an event.
__attribute__((always_inline)) inline void LogWriter::beginEvent(const EventCommon& ev) {
  Impl& d = *impl_;
  if (!d.haveEvent) {
    d.haveEvent = true;
    // A records chunk starts where the one before it ended (a gap there is a SEQ record, as
    // anywhere), so that a reader tells a chunk missing from the file from events never written.
    d.chunkFirstSeq = d.seqStarted ? d.globalNextSeq : ev.seq;
    d.nextSeq = d.chunkFirstSeq;
    d.entry.firstTimeNs = ev.timeNs;
  }
  noteTime(ev);
  if (ev.seq != d.nextSeq) {
    d.t.putByte(tag::kSeq);
    d.m.putZigzag(static_cast<int64_t>(ev.seq - d.nextSeq));
    ++d.count;
  }
  d.nextSeq = ev.seq + 1;
  ++d.index.eventCount;
  d.entry.lastTimeNs = ev.timeNs;
  d.endTime = std::max(d.endTime, ev.timeNs);
}

__attribute__((always_inline)) inline void LogWriter::afterRecord() {
  ++impl_->count;
  if (impl_->rawSize() >= options_.recordsChunkBytes) flushRecords();
}

void LogWriter::writeAlloc(const EventCommon& ev, uint64_t address, const AllocInfo& ai) {
  if (!ok_ || finished_) return;
  Impl& d = *impl_;
  beginEvent(ev);
  ChunkModel::SizeClass& cls = d.model.sizeClass(ai.actualSize);
  bool lifo = ChunkModel::lifoHas(cls) && ChunkModel::lifoTop(cls) == address;
  int lifoIndex = lifo ? 0 : -1;
  uint32_t info;
  if (lifo) {
    // One byte when the entry exists and its index fits the tag.
    uint32_t known = d.findInfo(ai, &cls);
    if (known != Impl::kNoInfo && known < tag::kAllocLifoInfoSpan) {
      info = known;
      d.t.putByte(static_cast<uint8_t>(tag::kAllocLifoInfo + info));
    } else {
      d.t.putByte(tag::kAllocLifo);
      info = d.putInfo(ai, &cls);
    }
  } else {
    info = d.putInfo(ai, &cls);
    const int deep = ChunkModel::lifoFind(cls, address);
    if (deep > 0) {
      d.t.putByte(tag::kAllocLifoAt);
      d.a.putByte(static_cast<uint8_t>(deep));
      lifoIndex = deep;
    } else if (d.model.sequentialGuess(cls) == address) {
      d.t.putByte(tag::kAllocSeq);
    } else if (d.model.bumpGuess() == address) {
      d.t.putByte(tag::kAllocBump);
    } else {
      // Only the entries written: a log of collected heaps has no frees to fill them.
      const int ring = d.model.ringFind(address);
      if (ring >= 0) {
        d.t.putByte(tag::kAllocRing);
        d.a.putByte(static_cast<uint8_t>(ring));
      } else {
        auto fromLast = static_cast<int64_t>(address - d.model.lastAddress);
        auto fromClass = static_cast<int64_t>(address - cls.last);
        if (zigzag(fromClass) < zigzag(fromLast)) {
          d.t.putByte(tag::kAllocNear);
          d.a.putZigzag(fromClass);
        } else {
          d.t.putByte(tag::kAllocAddr);
          d.a.putZigzag(fromLast);
        }
      }
    }
  }
  // Objects of collected heaps die by Collected records, rarely by a Free: not indexing them
  // keeps this table (its probes were most of the writer's time on GC logs) to the objects that
  // are freed; a rare explicit free of one is coded by address.
  if (!diesByCollection(ai.heap))
    d.ordinalOf.insert(address, static_cast<uint32_t>(d.model.allocCount()));
  d.model.onAllocIn(cls, address, info, lifoIndex);  // cls: looked up above, not reset since
  // The slot the LIFO gave up keeps a copy of an entry: cleared, so that lifoFind's blocks
  // hold no match for addresses not in the LIFO (encoder-only state: positions at or above the
  // top are never read).
  if (lifoIndex >= 0) cls.lifo[cls.top % ChunkModel::kLifoDepth] = 0;
  cls.lastInfo = info;
  afterRecord();
}

void LogWriter::write(const Free& r) {
  if (!ok_ || finished_) return;
  Impl& d = *impl_;
  beginEvent(r.ev);
  const uint32_t* found = d.ordinalOf.find(r.address);
  if (found && d.model.infos[d.model.infoOf(*found)].heap == r.heap) {
    uint64_t ordinal = *found;
    uint64_t back = d.model.allocCount() - 1 - ordinal;
    int64_t ahead = static_cast<int64_t>(ordinal) - d.model.lastFreeOrdinal - 1;
    if (ahead == 0 || (back >= tag::kFreeRecentSpan && ahead > 0 && ahead < tag::kFreeNextSpan)) {
      d.t.putByte(static_cast<uint8_t>(tag::kFreeNext + ahead));
    } else if (back < tag::kFreeRecentSpan) {
      d.t.putByte(static_cast<uint8_t>(tag::kFreeRecent + back));
    } else {
      d.t.putByte(tag::kFreeOrdinal);
      d.a.putVarint(back);
    }
    d.ordinalOf.erase(r.address);
    d.model.onFreeOrdinal(ordinal);
  } else {
    d.t.putByte(tag::kFreeAddress);
    d.m.putByte(static_cast<uint8_t>(r.heap));
    d.a.putZigzag(static_cast<int64_t>(r.address - d.model.lastAddress));
    d.model.onFreeAddress(r.address);
  }
  afterRecord();
}

void LogWriter::write(const Realloc& r) {
  if (!ok_ || finished_) return;
  Impl& d = *impl_;
  beginEvent(r.ev);
  d.t.putByte(tag::kRealloc);
  uint32_t info = d.putInfo(AllocInfo{r.heap, r.size, r.actualSize, r.stackId, r.typeId});
  d.a.putZigzag(static_cast<int64_t>(r.oldAddress - d.model.lastAddress));
  d.a.putZigzag(static_cast<int64_t>(r.newAddress - r.oldAddress));
  d.ordinalOf.erase(r.oldAddress);
  d.ordinalOf.insert(r.newAddress, static_cast<uint32_t>(d.model.allocCount()));
  d.model.onRealloc(r.oldAddress, r.newAddress, info);
  afterRecord();
}

void LogWriter::write(const StackNode& r) {
  if (!ok_ || finished_) return;
  Impl& d = *impl_;
  d.t.putByte(r.managed ? tag::kStackManaged : tag::kStackNative);
  d.m.putZigzag(static_cast<int64_t>(r.id) - static_cast<int64_t>(d.lastNodeId));
  d.m.putZigzag(static_cast<int64_t>(r.id) - static_cast<int64_t>(r.parent));
  d.m.putZigzag(static_cast<int64_t>(r.frame - d.lastFrame));
  d.lastNodeId = r.id;
  d.lastFrame = r.frame;
  afterRecord();
}

namespace {

// Ascending addresses, for the delta encoding. A least-significant-digit radix sort over the
// distance from the smallest address (11-bit digits: 2-3 passes for a collected set spread over
// a few hundred MiB), several times faster than std::sort on the sets a collection produces.
void sortAddresses(std::vector<uint64_t>& a) {
  if (a.size() < 256) {
    std::sort(a.begin(), a.end());
    return;
  }
  auto [lo, hi] = std::minmax_element(a.begin(), a.end());
  uint64_t base = *lo, span = *hi - *lo;
  int bits = span ? 64 - __builtin_clzll(span) : 0;
  constexpr int kDigit = 11;
  std::vector<uint64_t> tmp(a.size());
  std::vector<uint32_t> count(1u << kDigit);
  for (int shift = 0; shift < bits; shift += kDigit) {
    std::fill(count.begin(), count.end(), 0);
    for (uint64_t x : a) ++count[((x - base) >> shift) & ((1u << kDigit) - 1)];
    uint32_t sum = 0;
    for (uint32_t& c : count) {
      uint32_t here = c;
      c = sum;
      sum += here;
    }
    for (uint64_t x : a) tmp[count[((x - base) >> shift) & ((1u << kDigit) - 1)]++] = x;
    a.swap(tmp);
  }
}

}  // namespace

void LogWriter::write(const Collected& r) {
  if (!ok_ || finished_) return;
  // The recorder's sets come sorted (its sweep goes in address order): no copy for those.
  std::vector<uint64_t> copy;
  const std::vector<uint64_t>* sorted = &r.addresses;
  if (!std::is_sorted(r.addresses.begin(), r.addresses.end())) {
    copy = r.addresses;
    sortAddresses(copy);
    sorted = &copy;
  }
  const uint64_t* a = sorted->data();
  size_t perRecord = std::max<uint32_t>(1, options_.maxCollectedPerRecord);
  size_t i = 0;
  do {
    Impl& d = *impl_;  // flushRecords() keeps impl_, only resets its state
    size_t n = std::min(perRecord, sorted->size() - i);
    d.t.putByte(tag::kCollected);
    d.m.putVarint(r.gcNumber);
    d.m.putVarint(n);
    uint8_t* out = d.m.tail(10 * n);
    uint64_t prev = 0;
    for (size_t k = 0; k < n; ++k) {
      out = ByteBuffer::storeVarint(out, a[i + k] - prev);
      prev = a[i + k];
    }
    d.m.setTail(out);
    d.noteGc(r.gcNumber, d.entry);
    i += n;
    afterRecord();
  } while (i < sorted->size() && ok_);
}

void LogWriter::writeExtended(ExtKind kind, const EventCommon* ev,
                              std::span<const uint8_t> body) {
  Impl& d = *impl_;
  if (ev) beginEvent(*ev);
  if (kind == ExtKind::kModuleLoad || kind == ExtKind::kJitRange || kind == ExtKind::kMethodDef)
    d.entry.namesCode = true;  // what frame names depend on (the footer's mark)
  d.t.putByte(tag::kExtended);
  d.m.putVarint(static_cast<uint32_t>(kind));
  d.m.putVarint(ev ? 2u : 0u);
  d.m.putVarint(body.size());
  d.m.putBytes(body.data(), body.size());
  afterRecord();
}

#define HEAPMAN_DEF(Type, Kind) \
  void LogWriter::write(const Type& r) { \
    if (ok_ && !finished_) writeExtended(ExtKind::Kind, nullptr, detail::encodeBody(r)); \
  }
#define HEAPMAN_EVENT(Type, Kind) \
  void LogWriter::write(const Type& r) { \
    if (ok_ && !finished_) writeExtended(ExtKind::Kind, &r.ev, detail::encodeBody(r)); \
  }
HEAPMAN_DEF(LogString, kString)
HEAPMAN_DEF(TypeDef, kTypeDef)
HEAPMAN_DEF(MethodDef, kMethodDef)
HEAPMAN_EVENT(RootRange, kRootRange)
HEAPMAN_EVENT(FrameMark, kFrameMark)
HEAPMAN_EVENT(ThreadStart, kThreadStart)
HEAPMAN_EVENT(ThreadStop, kThreadStop)
HEAPMAN_EVENT(ModuleLoad, kModuleLoad)
HEAPMAN_EVENT(ModuleUnload, kModuleUnload)
HEAPMAN_EVENT(JitRange, kJitRange)
#undef HEAPMAN_DEF
#undef HEAPMAN_EVENT

void LogWriter::write(const GcBegin& r) {
  if (!ok_ || finished_) return;
  impl_->noteGc(r.gcNumber, impl_->entry);
  writeExtended(ExtKind::kGcBegin, &r.ev, detail::encodeBody(r));
}

void LogWriter::write(const GcEnd& r) {
  if (!ok_ || finished_) return;
  impl_->noteGc(r.gcNumber, impl_->entry);
  writeExtended(ExtKind::kGcEnd, &r.ev, detail::encodeBody(r));
}

void LogWriter::write(const RootSet& r) {
  if (!ok_ || finished_) return;
  impl_->noteGc(r.gcNumber, impl_->entry);
  writeExtended(ExtKind::kRootSet, &r.ev, detail::encodeBody(r));
}

void LogWriter::write(const CustomEvent& r) {
  if (!ok_ || finished_) return;
  auto& ids = impl_->entry.eventNameIds;
  if (std::find(ids.begin(), ids.end(), r.nameId) == ids.end()) ids.push_back(r.nameId);
  writeExtended(ExtKind::kCustomEvent, &r.ev, detail::encodeBody(r));
}

void LogWriter::write(const Lost& r) {
  if (!ok_ || finished_) return;
  impl_->index.lostEvents += r.count;
  writeExtended(ExtKind::kLost, &r.ev, detail::encodeBody(r));
}

void LogWriter::write(const GcHandle& r) {
  if (!ok_ || finished_) return;
  uint8_t body[detail::kSmallBodyMax];
  writeExtended(ExtKind::kGcHandle, &r.ev, {body, detail::encodeSmallBody(r, body)});
}

void LogWriter::write(const Finalize& r) {
  if (!ok_ || finished_) return;
  uint8_t body[detail::kSmallBodyMax];
  writeExtended(ExtKind::kFinalize, &r.ev, {body, detail::encodeSmallBody(r, body)});
}

void LogWriter::write(const Record& r) {
  std::visit([this](const auto& x) { write(x); }, r);
}

void LogWriter::write(const RamSegment& r) {
  if (!ok_ || finished_) return;
  if (r.hasBytes) {
    if (r.bytes.size() != r.length) {
      fail("RAM segment length does not match its bytes");
      return;
    }
    writeRam(r.kind, r.gcNumber, r.address, r.bytes);
    return;
  }
  putRam(r.kind, r.gcNumber, r.address, r.length, r.hash, nullptr, false);
}

void LogWriter::writeRam(SegmentKind kind, uint32_t gcNumber, uint64_t address,
                         std::span<const uint8_t> bytes) {
  if (!ok_ || finished_) return;
  uint64_t piece = std::max<uint32_t>(1, options_.maxSegmentBytes);
  uint64_t off = 0;
  do {
    uint64_t n = std::min<uint64_t>(piece, bytes.size() - off);
    const uint8_t* p = bytes.data() + off;
    uint64_t h = XXH3_64bits(p, n);
    bool fresh = impl_->ramHashes.insert(h).second;
    putRam(kind, gcNumber, address + off, n, h, p, fresh);
    off += n;
  } while (off < bytes.size() && ok_);
}

void LogWriter::putRam(SegmentKind kind, uint32_t gcNumber, uint64_t address, uint64_t length,
                       uint64_t hash, const uint8_t* bytes, bool stored) {
  Impl& d = *impl_;
  if (d.ramCount == 0) d.ramEntry = IndexEntry{};
  d.ram.putByte(static_cast<uint8_t>(kind));
  d.ram.putByte(stored ? 1 : 0);
  d.ram.putVarint(gcNumber);
  d.ram.putVarint(address);
  d.ram.putVarint(length);
  d.ram.putU64(hash);
  if (stored && length) d.ram.putBytes(bytes, length);
  d.noteGc(gcNumber, d.ramEntry);
  ++d.ramCount;
  if (d.ram.size() >= options_.ramChunkBytes) flushRam();
}

void LogWriter::writeChunk(uint16_t type, const uint8_t* raw, size_t rawLen, uint64_t firstSeq,
                           uint32_t count, IndexEntry* entry) {
  if (!ok_) return;  // not finished_: finish() writes the index through here
  if (rawLen > kMaxChunkRaw) {
    fail("chunk larger than the format allows");
    return;
  }
  const uint8_t* stored = raw;
  size_t storedLen = rawLen;
  uint16_t flags = 0;
  if (options_.compress && rawLen > 0) {
    auto& buf = impl_->scratch;
    buf.resize(static_cast<size_t>(LZ4_compressBound(static_cast<int>(rawLen))));
    int n = LZ4_compress_default(reinterpret_cast<const char*>(raw),
                                 reinterpret_cast<char*>(buf.data()), static_cast<int>(rawLen),
                                 static_cast<int>(buf.size()));
    if (n > 0 && static_cast<size_t>(n) < rawLen) {
      stored = buf.data();
      storedLen = static_cast<size_t>(n);
      flags = kChunkFlagLz4;
    }
  }
  uint8_t h[kChunkHeaderSize];
  std::memcpy(h, kChunkMagic, 4);
  storeLe(h + 4, type, 2);
  storeLe(h + 6, flags, 2);
  storeLe(h + 8, storedLen, 4);
  storeLe(h + 12, rawLen, 4);
  storeLe(h + 16, firstSeq, 8);
  storeLe(h + 24, count, 4);
  storeLe(h + 28, static_cast<uint32_t>(XXH3_64bits(h, 28)), 4);
  storeLe(h + 32, XXH3_64bits(stored, storedLen), 8);
  uint64_t at = offset_;
  if (!emit(h, sizeof h) || !emit(stored, storedLen)) return;
  if (entry) {
    entry->offset = at;
    entry->type = type;
    entry->firstSeq = firstSeq;
    entry->recordCount = count;
    impl_->index.recordCount += count;
    impl_->index.chunks.push_back(std::move(*entry));
  }
}

void LogWriter::flushRecords() {
  Impl& d = *impl_;
  if (d.count == 0) return;
  ByteBuffer raw;
  raw.reserve(d.rawSize());
  raw.putVarint(d.t.size());
  raw.putVarint(d.a.size());
  raw.putVarint(d.s.size());
  raw.putBytes(d.t.data(), d.t.size());
  raw.putBytes(d.a.data(), d.a.size());
  raw.putBytes(d.s.data(), d.s.size());
  raw.putBytes(d.m.data(), d.m.size());
  uint64_t first = d.haveEvent ? d.chunkFirstSeq : d.globalNextSeq;
  if (d.haveEvent) {
    d.globalNextSeq = d.nextSeq;
    d.seqStarted = true;
  }
  d.entry.lastSeq = d.haveEvent ? d.nextSeq - 1 : first - 1;
  IndexEntry entry = std::move(d.entry);
  writeChunk(static_cast<uint16_t>(ChunkType::kRecords), raw.data(), raw.size(), first, d.count,
             &entry);
  d.resetChunk();
}

void LogWriter::flushRam() {
  Impl& d = *impl_;
  if (d.ramCount == 0) return;
  uint64_t first = d.haveEvent ? d.nextSeq : d.globalNextSeq;
  d.ramEntry.lastSeq = first - 1;
  IndexEntry entry = std::move(d.ramEntry);
  writeChunk(static_cast<uint16_t>(ChunkType::kRamDump), d.ram.data(), d.ram.size(), first,
             d.ramCount, &entry);
  d.ram.clear();
  d.ramCount = 0;
  d.ramEntry = IndexEntry{};
}

void LogWriter::flush() {
  if (!ok_ || finished_) return;
  // Records first: RAM segments of a GC refer to objects whose allocations precede them.
  flushRecords();
  flushRam();
}

void LogWriter::finish() {
  if (!ok_ || finished_) return;
  flush();
  finished_ = true;
  Impl& d = *impl_;
  d.index.complete = true;
  d.index.endSeq = d.globalNextSeq;
  d.index.endTimeNs = d.endTime;
  d.index.codeMarked = !d.rawRecords;
  std::vector<uint8_t> body = detail::encodeIndex(d.index);
  uint64_t at = offset_;
  writeChunk(static_cast<uint16_t>(ChunkType::kIndex), body.data(), body.size(),
             d.globalNextSeq, static_cast<uint32_t>(d.index.chunks.size()), nullptr);
  uint8_t trailer[kTrailerSize];
  storeLe(trailer, at, 8);
  std::memcpy(trailer + 8, kFooterMagic, 8);
  emit(trailer, sizeof trailer);
}

void LogWriter::writeRawChunk(uint16_t type, std::span<const uint8_t> payload, uint64_t firstSeq,
                              uint32_t count) {
  if (!ok_ || finished_) return;
  flush();
  IndexEntry entry;
  writeChunk(type, payload.data(), payload.size(), firstSeq, count, &entry);
  // Where raw records end is the caller's to know: the next records chunk starts at its first
  // event, and the caller makes that continue the raw chunk.
  if (type == static_cast<uint16_t>(ChunkType::kRecords)) {
    impl_->seqStarted = false;
    impl_->rawRecords = true;
  }
}

}  // namespace heapman::log
