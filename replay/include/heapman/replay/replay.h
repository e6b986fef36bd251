// Replay: rebuilds the heap of a recorded program at any point of its log.
//
//   Replay r("game.hml");                 // opens the log and its index (game.hml.hmx), building
//                                         // the index on first open
//   r.seek(r.resolve(parsePoint("gc:40")));
//   r.live().forEach([&](const LiveObject& o) { r.info(o.info()) ... });
//
// A position is a sequence limit L: the state holds every event with seq < L applied (and the
// definitions and collected sets that precede the first event with seq >= L). Points (point.h)
// resolve to limits: "gc:N" is just after GC N's GcEnd. seek() goes forward from the current
// state when that is cheaper, else from the nearest checkpoint at or before the limit.
//
// Semantics (docs/DESIGN.md §3): a free of an address not live counts as an unknown free; an
// alloc at a live address replaces the old object (counted); Realloc with oldAddress 0 is an
// alloc, else the old object dies and the new one is born; Collected sets take effect at their
// GC's GcEnd. Errors: ReplayError (bad point, out of range), log::FormatError (corrupt log:
// what `heapman verify` refuses, log::LogCheck) and DataError (beyond the replay's limits, a
// damaged index file).
// Threads: one thread uses a Replay at a time (seek() may decode on a helper thread of its own).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "heapman/logformat/reader.h"
#include "heapman/logformat/records.h"
#include "heapman/replay/live_set.h"
#include "heapman/replay/point.h"

