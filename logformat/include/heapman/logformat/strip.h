// A copy of a log without its RAM dumps: for attaching to a bug report or sharing, since the dumps
// hold the bytes of every live object of the recorded program (strings, keys, tokens). Every
// record is kept, in order, with its sequence number; only the RAM dump chunks are left out, and
// the header's "ram_dumps" option says "stripped". The copy is a complete log (footer, index)
// that verifies; every query that does not read memory answers as it does on the original.
#pragma once

#include <cstdint>

#include "heapman/logformat/reader.h"
#include "heapman/logformat/writer.h"

namespace heapman::log {

struct StripResult {
  uint64_t records = 0;      // records copied
  uint64_t ramChunks = 0;    // RAM dump chunks left out
  uint64_t ramBytes = 0;     // their stored bytes
  bool sourceComplete = false;  // the original had its footer (else: what it kept, copied)
  bool ok = false;           // the copy was written whole (else: out's error)
  std::string error;
};

// Copies `in` to `out` without RAM dumps. Throws FormatError where `in` cannot be read; a failing
// sink gives ok == false and its error.
StripResult stripRamDumps(const LogReader& in, Sink& out);

}  // namespace heapman::log
