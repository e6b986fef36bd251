#include "heapman/logformat/reader.h"

#include <fcntl.h>
#include <lz4.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <kj/exception.h>
#include <unordered_map>

#include "capnp_codec.h"

namespace heapman::log {

namespace {

std::string hex64(uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%016llx", static_cast<unsigned long long>(v));
  return b;
}

std::string describe(const kj::Exception& e) { return e.getDescription().cStr(); }

// The chunk order the chunk headers alone show (docs/DESIGN.md §1.6), checked alike on the
// footer's chunk list and on the scan's: records chunks' firstSeq never decreases (each starts
// where the one before it ended); a RAM dump's firstSeq (the position in the event stream when
// it was written) never decreases and is not below the firstSeq of the records chunk before
// it; and no chunk repeats an earlier one of its type and firstSeq (same lengths, record count
// and payload checksum: a chunk written twice). A gap needs the records decoded: LogCheck.
class ChunkOrder {
 public:
  void add(const ChunkRef& c) {
    bool records = c.header.type == static_cast<uint16_t>(ChunkType::kRecords);
    if (!records && c.header.type != static_cast<uint16_t>(ChunkType::kRamDump)) return;
    uint64_t seq = c.header.firstSeq;
    if (records_ && seq < records_->header.firstSeq)
      fail(c, std::string(records ? "records start" : "RAM dump written") +
                  " at sequence number " + std::to_string(seq) + ", before the records of chunk " +
                  std::to_string(records_->number) + " (" +
                  std::to_string(records_->header.firstSeq) + "): chunks out of order");
    if (!records && ram_ && seq < ram_->header.firstSeq)
      fail(c, "RAM dump written at sequence number " + std::to_string(seq) +
                  ", before the RAM dump of chunk " + std::to_string(ram_->number) + " (" +
                  std::to_string(ram_->header.firstSeq) + "): chunks out of order");
    Run& run = records ? recordsRun_ : ramRun_;
    if (run.chunks.empty() || run.firstSeq != seq) {
      run.firstSeq = seq;
      run.chunks.clear();
    }
    auto [it, fresh] = run.chunks.try_emplace(c.header.payloadChecksum, c);
    const ChunkHeader& a = it->second.header;
    if (!fresh && a.storedLength == c.header.storedLength && a.rawLength == c.header.rawLength &&
        a.recordCount == c.header.recordCount && a.flags == c.header.flags)
      fail(c, "repeats chunk " + std::to_string(it->second.number) +
                  " (the same sequence number, length and payload checksum): a chunk written "
                  "twice");
    (records ? records_ : ram_) = c;
  }

 private:
  struct Run {
    uint64_t firstSeq = 0;
    std::unordered_map<uint64_t, ChunkRef> chunks;  // of this firstSeq, by payload checksum
  };
  [[noreturn]] static void fail(const ChunkRef& c, const std::string& what) {
    throw FormatError(ErrorCode::kBadSequence, c.offset, c.number, what);
  }
  std::optional<ChunkRef> records_, ram_;  // the last of each type
  Run recordsRun_, ramRun_;
};

}  // namespace

struct LogReader::Storage {
  std::string name;
  const uint8_t* data = nullptr;
  size_t size = 0;
  void* map = nullptr;
  size_t mapLength = 0;
  // Of the file mapped: grow() notices another file at the path, or this one written anew (the
  // map shows the file's bytes as they are now, not as they were read).
  uint64_t device = 0, inode = 0;
  std::vector<uint8_t> prefix;  // the bytes before the first chunk, as first read
  std::vector<uint8_t> owned;