namespace heapman::replay {

// Bad input from the user: a point the log does not have, a bad regex or sort key (heapman
// exits 2).
class ReplayError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// What the replay cannot use although the log's chunks read: more distinct allocation kinds
// than it can number, a damaged checkpoint in the index file. Not the user's arguments: heapman
// exits 1, and the message says what to do. (A corrupt log is log::FormatError.)
class DataError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Thrown by seek() and the index pass when ReplayOptions::cancel was set (Ctrl-C in the shell).
// The replay stays usable: the state is reset and the next seek starts afresh.
class Interrupted : public std::runtime_error {
 public:
  Interrupted() : std::runtime_error("interrupted") {}
};

// What a live object has besides its address and birth: one entry per distinct combination.
struct AllocInfo {
  log::HeapKind heap = log::HeapKind::kNative;
  uint32_t thread = 0;
  uint64_t size = 0;
  uint64_t actualSize = 0;
  uint32_t stackId = 0;
  uint32_t typeId = 0;
  bool operator==(const AllocInfo&) const = default;
};

struct GcRecord {
  uint32_t number = 0;
  int32_t generation = -1;
  bool ended = false;
  uint64_t beginSeq = 0, endSeq = 0;
  uint64_t beginTimeNs = 0, endTimeNs = 0;
  uint64_t heapSizeBefore = 0, heapSizeAfter = 0, freeBytes = 0, pauseNs = 0;
  uint64_t liveObjects = 0, liveBytes = 0;              // whole live set after the GcEnd
  uint64_t collectedObjects = 0, collectedBytes = 0;    // by this GC's Collected sets
  uint64_t unknownCollected = 0;                        // collected addresses not live
  bool operator==(const GcRecord&) const = default;
};

struct EventRecord {
  uint32_t nameId = 0;
  uint32_t occurrence = 0;  // 1-based among events of the same name
  uint64_t seq = 0, timeNs = 0;
  uint32_t thread = 0;
  uint32_t payloadBytes = 0;
  bool operator==(const EventRecord&) const = default;
};

struct FrameRecord {
  uint64_t frame = 0, seq = 0, timeNs = 0;
  bool operator==(const FrameRecord&) const = default;
};

struct LostRecord {
  uint64_t seq = 0, count = 0;
  uint32_t lostThread = 0;
  std::string reason;
  bool operator==(const LostRecord&) const = default;
};

struct StackNodeDef {
  uint32_t parent = 0;
  bool managed = false;
  bool defined = false;
  uint64_t frame = 0;
  bool operator==(const StackNodeDef&) const = default;
};

// The first stored copy of a RAM dump content hash (format.h "RAM DUMP CHUNK") that a later,
// deduplicated segment refers to: where its bytes are, so that the heap graph loads one GC's
// dump without reading the dumps before it.
struct DumpCopy {
  uint64_t hash = 0;
  uint32_t chunk = 0;   // the dump chunk's number (log::ChunkRef::number)
  uint32_t offset = 0;  // of the bytes in the chunk's raw payload
  bool operator==(const DumpCopy&) const = default;
};

// Births and deaths per AllocInfo in one span of the log between two of the index's checkpoints
// (LogTables::churnSpans).
struct ChurnSpan {
  uint64_t from = 0;             // seek limit where it starts (its checkpoint's position, or 0)
  std::vector<uint32_t> infos;   // ascending
  std::vector<uint64_t> counts;  // kColumns per info: born, collected, freed (by free, realloc
                                 // or a new allocation at its address), each objects then bytes
  static constexpr size_t kColumns = 6;
  bool operator==(const ChurnSpan&) const = default;
};

// The live heap where the index pass saw it (LogTables::series): a point every
// LogTables::seriesEvery events and one just after every GC's end.
struct SeriesPoint {
  uint64_t limit = 0;  // the state holds every event before it
  std::array<uint64_t, log::kHeapKindCount> bytes{}, objects{};  // live, by heap kind
  uint64_t peak = 0;   // the highest total live bytes since the point before (that one's included)
  bool gc = false;     // just after a GC's end (limit = its GcEnd's seq + 1)
  bool operator==(const SeriesPoint&) const = default;
};
// Addresses of the objects born over a log by blocks of 2^kAddressBlockBits bytes
// (LogTables::addressBlocks; the heap map's granules).
inline constexpr unsigned kAddressBlockBits = 16;

// Everything a log says besides the live set, gathered by the index pass (and stored in the index
// file so a later open needs no scan).
struct LogTables {
  std::vector<GcRecord> gcs;  // in GcBegin order
  std::vector<EventRecord> events;
  std::vector<FrameRecord> frames;
  std::vector<LostRecord> lost;
  std::unordered_map<uint32_t, std::string> strings;  // LogString id -> text
  std::unordered_map<uint32_t, std::string> types;    // TypeDef id -> name
  std::unordered_map<uint32_t, std::string> methods;  // MethodDef id -> name
  std::vector<StackNodeDef> stacks;                   // by node id; [0] is the empty stack
  std::vector<log::ModuleLoad> modules;               // in load order
  std::vector<log::ThreadStart> threads;
  std::vector<log::JitRange> jitRanges;               // Mono JIT code: native frames -> methods
  std::vector<AllocInfo> infos;                       // the AllocInfo dictionary, by id
  uint64_t firstSeq = 0, endSeq = 0;                  // events are [firstSeq, endSeq)
  uint64_t eventCount = 0, allocs = 0, frees = 0, reallocs = 0;
  uint64_t lostEvents = 0;
  uint64_t endTimeNs = 0;
  // First copies of the RAM dumps' deduplicated contents, by hash ascending. Indexed false: not
  // built (no dump chunk readable at indexing, or more than the index's share allows), and a
  // reader of the dumps builds the table itself.
  std::vector<DumpCopy> dumpCopies;
  bool dumpCopiesIndexed = false;
  // What was born and died between the index pass's checkpoints: span i covers [churnSpans[i].
  // from, churnSpans[i + 1].from), the last to the log's end, so that churn over a range is a
  // sum plus two short replays at its ends (countGarbage). Indexed false: not kept (more than the
  // index's share allows), and churn replays the whole range.
  std::vector<ChurnSpan> churnSpans;
  bool churnSpansIndexed = false;
  // What a view of the whole log needs without a pass of its own (the report's series, the heap
  // map's scan), counted by the index pass. Indexed false: not counted (a log being followed, an
  // index of an older version), and such a view replays the log. seriesEvery: a power of two,
  // doubled as the log grows so that at most ReplayOptions::seriesPoints points are not GC ones.
  std::vector<SeriesPoint> series;
  uint64_t seriesEvery = 0;
  std::vector<uint64_t> births;         // objects born, by AllocInfo id
  std::vector<uint64_t> addressBlocks;  // address >> kAddressBlockBits of every byte of every
                                        // object born, ascending, unique
  bool seriesIndexed = false;

