// LogReader: opens a HeapMan log (file or memory), finds its chunks through the footer or by
// scanning, checks every chunk it reads, and decodes records in order.
//
// A log without a footer (its recorder died) is read up to its last intact chunk; end() says
// where it stops and why. Corruption (bad magic, bad checksum, undecodable payload, chunks
// whose headers' sequence numbers step back or repeat) throws FormatError naming the chunk and
// file offset. What needs the records decoded (a chunk missing from the middle, addresses, stack
// ids...) is LogCheck's (check.h). Reading does not change the file.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "heapman/logformat/bytes.h"
#include "heapman/logformat/chunk_model.h"
#include "heapman/logformat/error.h"
#include "heapman/logformat/format.h"
#include "heapman/logformat/index.h"
#include "heapman/logformat/records.h"

namespace heapman::log {

struct ChunkHeader {
  uint16_t type = 0;
  uint16_t flags = 0;
  uint32_t storedLength = 0;
  uint32_t rawLength = 0;
  uint64_t firstSeq = 0;
  uint32_t recordCount = 0;
  uint32_t headerCheck = 0;
  uint64_t payloadChecksum = 0;
};

struct ChunkRef {
  uint32_t number = 0;   // position in the file, 0-based
  uint64_t offset = 0;   // of the chunk header
  ChunkHeader header;
  bool known() const { return header.type >= 1 && header.type <= 3; }
  uint64_t end() const { return offset + kChunkHeaderSize + header.storedLength; }
};

struct LogEnd {
  bool complete = false;     // footer present and consistent
  uint64_t intactBytes = 0;  // bytes of the file that hold intact data
  uint64_t fileBytes = 0;
  std::string reason;        // for a truncated log: where and why reading stops
  // Only with ReadMode::kIntactPrefix: the scan stopped at a corrupt chunk (not at the end of a
  // torn file); the error it would have thrown.
  std::optional<FormatError> corruption;
};

// How the reader treats a corrupt chunk header or footer met while scanning the chunks.
enum class ReadMode {
  kStrict,        // throw FormatError (verify, info)
  kIntactPrefix,  // stop there: chunks() holds the intact chunks before it, end().corruption
                  // says what was found where (queries answer over the prefix and say so)
};

// Decodes one records chunk's raw payload, calling visitor(const T&) for every record type T of
// `Record` in order. Returns the number of records (tags) decoded. Throws FormatError
// (kBadRecord) on malformed input; `where` and `chunk` name the chunk in that error.
// `model` is scratch state; pass one to reuse its memory across chunks (it is reset here).
//
// Optional hooks (detected at compile time): SkippedEventVisitor below, and a fast one: a
// visitor with a member `allocLocal(const Alloc&, uint32_t chunkInfo)` gets every Alloc
// through it instead of operator(), together with the allocation's index in the chunk's
// dictionary (ChunkModel::infos). Equal indices within one chunk mean equal (heap, size, actual
// size, stack, type); indices restart at every chunk. Replay uses it to intern per dictionary
// entry instead of per allocation.
template <class Visitor>
uint32_t decodeRecords(std::span<const uint8_t> raw, uint64_t firstSeq, Visitor&& visitor,
                       uint64_t where = 0, int64_t chunk = FormatError::kNoChunk,
                       ChunkModel* model = nullptr);

template <class V>
concept AllocLocalVisitor = requires(V& v, const Alloc& a, uint32_t i) { v.allocLocal(a, i); };
// A visitor with a member `skippedEvent(const EventCommon&)` hears of the events of extended
// kinds this reader does not know (a newer minor version's): they take a sequence number, which
// the chunk sequence check (check.h) must count.
template <class V>
concept SkippedEventVisitor = requires(V& v, const EventCommon& ev) { v.skippedEvent(ev); };

class LogReader {
 public:
  // Opens and maps a file. Throws FormatError (kIo, kEmpty, kNotALog, kNewerVersion, ...).
  // A FIFO, device or directory is refused (kIo) without waiting for data.
  static LogReader open(const std::string& path, ReadMode mode = ReadMode::kStrict);
  // Reads a log held in memory (tests, fuzzing). `name` appears in messages.
  static LogReader fromBytes(std::vector<uint8_t> bytes, std::string name = "<memory>",
                             ReadMode mode = ReadMode::kStrict);