  ~Storage() {
    if (map) munmap(map, mapLength);
  }
};

namespace detail {

void throwBadRecord(uint64_t where, int64_t chunk, const std::string& what) {
  throw FormatError(ErrorCode::kBadRecord, where, chunk, "records do not decode: " + what);
}

std::optional<Record> decodeExtended(uint32_t kind, const EventCommon& ev,
                                     std::span<const uint8_t> body, uint64_t where,
                                     int64_t chunk) {
  try {
    return decodeBody(kind, ev, body);
  } catch (const kj::Exception& e) {
    throwBadRecord(where, chunk, "extended record " + std::to_string(kind) + ": " + describe(e));
  }
}

}  // namespace detail

LogReader::LogReader(std::unique_ptr<Storage> s, ReadMode mode) : storage_(std::move(s)) {
  parsePrefix();
  if (storage_->map)
    storage_->prefix.assign(storage_->data, storage_->data + firstChunkOffset_);
  if (!tryFooter()) scan(mode);
}
LogReader::LogReader(LogReader&&) noexcept = default;
LogReader& LogReader::operator=(LogReader&&) noexcept = default;
LogReader::~LogReader() = default;

const std::string& LogReader::name() const { return storage_->name; }
uint64_t LogReader::fileSize() const { return storage_->size; }
std::span<const uint8_t> LogReader::bytes() const { return {storage_->data, storage_->size}; }

LogReader LogReader::open(const std::string& path, ReadMode mode) {
  auto s = std::make_unique<Storage>();
  s->name = path;
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer; fstat below refuses
  // it (and any other non-regular file) before anything is read. mmap ignores the flag.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    throw FormatError(ErrorCode::kIo, 0, FormatError::kNoChunk,
                      std::string("cannot open: ") + std::strerror(errno));
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    throw FormatError(ErrorCode::kIo, 0, FormatError::kNoChunk,
                      std::string("cannot stat: ") + std::strerror(e));
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    throw FormatError(ErrorCode::kIo, 0, FormatError::kNoChunk,
                      "is a directory; give the path of a log file written by heaprec");
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw FormatError(ErrorCode::kIo, 0, FormatError::kNoChunk,
                      std::string("is not a regular file (") +
                          (S_ISFIFO(st.st_mode)  ? "a FIFO"
                           : S_ISSOCK(st.st_mode) ? "a socket"
                           : S_ISCHR(st.st_mode)  ? "a character device"
                           : S_ISBLK(st.st_mode)  ? "a block device"
                                                  : "not a file") +
                          "); copy the log to a file first");
  }
  if (st.st_size == 0) {
    ::close(fd);
    throw FormatError(ErrorCode::kEmpty, 0, FormatError::kNoChunk,
                      "is empty (0 bytes): the recorder wrote nothing; record again");
  }
  s->mapLength = static_cast<size_t>(st.st_size);
  s->device = st.st_dev;
  s->inode = st.st_ino;
  void* m = mmap(nullptr, s->mapLength, PROT_READ, MAP_PRIVATE, fd, 0);
  int e = errno;
  ::close(fd);
  if (m == MAP_FAILED) {
    throw FormatError(ErrorCode::kIo, 0, FormatError::kNoChunk,
                      std::string("cannot map: ") + std::strerror(e));
  }
  madvise(m, s->mapLength, MADV_SEQUENTIAL);
  s->map = m;
  s->data = static_cast<const uint8_t*>(m);
  s->size = s->mapLength;
  return LogReader(std::move(s), mode);
}

LogReader LogReader::fromBytes(std::vector<uint8_t> bytes, std::string name, ReadMode mode) {
  auto s = std::make_unique<Storage>();
  s->name = std::move(name);
  s->owned = std::move(bytes);
  s->data = s->owned.data();
  s->size = s->owned.size();
  if (s->size == 0) {
    throw FormatError(ErrorCode::kEmpty, 0, FormatError::kNoChunk,
                      "is empty (0 bytes): the recorder wrote nothing; record again");
  }
  return LogReader(std::move(s), mode);
}