  // Frames of a stack, leaf first (node frames; managed ones are MethodDef ids).
  std::vector<uint32_t> stackNodes(uint32_t stackId) const;
  const GcRecord* gc(uint32_t number) const;
  std::string eventName(uint32_t nameId) const;
  std::string typeName(uint32_t typeId) const;  // "" for 0, "type#N" when undefined
};

// The records of a whole log that frame names depend on (FrameNamer): its modules, Mono's JIT
// code and the methods both name. As LogTables holds them once the index pass has read the log.
struct LogCode {
  std::unordered_map<uint32_t, std::string> methods;  // MethodDef id -> name
  std::vector<log::ModuleLoad> modules;               // in load order
  std::vector<log::JitRange> jitRanges;
};

// Counters of the state at the current position.
struct Counters {
  uint64_t unknownFrees = 0;      // frees (and realloc sources) of addresses not live
  uint64_t replacedAllocs = 0;    // allocs at an address still live (a missed free)
  uint64_t unknownCollected = 0;  // collected addresses not live
  uint64_t gcEnds = 0;            // GcEnd records applied
  uint64_t lostEvents = 0;        // Lost counts applied
  uint64_t liveBytes = 0;         // requested bytes of the live set
  bool operator==(const Counters&) const = default;
};

enum class Death : uint8_t { kFree, kRealloc, kCollected, kReplaced };
const char* deathName(Death d);

// Sees every birth and death while seek() moves forward (see seek()).
class Observer {
 public:
  virtual ~Observer() = default;
  virtual void born(const LiveObject& obj) { (void)obj; }
  // seq: of the event that ended it (the GcEnd for collected objects).
  virtual void died(const LiveObject& obj, Death how, uint64_t seq) {
    (void)obj, (void)how, (void)seq;
  }
};

struct ReplayOptions {
  // Events between checkpoints, at least (rounded up to chunk boundaries).
  uint64_t checkpointEvents = 500'000;
  // Size bound of the index: its checkpoints take at most 3/4 of (log bytes read so far) / this,
  // so the whole index (tables and directory too) stays near or under a tenth of the log with
  // the default; a checkpoint that would not fit waits for more log. 0: no bound (tests).
  uint64_t indexShare = 10;
  // Points of the index's live series that are not a GC's end, at most (LogTables::series).
  size_t seriesPoints = 8192;
  // A log smaller than indexShare times this has this many bytes of index spread over it instead
  // of its share: a well-compressed log's checkpoints would lie too far apart for a quick seek.
  uint64_t indexFloor = 4 << 20;
  // Without a second thread to decode on, chunks are decoded into blocks of operations (which
  // let the live set prefetch its slots a few records ahead) once the live set takes this many
  // bytes, beyond what the caches hold; below it records go straight to the engine. 0: always
  // blocks (tests).
  size_t decodeBlocksAbove = size_t{4} << 20;
  // Index file; empty: LOG.hmx next to the log, else $XDG_CACHE_HOME/heapman (~/.cache/heapman)
  // when the log's directory is not writable.
  std::string indexPath;
  // false: no index file (everything is rebuilt in memory on open; no checkpoints are kept).
  bool useIndex = true;
  // Messages ("index stale, rebuilding"); nullptr: silent.
  FILE* notes = stderr;
  // Called with (done, total) work units during long steps (index build, long seeks).
  std::function<void(uint64_t, uint64_t)> progress;
  // false: a corrupt chunk anywhere throws log::FormatError. true: the replay covers the intact
  // chunks before the first corrupt one (a chunk missing, repeated or out of order too: what
  // log::LogCheck refuses) and damage() says where it stopped; the reader's chunk list ends
  // there (LogReader::endBefore) and no index file is written for such a log.
  bool intactPrefix = false;
  // Polled between blocks of a few thousand records; when it reads true, the replay throws
  // Interrupted. May be set from a signal handler.
  const std::atomic<bool>* cancel = nullptr;
  // true: a log without a usable index file is indexed only as far as the queries go. resolve()
  // and seek() carry the index pass on to the point they are asked for, tables() hold the log up
  // to where the pass stopped (indexed() false until it reaches the end; completeIndex() takes
  // it there), and the index file is written when it does. So the first question about an early
  // point of a fresh log costs the events up to that point, not the whole log. Only where no
  // index file is found (a stale or damaged one is rebuilt on open), and only for a log the
  // prefix answers exactly as the whole does: complete (its footer read), nothing lost, no RAM
  // dump, every chunk's checksum holding (checked on open, without decompressing). Any other log
  // is indexed on open. A log whose footer marks the chunks that name code (format minor 2) has
  // them read on open (codeAhead()): a FrameNamer given them names every frame as after the
  // whole pass. Without the marks a module loaded later could name a frame of the prefix
  // (FrameNamer::namedOutsideModules), and a Mono log (a later JitRange may rename an earlier
  // frame) is indexed on open.
  bool lazy = false;
  // true: the log is being written (heapman serve --follow). The index pass stops at the end of
  // the chunks written so far without ending there, and grow() carries it over what the recorder
  // writes next: each growth costs its own events, not the whole log's. Until the log is
  // complete the churn spans are not kept (churn replays its range) and, with useIndex, no index
  // file is written.
  bool follow = false;
};

struct IndexStatus {
  std::string path;        // "" when no index file is used
  bool built = false;      // built by this open (else loaded)
  std::string why;         // why it was built ("missing", "stale: ...", "corrupt: ...")
  size_t checkpoints = 0;
  uint64_t fileBytes = 0;
  double seconds = 0;      // time to build or load
};

class Replay {
 public:
  explicit Replay(const std::string& logPath, ReplayOptions options = {});
  // A log in memory (tests); an index file only when options.indexPath is set.
  Replay(log::LogReader reader, ReplayOptions options);
  ~Replay();
  Replay(const Replay&) = delete;
  Replay& operator=(const Replay&) = delete;

