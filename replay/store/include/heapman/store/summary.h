// A run's summary: what one log contributes to a store of many runs (heapman ingest) and what a
// budget is checked against (heapman check). Summaries, not events: a run is kilobytes to a few
// megabytes of rows whatever the length of its log.
//
// Computed through the replay library's queries, the same the verbs print:
//   run      the log's id (logId: the recording's header, so the same log ingested twice is one
//            run), program, command line, recorder options, host, duration, counts, the peak
//            live bytes, the garbage of the whole run (churn) and the repeating event;
//   gcs      every GC (heapman gcs): time, pause, heap before/after, live and collected bytes;
//   points   live bytes and objects per heap at each custom event occurrence ("level_end#3")
//            and at the end ("end"), and each heap's peak (point "peak"), from one forward pass
//            that follows births and deaths;
//   sites    blame per site at each repetition of the repeating event (heapman blame --at
//            EVENT#K; and of the events named as often: level_start and level_end), taken on
//            the way, and at the end, the first `top` rows by bytes;
//   types    live bytes per type there (heapman types --at EVENT#K), the first `top` rows;
//   churn    garbage per site over the whole run (heapman churn), the first `top` rows;
//   leaks    heapman leaks --at-each EVENT: its suspects (with RAM dumps) and growing sites and
//            types, each with a sentence.
// The repeating event is the custom event named most often (ties: the first seen), unless given.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "heapman/logformat/records.h"
#include "heapman/replay/frames.h"
#include "heapman/replay/replay.h"

namespace heapman::store {

struct Tag {
  std::string key, value;
  bool operator==(const Tag&) const = default;
};
// "build=4812" -> {build, 4812}; throws std::invalid_argument naming what is wrong.
Tag parseTag(const std::string& text);

struct RunInfo {
  std::string logId;  // 16 hex digits
  std::string program, commandLine, options, hostname;
  uint32_t pid = 0;
  int64_t startWallNs = 0;
  uint64_t durationNs = 0;
  uint64_t events = 0, allocs = 0, frees = 0, frames = 0, gcCount = 0;
  uint64_t peakBytes = 0;     // live bytes (requested) at their highest, all heaps
  uint64_t garbageBytes = 0;  // collected and freed over the whole run
  std::string repeatingEvent;  // "" when the log has no custom event
  uint64_t repetitions = 0;
  std::vector<Tag> tags;
  bool operator==(const RunInfo&) const = default;
};

struct GcRow {
  uint32_t gc = 0;
  uint64_t timeNs = 0, pauseNs = 0, heapBefore = 0, heapAfter = 0, liveBytes = 0,
           collectedBytes = 0;
  bool operator==(const GcRow&) const = default;
};

struct PointRow {
  std::string point;  // "level_end#3", or "peak"
  std::string heap;   // log::heapKindName
  uint64_t liveBytes = 0, liveObjects = 0;
  bool operator==(const PointRow&) const = default;
};

struct SiteRow {
  std::string point, function, module;
  uint64_t bytes = 0, objects = 0;
  bool operator==(const SiteRow&) const = default;
};

struct TypeRow {
  std::string point, type;
  uint64_t bytes = 0, objects = 0;
  bool operator==(const TypeRow&) const = default;
};

struct ChurnRow {
  std::string function, module;
  uint64_t garbageBytes = 0, allocatedBytes = 0, collectedBytes = 0, freedBytes = 0;
  bool operator==(const ChurnRow&) const = default;
};

struct LeakRow {
  std::string kind;  // "suspect" (a growing container, with RAM dumps), "site", "type"
  std::string name;
  int64_t bytesPerStep = 0;
  std::string sentence;
  bool operator==(const LeakRow&) const = default;
};

struct RunSummary {
  RunInfo run;
  std::vector<GcRow> gcs;
  std::vector<PointRow> points;
  std::vector<SiteRow> sites;
  std::vector<TypeRow> types;
  std::vector<ChurnRow> churn;
  std::vector<LeakRow> leaks;
  std::vector<std::string> notes;  // what could not be summarized, and why (not stored)
  bool operator==(const RunSummary&) const = default;

  // Live bytes at a point, all heaps or one ("" or "all": all); false when the point is absent.
  bool liveAt(const std::string& point, const std::string& heap, uint64_t* bytes) const;
  // The points of the custom events, in log order, and "end"; without "peak".
  std::vector<std::string> eventPoints() const;
};

struct SummaryOptions {
  std::string repeatingEvent;  // "" : the event named most often
  // More points to take blame at (a budget's growth rule): points of the log ("level_end#2").
  std::vector<std::string> blamePoints;
  size_t top = 100;  // rows of blame, types and churn kept per point (0: all)
};

// The id of the recording a log holds: a hash of its header (program, pid, host, start times),
// 16 hex digits. Equal for the same log, and for a copy of it.
std::string logId(const log::Header& h);
// The id of what the replay has read, the run's id in a store: logId() of a complete log; of one
// cut short (no footer: its recorder died, or it was copied while being written) that id and
// ".pN", N the events read, so that the same cut-short copy is one run and the complete log of
// the recording is another, which replaces it (Store::put).
std::string logIdOf(replay::Replay& r);
// The recording of a partial run's id (its first 16 digits); "" for a complete run's.
std::string partialOf(const std::string& id);

// The p99 of some GC pauses by nearest rank: the smallest with at least 99% of them at or below
// it; 0 for none. What the budget's [gc_pause] p99 and trend's FigureKind::kGcPauseP99 compute.
uint64_t pauseP99(std::vector<uint64_t> pauses);

// Summarizes the log the replay has open. Moves the replay (its position after is unspecified).
// Throws what the replay throws (log::FormatError for a corrupt log).
RunSummary summarize(replay::Replay& r, replay::Attribution& a, const SummaryOptions& o = {});

}  // namespace heapman::store