void LogReader::parsePrefix() {
  const uint8_t* d = storage_->data;
  size_t size = storage_->size;
  size_t cmp = std::min<size_t>(size, 8);
  if (std::memcmp(d, kMagic, cmp) != 0) {
    throw FormatError(ErrorCode::kNotALog, 0, FormatError::kNoChunk,
                      "is not a HeapMan log (no \"HEAPMAN\" magic at byte 0); "
                      "record one with `heaprec run -- PROGRAM`");
  }
  if (size < kPrefixSize) {
    throw FormatError(ErrorCode::kTruncatedHeader, size, FormatError::kNoChunk,
                      "ends inside the file prefix (" + std::to_string(size) + " of " +
                          std::to_string(kPrefixSize) + " bytes): nothing can be read");
  }
  major_ = static_cast<uint16_t>(loadLe(d + 8, 2));
  minor_ = static_cast<uint16_t>(loadLe(d + 10, 2));
  std::string ver = std::to_string(major_) + "." + std::to_string(minor_);
  std::string ours = std::to_string(kFormatMajor) + ".x";
  if (major_ > kFormatMajor) {
    throw FormatError(ErrorCode::kNewerVersion, 8, FormatError::kNoChunk,
                      "uses log format " + ver + ", newer than this heapman reads (" + ours +
                          "); upgrade heapman to read it");
  }
  if (major_ < kOldestMajor) {
    throw FormatError(ErrorCode::kOlderVersion, 8, FormatError::kNoChunk,
                      "uses log format " + ver + ", older than this heapman supports (" +
                          std::to_string(kOldestMajor) + ".0 or later); read it with an older "
                          "heapman release");
  }
  uint64_t hlen = loadLe(d + 12, 4);
  if (hlen > kMaxHeaderLength) {
    throw FormatError(ErrorCode::kBadHeader, 12, FormatError::kNoChunk,
                      "header length " + std::to_string(hlen) + " is implausible: corrupt prefix");
  }
  if (kPrefixSize + hlen > size) {
    throw FormatError(ErrorCode::kTruncatedHeader, size, FormatError::kNoChunk,
                      "ends inside the header (needs " + std::to_string(kPrefixSize + hlen) +
                          " bytes, file has " + std::to_string(size) + "): nothing can be read");
  }
  uint64_t want = loadLe(d + 16, 8);
  uint64_t got = XXH3_64bits(d + kPrefixSize, hlen);
  if (want != got) {
    throw FormatError(ErrorCode::kBadHeader, kPrefixSize, FormatError::kNoChunk,
                      "header checksum mismatch (stored " + hex64(want) + ", computed " +
                          hex64(got) + "): the header is corrupt");
  }
  try {
    header_ = detail::decodeHeader({d + kPrefixSize, static_cast<size_t>(hlen)});
  } catch (const kj::Exception& e) {
    throw FormatError(ErrorCode::kBadHeader, kPrefixSize, FormatError::kNoChunk,
                      "header does not decode: " + describe(e));
  }
  firstChunkOffset_ = kPrefixSize + hlen;
}

ChunkHeader LogReader::readChunkHeader(uint64_t offset, uint32_t number) const {
  const uint8_t* h = storage_->data + offset;
  if (std::memcmp(h, kChunkMagic, 4) != 0) {
    throw FormatError(ErrorCode::kBadChunkHeader, offset, number,
                      "no chunk magic \"HMCK\": the log is corrupt here");
  }
  ChunkHeader c;
  c.type = static_cast<uint16_t>(loadLe(h + 4, 2));
  c.flags = static_cast<uint16_t>(loadLe(h + 6, 2));
  c.storedLength = static_cast<uint32_t>(loadLe(h + 8, 4));
  c.rawLength = static_cast<uint32_t>(loadLe(h + 12, 4));
  c.firstSeq = loadLe(h + 16, 8);
  c.recordCount = static_cast<uint32_t>(loadLe(h + 24, 4));
  c.headerCheck = static_cast<uint32_t>(loadLe(h + 28, 4));
  c.payloadChecksum = loadLe(h + 32, 8);
  if (c.headerCheck != static_cast<uint32_t>(XXH3_64bits(h, 28))) {
    throw FormatError(ErrorCode::kBadChunkHeader, offset, number,
                      "chunk header check mismatch: the chunk's lengths cannot be trusted");
  }
  if (c.rawLength > kMaxChunkRaw || c.storedLength > kMaxChunkRaw ||
      (!(c.flags & kChunkFlagLz4) && c.storedLength != c.rawLength)) {
    throw FormatError(ErrorCode::kBadChunkHeader, offset, number,
                      "chunk lengths are inconsistent (stored " + std::to_string(c.storedLength) +
                          ", raw " + std::to_string(c.rawLength) + ")");
  }
  // LZ4 cannot expand a block by more than ~255x; a larger claim is corruption, refused before
  // the reader allocates rawLength bytes for it.
  if ((c.flags & kChunkFlagLz4) && c.rawLength > uint64_t{c.storedLength} * 255 + 16) {
    throw FormatError(ErrorCode::kBadChunkHeader, offset, number,
                      "raw length " + std::to_string(c.rawLength) + " is impossible for " +
                          std::to_string(c.storedLength) + " LZ4 bytes");
  }
  if (c.flags & ~kChunkFlagLz4) {
    throw FormatError(ErrorCode::kBadChunkHeader, offset, number,
                      "unknown chunk flags " + std::to_string(c.flags) +
                          " (written by a newer HeapMan? upgrade heapman)");
  }
  return c;
}