  const log::LogReader& reader() const { return reader_; }
  const LogTables& tables() const { return tables_; }
  // Unique among the Replays of this process, also after one is destroyed (caches keyed by a
  // Replay take this, not its address, which a later Replay may reuse).
  uint64_t serial() const { return serial_; }
  const IndexStatus& index() const { return status_; }
  // With ReplayOptions::intactPrefix: the corruption the replay stopped at (chunk and byte
  // offset in the error), else nullopt. The state and tables cover the chunks before it.
  const std::optional<log::FormatError>& damage() const { return damage_; }
  const AllocInfo& info(uint32_t id) const { return tables_.infos[id]; }

  // The sequence limit of a point; throws ReplayError naming the valid range.
  // With ReplayOptions::lazy the index pass goes on until it meets the point (to the end when
  // the log lacks it), which moves the state there too.
  uint64_t resolve(const Point& p);
  uint64_t resolve(const std::string& pointText) { return resolve(parsePoint(pointText)); }
  // The same on a replay that is indexed() (a std::logic_error when a lazy pass is paused).
  uint64_t resolve(const Point& p) const;
  uint64_t resolve(const std::string& pointText) const { return resolve(parsePoint(pointText)); }
  // A readable name for a limit ("gc:40", "level_end#3", "seq:1234", "end").
  std::string describe(uint64_t limit) const;

