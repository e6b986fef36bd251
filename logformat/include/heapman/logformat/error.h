// Typed errors of the log reader. Every error names where in the file it was found, so that a
// user (and `heapman verify`) can say "chunk 12 at byte 88213 is corrupt" rather than "bad log".
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace heapman::log {

enum class ErrorCode {
  kIo,              // the file cannot be opened or read (missing, a directory, permissions)
  kEmpty,           // zero bytes
  kNotALog,         // no HeapMan magic at offset 0
  kNewerVersion,    // major version newer than this reader
  kOlderVersion,    // major version older than this reader still supports
  kTruncatedHeader, // the file ends inside the prefix or header
  kBadHeader,       // header checksum or Cap'n Proto decoding failed
  kBadChunkHeader,  // chunk magic or header check wrong: the chunk cannot be trusted
  kBadChecksum,     // payload checksum mismatch
  kBadPayload,      // payload does not decompress to its declared raw length
  kBadRecord,       // records inside a chunk do not decode
  kBadFooter,       // trailer or index chunk inconsistent
  kBadSequence,     // sequence numbers go backwards
};
const char* errorCodeName(ErrorCode c);

class FormatError : public std::runtime_error {
 public:
  static constexpr int64_t kNoChunk = -1;
  FormatError(ErrorCode code, uint64_t offset, int64_t chunk, const std::string& message);

  ErrorCode code() const { return code_; }
  uint64_t offset() const { return offset_; }  // file offset the problem was found at
  int64_t chunk() const { return chunk_; }     // chunk number (0-based), or kNoChunk
  const std::string& detail() const { return detail_; }

 private:
  ErrorCode code_;
  uint64_t offset_;
  int64_t chunk_;
  std::string detail_;
};

}  // namespace heapman::log