  LogReader(LogReader&&) noexcept;
  LogReader& operator=(LogReader&&) noexcept;
  ~LogReader();

  const std::string& name() const;
  const Header& header() const { return header_; }
  uint16_t major() const { return major_; }
  uint16_t minor() const { return minor_; }
  uint64_t fileSize() const;
  std::span<const uint8_t> bytes() const;

  // Every chunk, in file order (the index chunk excluded). From the footer when it is intact,
  // else by scanning (then a torn tail ends the list; corruption before it throws).
  const std::vector<ChunkRef>& chunks() const { return chunks_; }
  const LogEnd& end() const { return end_; }
  // The footer's index when the log is complete.
  const std::optional<IndexData>& index() const { return index_; }
  // Ends chunks() before the chunk `e` names, as ReadMode::kIntactPrefix ends it at a corrupt
  // chunk header, for damage found later: a payload that fails, records that break LogCheck's
  // rules (check.h). What follows the damage is then left out by every reader of chunks();
  // end().corruption keeps `e`. An error that names no chunk of the list changes nothing.
  void endBefore(const FormatError& e);

  // A log being written (opened from a file, no footer yet, no damage): maps what the recorder
  // appended since open() or the last grow() and adds the chunks now whole; a footer written
  // meanwhile completes the log as open() would. kReplaced: the path now holds another file, a
  // shorter one or one with another prefix (recorded again): open it anew. Throws FormatError
  // for damage in what was appended (the chunks before it stay); chunks() may reallocate.
  enum class Growth { kNone, kGrew, kReplaced };
  Growth grow();

  // Checks the chunk's checksum and returns its raw payload (decompressed into `buffer` when
  // needed). Throws kBadChecksum / kBadPayload naming the chunk.
  std::span<const uint8_t> payload(const ChunkRef& c, std::vector<uint8_t>& buffer) const;
  // Whether the chunk's stored payload matches its checksum (payload()'s first check, without
  // decompressing: a few milliseconds for a 10 MB log).
  bool payloadIntact(const ChunkRef& c) const;

  // Decodes every records chunk in order.
  template <class Visitor>
  void forEachRecord(Visitor&& v) const {
    std::vector<uint8_t> buf;
    auto model = std::make_unique<ChunkModel>();
    for (const ChunkRef& c : chunks_) {
      if (c.header.type != static_cast<uint16_t>(ChunkType::kRecords)) continue;
      decodeChunk(c, buf, v, model.get());
    }
  }
  // Decodes one records chunk; `model` as for decodeRecords().
  template <class Visitor>
  uint32_t decodeChunk(const ChunkRef& c, std::vector<uint8_t>& buf, Visitor&& v,
                       ChunkModel* model = nullptr) const {
    auto raw = payload(c, buf);
    uint32_t n = decodeRecords(raw, c.header.firstSeq, v, c.offset, c.number, model);
    checkCount(c, n);
    return n;
  }
  // Decodes the segments of a RAM dump chunk one at a time (memory: one segment).
  void forEachSegment(const ChunkRef& c, const std::function<void(const RamSegment&)>& fn) const;
  // The same, collected (convenient for small chunks and tests).
  std::vector<RamSegment> ramSegments(const ChunkRef& c) const;

 private:
  struct Storage;
  LogReader(std::unique_ptr<Storage> s, ReadMode mode);
  void parsePrefix();
  bool tryFooter();
  void scan(ReadMode mode);
  void scanChunks(size_t keep = 0);  // on from the end of the first `keep` chunks
  void endAtDamage(const FormatError& e);
  ChunkHeader readChunkHeader(uint64_t offset, uint32_t number) const;
  void checkCount(const ChunkRef& c, uint32_t decoded) const;