  // Moves the state to `limit`. With an observer the state only moves forward (limit >= position())
  // and every birth and death on the way is reported; without one, checkpoints are used.
  void seek(uint64_t limit, Observer* observer = nullptr);
  uint64_t position() const { return position_; }
  const LiveSet& live() const { return live_; }
  const Counters& counters() const { return counters_; }
  // Number of GcEnds before an object's birth.
  uint32_t epochOf(uint64_t birthSeq) const;

  // Keeps a copy of the state as it is now, in memory, for later seeks to its position or past
  // it (a seek starts from the nearest of the checkpoints and these). A caller that passes some
  // points once and comes back to them (the report's heap-map frames after its forward pass)
  // replays only from there. At most kKeptBytes in all (false beyond, and for a replay whose
  // lazy index pass has not reached the end).
  bool keepState();
  static constexpr size_t kKeptBytes = size_t{1} << 30;

  // Replays every event from the start into a fresh state, without checkpoints (benchmarks and
  // the property tests' reference).
  void replayFromStart(uint64_t limit);

  // Whether the index pass has read the whole log (always, unless ReplayOptions::lazy paused it):
  // tables() then describe all of it.
  bool indexed() const { return !pass_; }
  // Carries a paused index pass to the end of the log (writing the index file). The state is
  // then at the end. Nothing to do when indexed().
  void completeIndex();
  // The whole log's code records, read on a lazy open from the chunks the footer marks (see
  // ReplayOptions::lazy); null when the open did not read them (not lazy, an unmarked log).
  // Stays valid and equal to what tables() hold of them once the pass has read the log.
  const LogCode* codeAhead() const { return codeAhead_.get(); }

  // A log being written (ReplayOptions::follow, opened before its footer): takes in the chunks
  // the recorder wrote since the open or the last grow(), carrying the index pass over them.
  // kGrew: tables() cover them, the state is at the new end and serial() is new (what was
  // cached for this replay is stale). kReplaced: the file was recorded again; open it anew.
  // kNone: nothing whole was written since, or the log is complete, damaged or not followed.
  // Damage in what was appended ends the log before it (damage()), as an open would. Not
  // cancelled by ReplayOptions::cancel (it replays only what was appended).
  log::LogReader::Growth grow();

  struct Stats {
    uint64_t eventsApplied = 0;  // since construction
    uint64_t checkpointLoads = 0;
    uint64_t chunksDecoded = 0;
  };
  const Stats& stats() const { return stats_; }

 private:
  uint64_t serial_;
  struct Checkpoint;
  struct Index;
  template <bool kBuild>
  struct Applier;
  class SpanCounter;    // churn_spans.h
  class SeriesCounter;  // series_counter.h
  struct Pass;        // the index pass between chunks or paused in one (index_pass.h)

  void init();
  void listRecordChunks();
  void endAtDamage(const log::FormatError& e);  // called in a catch of `e`: may rethrow
  bool lazyAllowed() const;
  bool readCodeAhead();
  // The index pass: beginPass() starts it afresh, runPass() carries it on from where it stopped to
  // `limit` (or, with a target, to just after the record the point names), moving the state
  // with it; at the end of the log it ends it (endPass) and, when lazy, writes the index.
  void beginPass();
  void runPass(uint64_t limit, const Point* target, Observer* observer);
  void endPass();
  void toPass(Observer* observer);
  uint64_t resolveKnown(const Point& p) const;
  void writeIndex();
  bool loadIndexFile(const std::string& path, std::string* why);
  bool writeIndexFile(const std::string& path, std::string* error);
  // The state at the log's start; keepCapacity: the live set's table kept as large (a state of
  // about the same size is loaded next).
  void resetState(bool keepCapacity = false);
  void runForward(uint64_t limit, Observer* observer);
  void seekUnchecked(uint64_t limit, Observer* observer);
  size_t reserveUpTo(uint64_t limit);
  void checkCancel() const;
  template <class Make, class Done, class Want>
  void forEachChunk(size_t first, Make&& make, Done&& done, Want&& want);
  void loadCheckpoint(size_t i);
  // The state as a checkpoint: all live objects, or (delta) those born since the last checkpoint
  // and the addresses of the ones that died since (cpDeaths_). Layout in checkpoint.cpp.
  std::vector<uint8_t> serializeState(bool delta) const;
  void applyCheckpoint(const std::vector<uint8_t>& raw, bool delta);
  void maybeCheckpoint(size_t k, uint64_t& sinceCheckpoint);

