// Queries over a Replay (one .cpp each in replay/src): blame, growth diff, churn, exploration,
// two-log comparison and folded stacks. They compute rows; heapman formats them.
//
// Every result carries `warnings` for its header: lost events (results may be incomplete) and a
// truncated log. Bytes are requested sizes. A "type" is the TypeDef name, or "(heap)" for objects
// without a type (native ones: "(native)").
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "heapman/replay/frames.h"
#include "heapman/replay/replay.h"

namespace heapman::replay {

enum class SortBy { kBytes, kObjects, kName };
SortBy parseSortBy(const std::string& s);  // "bytes" | "objects" | "name"; ReplayError otherwise

std::vector<std::string> warnings(const Replay& r);
std::string typeLabel(const LogTables& t, const AllocInfo& info);

// Objects and bytes per AllocInfo id.
struct InfoCounts {
  std::vector<uint64_t> objects, bytes;
  void add(uint32_t info, uint64_t n, uint64_t size) {
    if (info >= objects.size()) objects.resize(info + 1), bytes.resize(info + 1);
    objects[info] += n;
    bytes[info] += size;
  }
  std::vector<uint32_t> ids() const;  // infos with objects
};
InfoCounts countLive(const Replay& r);

// ---- blame (blame.cpp) ----------------------------------------------------------------------
struct TypeShare {
  std::string type;
  uint64_t bytes = 0, objects = 0;
};
// A frame of a row's representative stack: skipped by the exclusions, the one charged, or one of
// its callers.
enum class FrameRole { kExcluded, kCharged, kCaller };
const char* frameRoleName(FrameRole r);  // "excluded" | "charged" | "caller"
struct BlameFrame {
  NamedFrame frame;
  FrameRole role = FrameRole::kCaller;
};
struct BlameRow {
  Site site;
  uint64_t bytes = 0, objects = 0;
  double share = 0;              // of all live bytes
  std::vector<TypeShare> types;  // top 3 by bytes
  // With stacks: the row's stack with the most live bytes (ties: the lower stack id), leaf first,
  // and its live bytes and objects; empty for "(no stack)".
  std::vector<BlameFrame> stack;
  uint64_t stackBytes = 0, stackObjects = 0;
};
struct BlameResult {
  std::string point;
  uint64_t totalBytes = 0, totalObjects = 0;
  std::vector<BlameRow> rows;  // sorted, cut to `top` (0: all)
  std::vector<std::string> warnings;
};
// At the replay's current position; stacks: fill BlameRow::stack.
BlameResult blame(Replay& r, Attribution& a, SortBy sort, size_t top, bool stacks = false);

// ---- growth diff (diff.cpp) and two-log comparison (compare.cpp) ------------------------------
struct DiffRow {
  std::string name, module, location;  // function rows: the site; type rows: name only
  uint64_t objectsA = 0, bytesA = 0, objectsB = 0, bytesB = 0;
  int64_t deltaObjects() const { return int64_t(objectsB) - int64_t(objectsA); }
  int64_t deltaBytes() const { return int64_t(bytesB) - int64_t(bytesA); }
};
struct BornObject {
  uint64_t address = 0, size = 0, seq = 0;
  uint32_t epoch = 0;
  std::string type, function;
};
struct DiffResult {
  std::string from, to;
  std::vector<DiffRow> functions, types;  // sorted by |delta bytes| (or as asked), cut to top
  std::vector<BornObject> born;           // born after `from`, alive at `to` (on request)
  std::vector<std::string> warnings;
};
// Sorting of diff rows: kBytes = |delta bytes| descending, kObjects = |delta objects|, kName.
void sortDiffRows(std::vector<DiffRow>& rows, SortBy sort, size_t top);
// Adds one side's live counts (side B when sideB) to rows keyed by site (function + module) and
// by type label; diff and compareLogs share it.
void accumulateDiff(const LogTables& t, Attribution& a, const InfoCounts& c, bool sideB,
                    std::map<std::string, DiffRow>& functions,
                    std::map<std::string, DiffRow>& types);
// Seeks `from` then `to` (to >= from not required).
DiffResult diff(Replay& r, Attribution& a, uint64_t from, uint64_t to, bool listBorn, SortBy sort,
                size_t top, size_t bornLimit = 1000);
// Log A at point pa vs log B at point pb, per blame function (matched by function and module
// file name) and per type.
DiffResult compareLogs(Replay& ra, Attribution& aa, uint64_t pa, Replay& rb, Attribution& ab,
                       uint64_t pb, SortBy sort, size_t top);

// ---- churn (churn.cpp) ----------------------------------------------------------------------
struct ChurnRow {
  Site site;
  uint64_t allocatedObjects = 0, allocatedBytes = 0;
  uint64_t collectedObjects = 0, collectedBytes = 0;
  uint64_t freedObjects = 0, freedBytes = 0;  // free, realloc source, replaced
  uint64_t garbageBytes() const { return collectedBytes + freedBytes; }
  uint64_t garbageObjects() const { return collectedObjects + freedObjects; }
};
struct ChurnResult {
  std::string from, to;
  uint64_t collectedBytes = 0, freedBytes = 0, collectedObjects = 0, freedObjects = 0;
  std::vector<ChurnRow> rows;  // sorted by garbage bytes (or as asked), cut to top
  std::vector<std::string> warnings;
};
ChurnResult churn(Replay& r, Attribution& a, uint64_t from, uint64_t to, SortBy sort, size_t top);
// What churn and foldedChurn count, per AllocInfo, for a caller that walks the range itself
// (heapman report: one forward pass feeds its series, its points and these): births, and deaths
// by a GC or explicitly. Feed it as the Observer of forward seeks over [from, to).
class GarbageCounter : public Observer {
 public:
  explicit GarbageCounter(const LogTables& t) : infos_(t.infos) {}
  void born(const LiveObject& o) override { births.add(o.info(), 1, infos_[o.info()].size); }
  void died(const LiveObject& o, Death how, uint64_t) override {
    (how == Death::kCollected ? collected : freed).add(o.info(), 1, infos_[o.info()].size);
  }
  // Adds what the index counted in one span of the log (LogTables::churnSpans).
  void add(const ChurnSpan& s);
  InfoCounts births, collected, freed;