  std::unique_ptr<Storage> storage_;
  uint16_t major_ = 0, minor_ = 0;
  uint64_t firstChunkOffset_ = 0;
  Header header_;
  std::vector<ChunkRef> chunks_;
  LogEnd end_;
  std::optional<IndexData> index_;
};

namespace detail {
// ByteCursor for the decode loop: the same reads and errors, with the one- and two-byte varints
// (nearly all of them in a records chunk) inlined and the slow path out of line.
class StreamCursor {
 public:
  StreamCursor(const uint8_t* begin, const uint8_t* end) : p_(begin), end_(end) {}
  bool atEnd() const { return p_ == end_; }
  size_t remaining() const { return static_cast<size_t>(end_ - p_); }
  // Precondition: !atEnd().
  uint8_t nextUnchecked() { return *p_++; }
  [[gnu::always_inline]] uint8_t byte() {
    if (p_ == end_) [[unlikely]]
      overrun("read past end of stream");
    return *p_++;
  }
  [[gnu::always_inline]] uint64_t varint() {
    if (end_ - p_ >= 2) [[likely]] {
      uint64_t b0 = p_[0];
      if (b0 < 0x80) {
        p_ += 1;
        return b0;
      }
      uint64_t b1 = p_[1];
      if (b1 < 0x80) {
        p_ += 2;
        return (b0 & 0x7f) | b1 << 7;
      }
    }
    return varintSlow();
  }
  [[gnu::always_inline]] int64_t zz() { return unzigzag(varint()); }
  const uint8_t* take(uint64_t n) {
    if (n > remaining()) overrun("length runs past end of stream");
    const uint8_t* r = p_;
    p_ += n;
    return r;
  }

 private:
  [[noreturn, gnu::noinline, gnu::cold]] static void overrun(const char* what) {
    throw CursorOverrun(what);
  }
  [[gnu::noinline]] uint64_t varintSlow() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p_ == end_) overrun("varint runs past end of stream");
      uint8_t b = *p_++;
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (b < 0x80) return v;
    }
    overrun("varint longer than 10 bytes");
  }

  const uint8_t* p_;
  const uint8_t* end_;
};

// Decodes an EXTENDED body; nullopt for a kind this reader does not know.
std::optional<Record> decodeExtended(uint32_t kind, const EventCommon& ev,
                                     std::span<const uint8_t> body, uint64_t where, int64_t chunk);
[[noreturn]] void throwBadRecord(uint64_t where, int64_t chunk, const std::string& what);
}  // namespace detail

