// DumpStore: the RAM dumps of a log (format.h "RAM DUMP CHUNK"), one GC at a time.
//
//   DumpStore store(replay.reader());
//   store.dumpedGcs();          // GC numbers with a dump, ascending
//   Dump d = store.load(40);    // every object and root segment of GC 40, with its bytes
//
// A deduplicated segment (a hash without bytes) takes its bytes from the first segment of the log
// with that hash. The hash -> first copy table comes from the log's index (LOG.hmx, see
// useIndexedCopies), or, without it, is built in memory, once per DumpStore, from the dump chunks
// up to the last one a load needs (a copy always precedes its references). A load decompresses
// each chunk it reads once: the chunks not hashed yet (none with the index's table) and the GC's
// own in one pass (hashing, and copying the GC's stored bytes), then each chunk holding a first
// copy the GC refers to. Segments the writer split (4 MiB pieces) are joined.
//
// Errors: GraphError (no dump at that GC: the message lists the dumped ones and the --ram-dumps
// to record with; a hash with no stored copy), log::FormatError for a corrupt chunk.
// Not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "heapman/logformat/ram_dump.h"
#include "heapman/logformat/reader.h"
#include "heapman/replay/replay.h"

namespace heapman::graph {

// Bad input for a graph query (no dump at that point, an address in no object): a ReplayError,
// so that heapman answers it with exit code 2 as for any point the log does not have.
class GraphError : public replay::ReplayError {
 public:
  using replay::ReplayError::ReplayError;
};

// Piece size of the recorder's writer (LogWriter's maxSegmentBytes): a segment of exactly this
// length followed by one that starts where it ends is one range cut in two.
inline constexpr uint64_t kSegmentPiece = uint64_t{4} << 20;

struct DumpSegment {
  uint64_t address = 0;
  uint64_t length = 0;
  uint64_t offset = 0;  // of its bytes in Dump::bytes
  log::SegmentKind kind = log::SegmentKind::kObject;
};

struct Dump {
  uint32_t gc = 0;
  std::vector<DumpSegment> objects;  // ascending address, no overlap
  std::vector<DumpSegment> roots;    // static roots, registered ranges, stacks: in log order
  std::vector<uint8_t> bytes;
  uint64_t byteCount = 0;  // == bytes.size()
  uint64_t storedSegments = 0, dedupSegments = 0;  // as read (before joining pieces)
  uint64_t overlapsDropped = 0;                    // object segments overlapping another

  const uint8_t* data(const DumpSegment& s) const { return bytes.data() + s.offset; }
  // Bytes of the segment table and the bytes themselves.
  uint64_t memoryBytes() const {
    return byteCount + (objects.capacity() + roots.capacity()) * sizeof(DumpSegment);
  }
};

// What the graph builder reads from the record chunks (root sets, managed types' layouts), kept
// with the DumpStore so that a session decodes each record chunk once: graph_builder.cpp.
struct RecordFacts;

class DumpStore {
 public:
  explicit DumpStore(const log::LogReader& reader);
  // The graph builder's record cache (created on first use; graph_builder.cpp fills it).
  RecordFacts& recordFacts();

  // GC numbers with at least one dump segment, ascending. From the footer's index when the log is
  // complete (no payload read), else by reading every dump chunk once.
  const std::vector<uint32_t>& dumpedGcs();
  // The collections RAM dump chunk `c` of `reader` holds segments of, ascending (its payload
  // read; a log being written takes in its new dump chunks so). Throws log::FormatError.
  static std::vector<uint32_t> gcsIn(const log::LogReader& reader, const log::ChunkRef& c);
  bool has(uint32_t gc);
  // "GC 3, 5, 7 (3 dumps)" or "none": for messages.
  std::string describeDumped();
  Dump load(uint32_t gc);
  // The log index's table of first copies (replay::LogTables::dumpCopies, when
  // dumpCopiesIndexed): a load then reads only the GC's own chunks and those holding the first
  // copies it refers to, instead of every dump chunk before it. `copies` must outlive the store.
  void useIndexedCopies(std::span<const replay::DumpCopy> copies);

 private:
  struct Where {
    uint32_t chunk;   // index into ram_
    uint32_t offset;  // of the bytes in the chunk's raw payload
  };
  using Header = log::RamSegmentHeader;
  template <class F>
  void parse(size_t ramIndex, std::span<const uint8_t> raw, F&& f) const;
  void listGcs();

  const log::LogReader& reader_;
  std::vector<const log::ChunkRef*> ram_;          // the dump chunks, in file order
  std::vector<std::vector<uint32_t>> chunkGcs_;    // per dump chunk: its GC numbers
  std::vector<uint32_t> gcs_;
  bool listed_ = false;
  // Content hash -> first stored copy: open addressing, linear probing, indexed by the hash's
  // own bits (XXH3: uniform), at most half full. 16 bytes a stored segment; a node-based
  // unordered_map took 3x the time of the scan to fill.
  struct Slot {
    uint64_t hash;
    Where where;  // chunk UINT32_MAX: empty
  };
  std::vector<Slot> firstCopy_;
  size_t copies_ = 0;
  void addCopy(uint64_t hash, Where w);
  const Where* findCopy(uint64_t hash) const;
  const Where* findIndexedCopy(uint64_t hash, Where& out) const;
  std::span<const replay::DumpCopy> indexed_;
  bool useIndex_ = false;
  size_t hashed_ = 0;                              // dump chunks entered in firstCopy_
  std::vector<uint8_t> buffer_;
  std::shared_ptr<RecordFacts> facts_;  // shared_ptr: RecordFacts is complete only where filled
};

}  // namespace heapman::graph