  log::LogReader reader_;
  ReplayOptions options_;
  LogTables tables_;
  IndexStatus status_;
  std::vector<uint64_t> gcEndSeqs_;  // ascending, for epochOf()

  // State.
  LiveSet live_;
  Counters counters_;
  std::vector<std::pair<uint32_t, std::vector<uint64_t>>> pending_;  // collected, by GC number
  uint64_t position_ = 0;
  size_t chunk_ = 0;          // index into recordChunks_ of the next chunk to decode
  uint64_t consumed_ = 0;     // records of chunk_ already applied (resume mid-chunk)
  std::vector<log::ChunkRef> recordChunks_;
  // keepState()'s copies, by position ascending.
  struct KeptState {
    uint64_t position = 0;
    size_t chunk = 0;
    uint64_t consumed = 0;
    LiveSet live;
    Counters counters;
    std::vector<std::pair<uint32_t, std::vector<uint64_t>>> pending;
  };
  std::vector<KeptState> kept_;
  size_t keptBytes_ = 0;

  // Interning of AllocInfo during replay (ids in order of first use: the same in every pass).
  class InfoDict;
  std::unique_ptr<InfoDict> dict_;

  std::unique_ptr<Index> index_;
  // Index pass: deaths since the last checkpoint of objects born before it (cpFloor_ = its
  // position; 0 before the first), for delta checkpoints. Not kept past cpLiveAt_ entries (a
  // full checkpoint is then cheaper: cpDeltaOk_ false).
  uint64_t cpFloor_ = 0;
  std::vector<uint64_t> cpDeaths_;
  size_t cpLiveAt_ = 0;
  bool cpDeltaOk_ = false;
  uint64_t cpChainEntries_ = 0;    // objects and addresses in the deltas since the last full one
  uint64_t cpSpent_ = 0;           // checkpoint bytes written
  double cpBytesPerEntry_ = 2.0;   // stored bytes per object or address, as last measured
  bool cpMeasured_ = false;        // cpBytesPerEntry_ measured (else a guess)
  // Index pass: births and deaths since the last checkpoint (LogTables::churnSpans); null once
  // the spans outgrow their share of the index.
  std::unique_ptr<SpanCounter> spans_;
  uint64_t spanFrom_ = 0;  // where the span being counted starts
  // Index pass: the live series, births and address blocks (LogTables::series); null when the
  // pass does not count them (a log being followed).
  std::unique_ptr<SeriesCounter> series_;
  std::unique_ptr<Pass> pass_;  // the index pass while it has not reached the end of the log
  std::unique_ptr<LogCode> codeAhead_;
  // ReplayOptions::follow: the pass at the end of the chunks written so far, for grow().
  std::unique_ptr<Pass> suspended_;
  std::vector<std::string> indexWhere_;  // where the index file may be written, in that order
  void closeSpan(uint64_t next);
  uint64_t spanBudget() const;
  Stats stats_;
  std::optional<log::FormatError> damage_;
  friend struct ReplayTestAccess;
};

}  // namespace heapman::replay