template <class Visitor>
uint32_t decodeRecords(std::span<const uint8_t> raw, uint64_t firstSeq, Visitor&& visitor,
                       uint64_t where, int64_t chunk, ChunkModel* scratch) {
  uint32_t count = 0;
  try {
    ByteCursor hdr(raw.data(), raw.data() + raw.size());
    uint64_t lt = hdr.varint(), la = hdr.varint(), ls = hdr.varint();
    if (lt > hdr.remaining() || la > hdr.remaining() - lt || ls > hdr.remaining() - lt - la)
      detail::throwBadRecord(where, chunk, "stream lengths exceed the payload");
    const uint8_t* p = hdr.position();
    detail::StreamCursor T(p, p + lt), A(p + lt, p + lt + la), S(p + lt + la, p + lt + la + ls),
        M(p + lt + la + ls, raw.data() + raw.size());

    EventCommon ev;
    uint64_t nextSeq = firstSeq;
    uint64_t lastFrame = 0;
    uint32_t lastNodeId = 0;
    // ~270 KiB of size-class table: on the heap, and reused when the caller passes one.
    std::unique_ptr<ChunkModel> owned;
    if (!scratch) owned = std::make_unique<ChunkModel>();
    ChunkModel& model = scratch ? *scratch : *owned;
    if (scratch) model.reset();
    auto takeSeq = [&] { ev.seq = nextSeq++; };
    auto readInfo = [&]() __attribute__((always_inline)) -> uint32_t {
      uint64_t i = S.varint();
      if (i < model.infos.size()) return static_cast<uint32_t>(i);
      if (i != model.infos.size()) detail::throwBadRecord(where, chunk, "bad dictionary reference");
      AllocInfo info;
      info.heap = static_cast<HeapKind>(S.byte() & 7);
      info.size = S.varint();
      info.actualSize = info.size + S.varint();
      info.stackId = static_cast<uint32_t>(S.varint());
      info.typeId = static_cast<uint32_t>(S.varint());
      model.infos.push_back(info);
      return static_cast<uint32_t>(i);
    };
    auto freeOrdinal = [&](uint64_t ordinal) __attribute__((always_inline)) {
      if (ordinal >= model.allocCount()) detail::throwBadRecord(where, chunk, "free of an unknown allocation");
      takeSeq();
      Free r;
      r.ev = ev;
      r.heap = model.infos[model.infoOf(ordinal)].heap;
      r.address = model.addressOf(ordinal);
      model.onFreeOrdinal(ordinal);
      visitor(r);
    };

    auto emitAlloc = [&](ChunkModel::SizeClass& cls, uint32_t info, uint64_t address,
                         int lifoIndex) __attribute__((always_inline)) {
      const AllocInfo& ai = model.infos[info];
      Alloc r;
      r.ev = ev;
      r.heap = ai.heap;
      r.address = address;
      r.size = ai.size;
      r.actualSize = ai.actualSize;
      r.stackId = ai.stackId;
      r.typeId = ai.typeId;
      model.onAllocIn(cls, address, info, lifoIndex);
      if constexpr (AllocLocalVisitor<std::remove_reference_t<Visitor>>)
        visitor.allocLocal(r, info);
      else
        visitor(r);
    };

    while (!T.atEnd()) {
      uint8_t t = T.nextUnchecked();
      ++count;
      if (t >= tag::kAllocLifoInfo && t < tag::kAllocNear) {
        uint32_t info = t - tag::kAllocLifoInfo;
        if (info >= model.infos.size()) detail::throwBadRecord(where, chunk, "bad dictionary reference");
        ChunkModel::SizeClass& cls = model.sizeClass(model.infos[info].actualSize);
        if (!ChunkModel::lifoHas(cls)) detail::throwBadRecord(where, chunk, "empty size-class LIFO");
        takeSeq();
        emitAlloc(cls, info, ChunkModel::lifoTop(cls), 0);
        continue;
      }
      if (t < tag::kFreeNext) {
        if (t >= model.allocCount()) detail::throwBadRecord(where, chunk, "free of an unknown allocation");
        freeOrdinal(model.allocCount() - 1 - t);
        continue;
      }
      if (t < tag::kFreeOrdinal) {
        freeOrdinal(static_cast<uint64_t>(model.lastFreeOrdinal + 1 + (t - tag::kFreeNext)));
        continue;
      }
      switch (t) {
        case tag::kFreeOrdinal: {
          uint64_t back = A.varint();
          if (back >= model.allocCount()) detail::throwBadRecord(where, chunk, "free of an unknown allocation");
          freeOrdinal(model.allocCount() - 1 - back);
          break;
        }
        case tag::kFreeAddress: {
          takeSeq();
          Free r;
          r.ev = ev;
          r.heap = static_cast<HeapKind>(M.byte() & 7);
          r.address = model.lastAddress + static_cast<uint64_t>(A.zz());
          model.onFreeAddress(r.address);
          visitor(r);
          break;
        }
        case tag::kAllocNear:
        case tag::kAllocLifoAt:
        case tag::kAllocSeq:
        case tag::kAllocBump:
        case tag::kAllocRing:
        case tag::kAllocAddr:
        case tag::kAllocLifo: {
          takeSeq();
          uint32_t info = readInfo();
          ChunkModel::SizeClass& cls = model.sizeClass(model.infos[info].actualSize);
          uint64_t address;
          int lifoIndex = -1;
          if (t == tag::kAllocLifoAt) {
            uint8_t j = A.byte();
            if (j >= cls.depth) detail::throwBadRecord(where, chunk, "LIFO index out of range");
            address = ChunkModel::lifoAt(cls, j);
            lifoIndex = j;
          } else if (t == tag::kAllocLifo) {
            if (!ChunkModel::lifoHas(cls)) detail::throwBadRecord(where, chunk, "empty size-class LIFO");
            address = ChunkModel::lifoTop(cls);
            lifoIndex = 0;
          } else if (t == tag::kAllocNear) {
            address = cls.last + static_cast<uint64_t>(A.zz());
          } else if (t == tag::kAllocSeq) {
            address = model.sequentialGuess(cls);
          } else if (t == tag::kAllocBump) {
            address = model.bumpGuess();
          } else if (t == tag::kAllocRing) {
            uint8_t d = A.byte();
            if (d >= kRingSize) detail::throwBadRecord(where, chunk, "ring distance out of range");
            address = model.ringAt(d);
          } else {
            address = model.lastAddress + static_cast<uint64_t>(A.zz());
          }
          emitAlloc(cls, info, address, lifoIndex);
          break;
        }
        case tag::kRealloc: {
          takeSeq();
          uint32_t info = readInfo();
          const AllocInfo& ai = model.infos[info];
          Realloc r;
          r.ev = ev;
          r.heap = ai.heap;
          r.size = ai.size;
          r.actualSize = ai.actualSize;
          r.stackId = ai.stackId;
          r.typeId = ai.typeId;
          r.oldAddress = model.lastAddress + static_cast<uint64_t>(A.zz());
          r.newAddress = r.oldAddress + static_cast<uint64_t>(A.zz());
          model.onRealloc(r.oldAddress, r.newAddress, info);
          visitor(r);
          break;
        }
        case tag::kTime:
          ev.timeNs += static_cast<uint64_t>(M.zz());
          break;
        case tag::kThread:
          ev.thread = static_cast<uint32_t>(M.varint());
          break;
        case tag::kSeq:
          nextSeq += static_cast<uint64_t>(M.zz());
          break;
        case tag::kStackNative:
        case tag::kStackManaged: {
          StackNode r;
          r.id = static_cast<uint32_t>(lastNodeId + static_cast<uint64_t>(M.zz()));
          r.parent = static_cast<uint32_t>(r.id - static_cast<uint64_t>(M.zz()));
          r.frame = lastFrame + static_cast<uint64_t>(M.zz());
          r.managed = t == tag::kStackManaged;
          lastNodeId = r.id;
          lastFrame = r.frame;
          visitor(r);
          break;
        }
        case tag::kCollected: {
          Collected r;
          r.gcNumber = static_cast<uint32_t>(M.varint());
          uint64_t n = M.varint();
          if (n > M.remaining()) detail::throwBadRecord(where, chunk, "collected count too large");
          r.addresses.resize(n);
          uint64_t a = 0;
          for (uint64_t i = 0; i < n; ++i) r.addresses[i] = a += M.varint();
          visitor(r);
          break;
        }
        case tag::kExtended: {
          uint32_t kind = static_cast<uint32_t>(M.varint());
          uint64_t flags = M.varint();
          bool isEvent = flags & 2;  // lets a reader keep sequence numbers for unknown kinds
          bool known = kind >= 1 && kind <= kExtKindMax;
          if (known && isEvent != extKindIsEvent(static_cast<ExtKind>(kind)))
            detail::throwBadRecord(where, chunk, "extended record's event flag contradicts its kind");
          if (isEvent) takeSeq();
          uint64_t len = M.varint();
          const uint8_t* body = M.take(len);
          EventCommon common = isEvent ? ev : EventCommon{};
          auto rec = detail::decodeExtended(kind, common, {body, static_cast<size_t>(len)},
                                            where, chunk);
          if (rec) {
            std::visit(visitor, *rec);
          } else if constexpr (SkippedEventVisitor<std::remove_reference_t<Visitor>>) {
            if (isEvent) visitor.skippedEvent(common);
          }
          break;
        }
        default:
          detail::throwBadRecord(where, chunk,
                                 "unknown record tag " + std::to_string(t) +
                                     " (written by a newer HeapMan? upgrade heapman)");
      }
    }
    if (!A.atEnd() || !S.atEnd() || !M.atEnd())
      detail::throwBadRecord(where, chunk, "streams hold bytes after the last record");
  } catch (const CursorOverrun& e) {
    detail::throwBadRecord(where, chunk, e.what());
  }
  return count;
}

}  // namespace heapman::log