bool LogReader::tryFooter() {
  const uint8_t* d = storage_->data;
  uint64_t size = storage_->size;
  if (size < firstChunkOffset_ + kChunkHeaderSize + kTrailerSize) return false;
  const uint8_t* tr = d + size - kTrailerSize;
  if (std::memcmp(tr + 8, kFooterMagic, 8) != 0) return false;
  uint64_t idxOff = loadLe(tr, 8);
  if (idxOff < firstChunkOffset_ || idxOff > size - kTrailerSize - kChunkHeaderSize) return false;
  try {
    ChunkRef idx;
    idx.offset = idxOff;
    idx.header = readChunkHeader(idxOff, 0);
    if (idx.header.type != static_cast<uint16_t>(ChunkType::kIndex) ||
        idx.end() != size - kTrailerSize)
      return false;
    std::vector<uint8_t> buf;
    IndexData index = detail::decodeIndex(payload(idx, buf));
    std::vector<ChunkRef> chunks;
    ChunkOrder order;
    uint64_t expect = firstChunkOffset_;
    for (const IndexEntry& e : index.chunks) {
      if (e.offset != expect || e.offset > idxOff - kChunkHeaderSize) return false;
      ChunkRef c;
      c.number = static_cast<uint32_t>(chunks.size());
      c.offset = e.offset;
      c.header = readChunkHeader(e.offset, c.number);
      if (c.header.type != e.type || c.header.firstSeq != e.firstSeq ||
          c.header.recordCount != e.recordCount || c.end() > idxOff ||
          (e.namesCode && e.type != static_cast<uint16_t>(ChunkType::kRecords)))
        return false;
      order.add(c);
      expect = c.end();
      chunks.push_back(c);
    }
    if (expect != idxOff) return false;
    chunks_ = std::move(chunks);
    index_ = std::move(index);
    end_ = LogEnd{true, size, size, ""};
    return true;
  } catch (const FormatError&) {
    return false;  // scan() finds and reports the problem with its position
  } catch (const kj::Exception&) {
    return false;
  }
}

void LogReader::scan(ReadMode mode) {
  try {
    scanChunks();
  } catch (const FormatError& e) {
    if (mode == ReadMode::kStrict) throw;
    endAtDamage(e);  // chunks_ holds the intact chunks before the damage
  }
}

void LogReader::endBefore(const FormatError& e) {
  if (e.chunk() < 0 || static_cast<uint64_t>(e.chunk()) >= chunks_.size()) return;
  chunks_.resize(static_cast<size_t>(e.chunk()));
  index_.reset();  // it lists the chunks left out too
  endAtDamage(e);
}

void LogReader::endAtDamage(const FormatError& e) {
  uint64_t intact = chunks_.empty() ? firstChunkOffset_ : chunks_.back().end();
  end_ = LogEnd{false, intact, storage_->size,
                std::string("corrupt at ") + e.what() + "; " + std::to_string(chunks_.size()) +
                    " intact chunk" + (chunks_.size() == 1 ? "" : "s") + " end at byte " +
                    std::to_string(intact),
                e};
}