 private:
  const std::vector<AllocInfo>& infos_;
};
// What was born and died in [from, to): the index's spans that the range covers, summed, and
// replays of its two ends (at most a checkpoint interval each); the whole range replayed when the
// index kept no spans. Where the replay is left is unspecified.
GarbageCounter countGarbage(Replay& r, uint64_t from, uint64_t to);
// churn() over counts a GarbageCounter gathered between `from` and `to`.
ChurnResult churn(Replay& r, Attribution& a, const GarbageCounter& c, uint64_t from, uint64_t to,
                  SortBy sort, size_t top);

// ---- exploration (explore.cpp) ----------------------------------------------------------------
struct AllocEvent {
  uint64_t seq = 0;
  std::string kind;  // alloc, free, realloc, collected, replaced
  uint64_t address = 0, size = 0;
  std::string heap, type, function;
  uint32_t thread = 0;
};
struct AllocFilter {
  std::string typeRegex, functionRegex;  // empty: any
  bool allocs = true, frees = true;
  size_t limit = 0;  // 0: all
};
struct AllocsResult {
  std::string from, to;
  std::vector<AllocEvent> events;
  uint64_t matched = 0;  // before the limit
  std::vector<std::string> warnings;
};
AllocsResult listAllocs(Replay& r, Attribution& a, uint64_t from, uint64_t to,
                        const AllocFilter& filter);

struct TypeRow {
  std::string type;
  uint64_t objectsA = 0, bytesA = 0, objectsB = 0, bytesB = 0;
  uint64_t bornBetween = 0, bornBetweenBytes = 0;  // at B, born after A (a "generation")
};
struct TypesResult {
  std::string at, compareTo;  // compareTo empty: one point (B columns only)
  std::vector<TypeRow> rows;
  std::vector<std::string> warnings;
};
// Per-type alive counts at `at`; with `against`, also at that earlier point and the generation
// born between them.
TypesResult typeCounts(Replay& r, uint64_t at, const uint64_t* against, SortBy sort, size_t top);

// ---- folded stacks (folded.cpp) -----------------------------------------------------------
struct FoldedLine {
  std::string stack;  // root first, ';'-separated
  uint64_t bytes = 0, objects = 0;
};
std::vector<FoldedLine> foldedLive(Replay& r, Attribution& a);
std::vector<FoldedLine> foldedChurn(Replay& r, Attribution& a, uint64_t from, uint64_t to);
// foldedChurn() over counts a GarbageCounter gathered.
std::vector<FoldedLine> foldedChurn(Replay& r, Attribution& a, const GarbageCounter& c);

}  // namespace heapman::replay
