// The index pass's state between runPass() calls (Replay::Pass): the pass runs in index_pass.cpp,
// a seek (seek.cpp) carries it on past where it stopped. Private to replay/src.
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>

#include "heapman/logformat/check.h"
#include "heapman/replay/replay.h"

namespace heapman::replay {

// The index pass between runPass() calls: where it stopped (a chunk begun and paused in it when
// a limit or target stopped it) and what it carries from chunk to chunk.
struct Replay::Pass {
  explicit Pass(const log::LogReader& reader) : check(reader) {}
  log::LogCheck check;  // every record through the log's rules, once
  std::unordered_map<uint32_t, size_t> gcIndex;         // GC number -> tables_.gcs index
  std::unordered_map<uint32_t, uint32_t> eventCounts;  // occurrences per event name id
  uint64_t sinceCheckpoint = 0;
  bool sawEvent = false;
  size_t chunk = 0;         // of recordChunks_, the next to apply (or the one paused in)
  uint64_t consumed = 0;    // its records applied
  bool inChunk = false;     // paused in `chunk`: begun, not ended, in LogCheck
  uint64_t position = 0;    // the limit it stopped at: the state there is the pass's
  bool lazy = false;        // paused between queries (ReplayOptions::lazy): writes the index at
                            // its end
  bool broken = false;      // stopped by an exception mid-chunk: started again at the next run
  bool checkedNext = false; // the record it stopped at went through LogCheck
  bool startKnown = false;  // tables_.firstSeq is the first event's (a pass that met none yet)
};

}  // namespace heapman::replay