void LogReader::scanChunks(size_t keep) {
  const uint8_t* d = storage_->data;
  uint64_t size = storage_->size;
  chunks_.resize(std::min(keep, chunks_.size()));
  ChunkOrder order;
  for (const ChunkRef& c : chunks_) order.add(c);
  uint64_t off = chunks_.empty() ? firstChunkOffset_ : chunks_.back().end();
  auto truncated = [&](uint64_t intact, std::string why) {
    end_ = LogEnd{false, intact, size,
                  why + "; " + std::to_string(chunks_.size()) + " intact chunk" +
                      (chunks_.size() == 1 ? "" : "s") + " end at byte " +
                      std::to_string(intact)};
  };
  for (;;) {
    uint32_t n = static_cast<uint32_t>(chunks_.size());
    if (off == size) {
      truncated(off, "no footer (the recorder did not finish)");
      return;
    }
    if (size - off < kChunkHeaderSize) {
      truncated(off, "the file ends inside the header of chunk " + std::to_string(n) +
                         " at byte " + std::to_string(off));
      return;
    }
    ChunkRef c;
    c.number = n;
    c.offset = off;
    c.header = readChunkHeader(off, n);
    if (c.end() > size) {
      truncated(off, "chunk " + std::to_string(n) + " at byte " + std::to_string(off) +
                         " is cut short (needs " + std::to_string(c.end() - off) +
                         " bytes, the file has " + std::to_string(size - off) + ")");
      return;
    }
    if (c.header.type == static_cast<uint16_t>(ChunkType::kIndex)) {
      std::vector<uint8_t> buf;
      auto raw = payload(c, buf);
      uint64_t after = c.end();
      if (size - after < kTrailerSize) {
        truncated(off, "the file ends inside the footer trailer at byte " + std::to_string(size));
        return;
      }
      const uint8_t* tr = d + after;
      if (size - after > kTrailerSize || std::memcmp(tr + 8, kFooterMagic, 8) != 0 ||
          loadLe(tr, 8) != off) {
        throw FormatError(ErrorCode::kBadFooter, after, FormatError::kNoChunk,
                          "footer trailer after the index chunk at byte " + std::to_string(off) +
                              " is corrupt");
      }
      try {
        index_ = detail::decodeIndex(raw);
      } catch (const kj::Exception& e) {
        throw FormatError(ErrorCode::kBadFooter, off, n, "index does not decode: " + describe(e));
      }
      // The trailer and checksums were fine but tryFooter() refused: index and chunks disagree.
      throw FormatError(ErrorCode::kBadFooter, off, n,
                        "the footer index does not match the chunks in the file");
    }
    order.add(c);
    chunks_.push_back(c);
    off = c.end();
  }
}

LogReader::Growth LogReader::grow() {
  Storage& s = *storage_;
  if (!s.map || end_.complete || end_.corruption) return Growth::kNone;
  int fd = ::open(s.name.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return Growth::kReplaced;  // removed, or renamed away
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || static_cast<uint64_t>(st.st_dev) != s.device ||
      static_cast<uint64_t>(st.st_ino) != s.inode || static_cast<uint64_t>(st.st_size) < s.size) {
    ::close(fd);
    return Growth::kReplaced;
  }
  const size_t length = static_cast<size_t>(st.st_size);
  if (length == s.size) {
    ::close(fd);
    return Growth::kNone;
  }
  void* m = mmap(nullptr, length, PROT_READ, MAP_PRIVATE, fd, 0);
  int e = errno;
  ::close(fd);
  if (m == MAP_FAILED) {
    throw FormatError(ErrorCode::kIo, s.size, FormatError::kNoChunk,
                      std::string("cannot map what was appended: ") + std::strerror(e));
  }
  madvise(m, length, MADV_SEQUENTIAL);
  munmap(s.map, s.mapLength);
  s.map = m;
  s.mapLength = length;
  s.data = static_cast<const uint8_t*>(m);
  s.size = length;
  // Truncated and written again past the old length between two looks: another recording,
  // whose prefix or first and last chunks known (their payloads' checksums) differ.
  auto same = [&](const ChunkRef& c) {
    try {
      ChunkHeader h = readChunkHeader(c.offset, c.number);
      return h.type == c.header.type && h.storedLength == c.header.storedLength &&
             h.firstSeq == c.header.firstSeq && h.payloadChecksum == c.header.payloadChecksum;
    } catch (const FormatError&) {
      return false;
    }
  };
  if (std::memcmp(s.data, s.prefix.data(), s.prefix.size()) != 0 ||
      (!chunks_.empty() && (!same(chunks_.front()) || !same(chunks_.back()))))
    return Growth::kReplaced;
  const size_t had = chunks_.size();
  if (tryFooter()) return Growth::kGrew;
  try {
    scanChunks(had);
  } catch (const FormatError& damage) {
    endAtDamage(damage);  // the log ends before it, as kIntactPrefix would have read it
    throw;
  }
  return chunks_.size() > had ? Growth::kGrew : Growth::kNone;
}

