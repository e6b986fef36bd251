// LogWriter: encodes records into chunks (format.h) and writes them to a Sink.
//
// Threading: one thread owns a LogWriter (in the recorder, the writer thread). It allocates
// through the process heap, so in the recorder it must run with the reentrancy guard set.
// Errors: a failing sink (disk full, closed pipe) turns the writer off: ok() becomes false, the
// reason is in error(), and every later call returns at once. The writer never throws for I/O.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "heapman/logformat/bytes.h"
#include "heapman/logformat/chunk_model.h"
#include "heapman/logformat/index.h"
#include "heapman/logformat/records.h"

namespace heapman::log {

class Sink {
 public:
  virtual ~Sink() = default;
  // Writes all n bytes or returns false (and says why in error()).
  virtual bool write(const void* data, size_t n) = 0;
  virtual std::string error() const { return {}; }
};

// Writes to a file descriptor; retries short writes and EINTR. Does not own the fd.
class FdSink : public Sink {
 public:
  explicit FdSink(int fd) : fd_(fd) {}
  bool write(const void* data, size_t n) override;
  std::string error() const override { return error_; }

 private:
  int fd_;
  std::string error_;
};

class MemorySink : public Sink {
 public:
  bool write(const void* data, size_t n) override;
  std::vector<uint8_t> bytes;
};

struct WriterOptions {
  uint32_t recordsChunkBytes = 1u << 20;  // raw bytes of a records chunk before it is closed
  uint32_t ramChunkBytes = 1u << 20;        // raw bytes of a RAM dump chunk before it is closed
  bool compress = true;                     // LZ4 (a chunk that does not shrink is stored raw)
  uint32_t maxCollectedPerRecord = 32768;   // larger collected sets are split into records
  uint32_t maxSegmentBytes = 4u << 20;      // larger RAM segments are split into pieces
};

class LogWriter {
 public:
  // Writes the prefix and header at once.
  LogWriter(Sink& sink, const Header& header, WriterOptions options = {});
  ~LogWriter();
  LogWriter(const LogWriter&) = delete;
  LogWriter& operator=(const LogWriter&) = delete;

  bool ok() const { return ok_; }
  const std::string& error() const { return error_; }
  uint64_t bytesWritten() const { return offset_; }

  // Records, in sequence order (format.h). Collected addresses are sorted by the writer.
  void write(const Alloc& r) {
    writeAlloc(r.ev, r.address, AllocInfo{r.heap, r.size, r.actualSize, r.stackId, r.typeId});
  }
  // The same, with the attributes as the dictionary keeps them: for a hot caller that has them
  // as separate values (the recorder's writer, from its ring records). Building an Alloc first
  // and passing it on costs a store-forwarding stall: GCC copies size and actualSize with one
  // 16-byte load over the two 8-byte stores that just wrote them, ~15 cycles, which was a third
  // of the encoder's time on managed allocations.
  void writeAlloc(const EventCommon& ev, uint64_t address, const AllocInfo& info);
  void write(const Free& r);
  void write(const Realloc& r);
  void write(const StackNode& r);
  void write(const Collected& r);
  void write(const LogString& r);
  void write(const TypeDef& r);
  void write(const MethodDef& r);
  void write(const GcBegin& r);
  void write(const GcEnd& r);
  void write(const RootRange& r);
  void write(const RootSet& r);
  void write(const CustomEvent& r);
  void write(const FrameMark& r);
  void write(const ThreadStart& r);
  void write(const ThreadStop& r);
  void write(const ModuleLoad& r);
  void write(const ModuleUnload& r);
  void write(const JitRange& r);
  void write(const Lost& r);
  void write(const GcHandle& r);
  void write(const Finalize& r);
  void write(const Record& r);
  // RAM dump segment; bytes must hold `length` bytes when hasBytes. Large ones are split.
  void write(const RamSegment& r);
  // The same for bytes in place (the recorder's dump buffers): stored once per content hash.
  void writeRam(SegmentKind kind, uint32_t gcNumber, uint64_t address,
                std::span<const uint8_t> bytes);

  // Closes the open chunks (records and RAM) and writes them; the log is readable up to here.
  void flush();
  // flush(), then the index chunk and trailer. No record may follow.
  void finish();

  // Writes raw bytes as a chunk of any type (tests use this for unknown chunk types). After a
  // records chunk, the next records chunk starts at its first event: the caller keeps the
  // chunks' sequence numbers continuing each other (check.h). Its records are not read, so the
  // footer then marks no chunk as naming code (Index.codeMarked false, as in an older log).
  void writeRawChunk(uint16_t type, std::span<const uint8_t> payload, uint64_t firstSeq,
                     uint32_t count);

 private:
  struct Impl;
  void fail(const std::string& why);
  bool emit(const void* p, size_t n);
  void beginEvent(const EventCommon& ev);
  void noteTime(const EventCommon& ev);
  void afterRecord();
  static bool diesByCollection(HeapKind h) {
    return h == HeapKind::kGcNormal || h == HeapKind::kGcAtomic || h == HeapKind::kGcj ||
           h == HeapKind::kGcTyped || h == HeapKind::kManaged;
  }
  void writeExtended(ExtKind kind, const EventCommon* ev, std::span<const uint8_t> body);
  void flushRecords();
  void flushRam();
  void putRam(SegmentKind kind, uint32_t gcNumber, uint64_t address, uint64_t length,
              uint64_t hash, const uint8_t* bytes, bool stored);  // !stored: bytes stored earlier
  void writeChunk(uint16_t type, const uint8_t* raw, size_t rawLen, uint64_t firstSeq,
                  uint32_t count, IndexEntry* entry);

  Sink& sink_;
  WriterOptions options_;
  bool ok_ = true;
  bool finished_ = false;
  std::string error_;
  uint64_t offset_ = 0;
  std::unique_ptr<Impl> impl_;
};

}  // namespace heapman::log
