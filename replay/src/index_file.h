// The index file next to a log (LOG.hmx): identity of the log, checkpoints, and the tables.
//
// Layout, byte by byte (all integers little-endian):
//   0   8  magic "HMINDEX1"
//   8   4  version (kIndexVersion)
//   12  4  header bytes (96)
//   16  8  log file size
//   24  8  XXH3-64 of the log's first min(size, 64 KiB) bytes
//   32  8  payload checksum of the log's last chunk (0: no chunk)
//   40  8  number of chunks in the log
//   48  8  checkpoint interval (events) the index was built with
//   56  8  directory offset
//   64  8  directory bytes
//   72  8  XXH3-64 of the directory
//   80  8  index share the index was built with (ReplayOptions::indexShare)
//   88  8  XXH3-64 of bytes 0..87
//   96  ... blobs: checkpoints in log order, then the tables; each an LZ4 block
//   directory: u32 checkpoint count, per checkpoint {u64 chunk, u64 position, u64 live objects,
//              u64 offset, u64 stored bytes, u64 raw bytes, u64 XXH3-64 of the stored bytes,
//              u64 kind (0 full, 1 delta against the checkpoint before)}, then the tables'
//              {u64 offset, u64 stored, u64 raw, u64 XXH3-64}.
// The file is written as NAME.tmp.PID and renamed when complete, so a reader never sees half of
// one. Checkpoint raw layout: Replay::serializeState(); tables: writeTables() in index_file.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "heapman/replay/replay.h"
#include "serial.h"

namespace heapman::replay {

// 2: JIT ranges in the tables; 3: delta checkpoints in columns, a byte budget (indexShare);
// 4: the RAM dumps' first copies in the tables (LogTables::dumpCopies); 5: the threads' stack
// bounds (a version-4 index gave every thread 0-0); 6: built by an index pass that applies
// log::LogCheck (an older index may stand for a log with a chunk missing: rebuilt, it says so);
// 7: births and deaths per info between checkpoints in the tables (LogTables::churnSpans);
// 8: the live series, births per info and address blocks (LogTables::series)
inline constexpr uint32_t kIndexVersion = 8;
inline constexpr uint64_t kIndexHeaderBytes = 96;

// Start of loadIndexFile's reason for a path that holds something other than a regular file (a
// FIFO would block every open): that path is neither read nor written.
inline constexpr char kNotRegular[] = "not a regular file";

// Where an index may live: the requested path, then $XDG_CACHE_HOME/heapman (or ~/.cache/heapman)
// under a name derived from the log's absolute path.
std::vector<std::string> indexCandidates(const std::string& primary, const std::string& logName);

struct Replay::Index {
  struct CheckpointRef {
    uint64_t chunk = 0, position = 0, liveObjects = 0;
    uint64_t offset = 0, stored = 0, raw = 0, hash = 0;
    bool delta = false;  // applies to the checkpoint before it (else a full one)
  };
  std::vector<CheckpointRef> checkpoints;
  uint64_t fileBytes = 0;

  // Storage of the blobs: a mapped file, or memory (no writable place for the index). While the
  // index is built, checkpoints go straight to NAME.tmp.PID (the spill), so memory stays bounded.
  const uint8_t* map = nullptr;
  size_t mapBytes = 0;
  std::vector<uint8_t> memory;
  int spillFd = -1;
  std::string spillPath, spillTarget;
  uint64_t spillBytes = 0;

  Index() = default;
  Index(const Index&) = delete;
  Index& operator=(const Index&) = delete;
  ~Index();

  // Starts writing the index for `target` at target.tmp.PID; false when that is not possible.
  bool openSpill(const std::string& target);
  void dropSpill();
  // `stored`: the checkpoint's LZ4 block, of `rawSize` bytes decompressed.
  void addCheckpoint(uint64_t chunk, uint64_t position, uint64_t liveObjects, bool delta,
                     const std::vector<uint8_t>& stored, uint64_t rawSize);
  // Decompressed bytes of checkpoint i; throws ReplayError when they are damaged.
  std::vector<uint8_t> checkpointBytes(size_t i) const;
  const uint8_t* base() const { return map ? map : memory.data(); }
};

// The tables as bytes (the index's last blob, before LZ4) and back. readTables throws
// log::CursorOverrun on malformed input.
std::vector<uint8_t> writeTables(const LogTables& t);
// The churn spans as the tables hold them (after their `indexed` byte).
void writeChurnSpans(detail::Out& o, const std::vector<ChurnSpan>& spans);
// Fills t.dumpCopies from the log's RAM dump chunks (each decompressed once): the first stored
// copy of every content hash a later segment refers to. Left unindexed when the log has no
// dump, a dump chunk is damaged, or the table would take more than `budgetBytes`.
void indexDumpCopies(const log::LogReader& reader, LogTables& t, uint64_t budgetBytes);
LogTables readTables(std::span<const uint8_t> raw);

}  // namespace heapman::replay