bool LogReader::payloadIntact(const ChunkRef& c) const {
  return XXH3_64bits(storage_->data + c.offset + kChunkHeaderSize, c.header.storedLength) ==
         c.header.payloadChecksum;
}

std::span<const uint8_t> LogReader::payload(const ChunkRef& c, std::vector<uint8_t>& buffer) const {
  const uint8_t* stored = storage_->data + c.offset + kChunkHeaderSize;
  uint64_t got = XXH3_64bits(stored, c.header.storedLength);
  if (got != c.header.payloadChecksum) {
    throw FormatError(ErrorCode::kBadChecksum, c.offset, c.number,
                      "payload checksum mismatch (stored " + hex64(c.header.payloadChecksum) +
                          ", computed " + hex64(got) + "): chunk " + std::to_string(c.number) +
                          " is corrupt");
  }
  if (!(c.header.flags & kChunkFlagLz4)) return {stored, c.header.storedLength};
  buffer.resize(c.header.rawLength);
  int n = LZ4_decompress_safe(reinterpret_cast<const char*>(stored),
                              reinterpret_cast<char*>(buffer.data()),
                              static_cast<int>(c.header.storedLength),
                              static_cast<int>(c.header.rawLength));
  if (n < 0 || static_cast<uint32_t>(n) != c.header.rawLength) {
    throw FormatError(ErrorCode::kBadPayload, c.offset, c.number,
                      "payload does not decompress to its declared " +
                          std::to_string(c.header.rawLength) + " bytes");
  }
  return {buffer.data(), buffer.size()};
}

void LogReader::checkCount(const ChunkRef& c, uint32_t decoded) const {
  if (decoded != c.header.recordCount) {
    throw FormatError(ErrorCode::kBadRecord, c.offset, c.number,
                      "chunk declares " + std::to_string(c.header.recordCount) +
                          " records but holds " + std::to_string(decoded));
  }
}

void LogReader::forEachSegment(const ChunkRef& c,
                               const std::function<void(const RamSegment&)>& fn) const {
  std::vector<uint8_t> buf;
  auto raw = payload(c, buf);
  uint32_t n = 0;
  RamSegment s;
  try {
    ByteCursor in(raw.data(), raw.data() + raw.size());
    while (!in.atEnd()) {
      s.kind = static_cast<SegmentKind>(in.byte());
      uint8_t flags = in.byte();
      s.gcNumber = static_cast<uint32_t>(in.varint());
      s.address = in.varint();
      s.length = in.varint();
      s.hash = in.u64();
      s.hasBytes = flags & 1;
      s.bytes.clear();
      if (s.hasBytes) {
        const uint8_t* p = in.take(s.length);
        s.bytes.assign(p, p + s.length);
      }
      ++n;
      fn(s);
    }
  } catch (const CursorOverrun& e) {
    detail::throwBadRecord(c.offset, c.number, e.what());
  }
  checkCount(c, n);
}

std::vector<RamSegment> LogReader::ramSegments(const ChunkRef& c) const {
  std::vector<RamSegment> out;
  forEachSegment(c, [&](const RamSegment& s) { out.push_back(s); });
  return out;
}

}  // namespace heapman::log
