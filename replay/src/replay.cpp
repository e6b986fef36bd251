// The replay engine: applying records to the state, the index pass and seeking. Its parts
// elsewhere: the decode pipeline that feeds the appliers (decode_pipeline.h), the AllocInfo
// dictionary (info_dict.h), checkpoints (checkpoint.cpp), points (point.cpp). The index file's
// layout is in docs/DESIGN.md §3.3 and index_file.cpp.
#include "heapman/replay/replay.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <limits>
#include <type_traits>
#include <utility>

#include "churn_spans.h"
#include "decode_pipeline.h"
#include "heapman/logformat/check.h"
#include "index_file.h"
#include "info_dict.h"
#include "serial.h"

namespace heapman::replay {

using namespace heapman::log;

// The live set packs what LogCheck lets through: the log format's limits are the replay's.
static_assert(kMaxSeq == log::kMaxSeq && LiveSet::kAddressLimit == log::kAddressLimit);

const char* deathName(Death d) {
  switch (d) {
    case Death::kFree: return "free";
    case Death::kRealloc: return "realloc";
    case Death::kCollected: return "collected";
    case Death::kReplaced: return "replaced";
  }
  return "?";
}

// ---- LogTables ------------------------------------------------------------------------------

std::vector<uint32_t> LogTables::stackNodes(uint32_t stackId) const {
  std::vector<uint32_t> out;
  uint32_t id = stackId;
  while (id != 0 && id < stacks.size() && out.size() <= stacks.size()) {
    out.push_back(id);
    id = stacks[id].parent;
  }
  return out;
}

const GcRecord* LogTables::gc(uint32_t number) const {
  auto it = std::lower_bound(gcs.begin(), gcs.end(), number,
                             [](const GcRecord& g, uint32_t n) { return g.number < n; });
  if (it != gcs.end() && it->number == number) return &*it;
  for (const GcRecord& g : gcs)  // numbers out of order (should not happen)
    if (g.number == number) return &g;
  return nullptr;
}

std::string LogTables::eventName(uint32_t nameId) const {
  auto it = strings.find(nameId);
  return it != strings.end() ? it->second : "string#" + std::to_string(nameId);
}

std::string LogTables::typeName(uint32_t typeId) const {
  if (typeId == 0) return "";
  auto it = types.find(typeId);
  return it != types.end() ? it->second : "type#" + std::to_string(typeId);
}

// ---- Applying records -------------------------------------------------------------------------

namespace {

template <class T>
concept IsEvent = requires(const T& r) { r.ev.seq; };

}  // namespace

// How far ahead in a collected set the live set's slots are prefetched (as replayBatch does).
constexpr size_t kPrefetchAhead = 16;

template <bool kBuild>
struct Replay::Applier {
  Replay& r;
  uint64_t limit;
  Observer* observer;
  uint64_t skip = 0;     // records of this chunk already applied
  uint64_t visited = 0;  // records of this chunk seen
  uint64_t definitions = 0;  // records applied that are not events (rare: counted apart)
  // Events applied: every record entered past the skipped ones is an event or a definition.
  uint64_t applied() const { return visited - std::min(visited, skip) - definitions; }
  const ChunkRef* chunk = nullptr;  // being decoded (named in errors)
  // Index pass only.
  LogCheck* check = nullptr;  // the log's rules, every record through it
  std::unordered_map<uint32_t, size_t>* gcIndex = nullptr;
  std::unordered_map<uint32_t, uint32_t>* eventCounts = nullptr;
  bool sawEvent = false;
  SpanCounter* spans = nullptr;  // null once the spans outgrew their share
  // A lazy pass looking for a point (Replay::resolve): the record it names sets the limit to
  // just after it. targetSeen: occurrences of the event's name met so far.
  const Point* target = nullptr;
  uint32_t targetSeen = 0;
  bool checkedFirst = false;  // the first record past `skip` went through LogCheck already

  // Returns false when the record was applied before (resume) and must be ignored.
  template <class T>
  [[gnu::always_inline]] bool enter(const T& rec) {
    if (visited < skip) {
      ++visited;
      return false;
    }
    // What `heapman verify` refuses, the index pass refuses: one set of rules (check.h). The
    // event a paused pass stopped at went through them then.
    if constexpr (kBuild) {
      if (checkedFirst)
        checkedFirst = false;
      else
        check->record(rec);
    }
    if constexpr (IsEvent<T>) {
      if constexpr (kBuild) {
            if (!sawEvent && target && target->kind == Point::Kind::kStart) {
          limit = rec.ev.seq;
          r.tables_.firstSeq = rec.ev.seq;
        }
      }
      if (rec.ev.seq >= limit) throw detail::StopDecoding{};
      if constexpr (kBuild) {
        if (!sawEvent) r.tables_.firstSeq = rec.ev.seq;
        sawEvent = true;
        r.tables_.endSeq = rec.ev.seq + 1;
        r.tables_.endTimeNs = std::max(r.tables_.endTimeNs, rec.ev.timeNs);
        ++r.tables_.eventCount;
      }
    } else {
      ++definitions;
    }
    ++visited;
    return true;
  }

  // An allocation or free of this address comes a few records later.
  [[gnu::always_inline]] void prefetch(uint64_t address) const { r.live_.prefetch(address); }

  // An event of an extended kind the decoder does not know: its sequence number counts.
  void skippedEvent(const EventCommon& ev) {
    if constexpr (kBuild) check->event(ev.seq);
  }

  [[gnu::always_inline]] void kill(const LiveObject& o, Death how, uint64_t seq) {
    const uint64_t size = r.tables_.infos[o.info()].size;
    r.counters_.liveBytes -= size;
    if constexpr (kBuild) {
      if (spans) spans->died(o.info(), how, size);
      if (o.birthSeq() < r.cpFloor_ && r.cpDeltaOk_) [[unlikely]] {
        r.cpDeaths_.push_back(o.address);
        if (r.cpDeaths_.size() > r.cpLiveAt_) r.cpDeltaOk_ = false;  // a full one is cheaper
      }
    }
    if (observer) observer->died(o, how, seq);
  }

  // False for address 0 (an allocation that failed: nothing lives). Beyond the live set's
  // limits it throws: the index pass (LogCheck) refuses such a log before a seek can meet one.
  [[gnu::always_inline]] bool bornAt(uint64_t address, uint64_t seq) const {
    if (address - 1 >= LiveSet::kAddressLimit - 1 || seq > kMaxSeq) [[unlikely]]
      return bornAtChecked(address, seq);
    return true;
  }
  [[gnu::noinline, gnu::cold]] bool bornAtChecked(uint64_t address, uint64_t seq) const {
    if (address == 0) return false;
    if (address >= LiveSet::kAddressLimit) LogCheck::badAddress(chunk, address, seq);
    if (seq > kMaxSeq) LogCheck::beyondMaxSeq(chunk, seq);
    return true;
  }

  [[gnu::always_inline]] void place(uint64_t address, uint32_t id, uint64_t size, uint64_t seq) {
    LiveObject o{address, LiveObject::pack(seq, id)}, old;
    if (r.live_.insert(o, &old)) [[unlikely]] {
      ++r.counters_.replacedAllocs;
      kill(old, Death::kReplaced, seq);
    }
    r.counters_.liveBytes += size;
    if constexpr (kBuild) {
      if (spans) spans->born(id, size);
    }
    if (observer) observer->born(o);
  }

  void birth(uint64_t address, const AllocInfo& info, uint64_t seq) {
    if (!bornAt(address, seq)) return;
    place(address, r.dict_->intern(info), info.size, seq);
  }

  void operator()(const Alloc& a) {
    if (!enter(a)) return;
    if constexpr (kBuild) ++r.tables_.allocs;
    birth(a.address, AllocInfo{a.heap, a.ev.thread, a.size, a.actualSize, a.stackId, a.typeId},
          a.ev.seq);
  }
  // The decoder's fast hook: `local` indexes the chunk's dictionary (same ids as operator()).
  [[gnu::always_inline]] void allocLocal(const Alloc& a, uint32_t local) {
    if (!enter(a)) return;
    if constexpr (kBuild) ++r.tables_.allocs;
    if (!bornAt(a.address, a.ev.seq)) return;
    place(a.address, r.dict_->idOf(a, local), a.size, a.ev.seq);
  }
  [[gnu::always_inline]] void operator()(const Free& f) {
    if (!enter(f)) return;
    if constexpr (kBuild) ++r.tables_.frees;
    LiveObject o;
    if (r.live_.erase(f.address, &o))
      kill(o, Death::kFree, f.ev.seq);
    else
      ++r.counters_.unknownFrees;
  }
  void operator()(const Realloc& x) {
    if (!enter(x)) return;
    if constexpr (kBuild) ++r.tables_.reallocs;
    if (x.oldAddress != 0) {
      LiveObject o;
      if (r.live_.erase(x.oldAddress, &o))
        kill(o, Death::kRealloc, x.ev.seq);
      else
        ++r.counters_.unknownFrees;
    }
    birth(x.newAddress, AllocInfo{x.heap, x.ev.thread, x.size, x.actualSize, x.stackId, x.typeId},
          x.ev.seq);
  }
  void operator()(const Collected& c) {
    if (!enter(c)) return;
    auto it = std::find_if(r.pending_.begin(), r.pending_.end(),
                           [&](const auto& p) { return p.first == c.gcNumber; });
    if (it == r.pending_.end()) {
      r.pending_.emplace_back(c.gcNumber, std::vector<uint64_t>());
      it = r.pending_.end() - 1;
    }
    it->second.insert(it->second.end(), c.addresses.begin(), c.addresses.end());
  }
  void operator()(const GcBegin& g) {
    if (!enter(g)) return;
    if constexpr (kBuild) {
      GcRecord rec;
      rec.number = g.gcNumber;
      rec.generation = g.generation;
      rec.beginSeq = g.ev.seq;
      rec.beginTimeNs = g.ev.timeNs;
      rec.heapSizeBefore = g.heapSize;
      (*gcIndex)[g.gcNumber] = r.tables_.gcs.size();
      r.tables_.gcs.push_back(rec);
    }
  }
  void operator()(const GcEnd& g) {
    if (!enter(g)) return;
    uint64_t objects = 0, bytes = 0, unknown = 0;
    auto it = std::find_if(r.pending_.begin(), r.pending_.end(),
                           [&](const auto& p) { return p.first == g.gcNumber; });
    if (it != r.pending_.end()) {
      const std::vector<uint64_t>& set = it->second;
      for (size_t k = 0; k < set.size(); ++k) {
        if (k + kPrefetchAhead < set.size()) r.live_.prefetch(set[k + kPrefetchAhead]);
        uint64_t a = set[k];
        LiveObject o;
        if (r.live_.erase(a, &o)) {
          ++objects;
          bytes += r.tables_.infos[o.info()].size;
          kill(o, Death::kCollected, g.ev.seq);
        } else {
          ++unknown;
        }
      }
      r.pending_.erase(it);
    }
    r.counters_.unknownCollected += unknown;
    ++r.counters_.gcEnds;
    if constexpr (kBuild) {
      auto gi = gcIndex->find(g.gcNumber);
      if (gi == gcIndex->end()) {  // a GcEnd without its GcBegin (log starts mid-GC)
        GcRecord rec;
        rec.number = g.gcNumber;
        rec.beginSeq = g.ev.seq;
        rec.beginTimeNs = g.ev.timeNs;
        gi = gcIndex->emplace(g.gcNumber, r.tables_.gcs.size()).first;
        r.tables_.gcs.push_back(rec);
      }
      GcRecord& rec = r.tables_.gcs[gi->second];
      rec.ended = true;
      rec.endSeq = g.ev.seq;
      rec.endTimeNs = g.ev.timeNs;
      rec.heapSizeAfter = g.heapSize;
      rec.freeBytes = g.freeBytes;
      rec.pauseNs = g.pauseNs;
      rec.collectedObjects = objects;
      rec.collectedBytes = bytes;
      rec.unknownCollected = unknown;
      rec.liveObjects = r.live_.size();
      rec.liveBytes = r.counters_.liveBytes;
      r.gcEndSeqs_.push_back(g.ev.seq);
      if (target && target->kind == Point::Kind::kGc && target->number == g.gcNumber)
        limit = g.ev.seq + 1;
    }
  }
  void operator()(const Lost& l) {
    if (!enter(l)) return;
    r.counters_.lostEvents += l.count;
    if constexpr (kBuild) {
      r.tables_.lost.push_back({l.ev.seq, l.count, l.lostThread, l.reason});
      r.tables_.lostEvents += l.count;
    }
  }
  void operator()(const CustomEvent& e) {
    if (!enter(e)) return;
    if constexpr (kBuild) {
      uint32_t k = ++(*eventCounts)[e.nameId];
      r.tables_.events.push_back({e.nameId, k, e.ev.seq, e.ev.timeNs, e.ev.thread,
                                  static_cast<uint32_t>(e.payload.size())});
      if (target && target->kind == Point::Kind::kEvent &&
          r.tables_.eventName(e.nameId) == target->name && ++targetSeen == target->number)
        limit = e.ev.seq + 1;
    }
  }
  void operator()(const FrameMark& f) {
    if (!enter(f)) return;
    if constexpr (kBuild) {
      r.tables_.frames.push_back({f.frame, f.ev.seq, f.ev.timeNs});
      if (target && target->kind == Point::Kind::kFrame && target->number == f.frame)
        limit = f.ev.seq + 1;
    }
  }
  void operator()(const StackNode& n) {
    if (!enter(n)) return;
    if constexpr (kBuild) {
      // LogCheck has bounded the id by the nodes defined before it: the table stays that size.
      auto& s = r.tables_.stacks;
      if (n.id >= s.size()) s.resize(std::max<size_t>(n.id + 1, s.size() + s.size() / 2));
      s[n.id] = {n.parent, n.managed, true, n.frame};
    }
  }
  void operator()(const LogString& x) {
    if (!enter(x)) return;
    if constexpr (kBuild) r.tables_.strings[x.id] = x.text;
  }
  void operator()(const TypeDef& x) {
    if (!enter(x)) return;
    if constexpr (kBuild) r.tables_.types[x.id] = x.name;
  }
  void operator()(const MethodDef& x) {
    if (!enter(x)) return;
    if constexpr (kBuild) r.tables_.methods[x.id] = x.name;
  }
  void operator()(const ModuleLoad& x) {
    if (!enter(x)) return;
    if constexpr (kBuild) r.tables_.modules.push_back(x);
  }
  void operator()(const ThreadStart& x) {
    if (!enter(x)) return;
    if constexpr (kBuild) r.tables_.threads.push_back(x);
  }
  void operator()(const JitRange& x) {
    if (!enter(x)) return;
    if constexpr (kBuild) r.tables_.jitRanges.push_back(x);
  }
  template <class T>
  void operator()(const T& x) {
    enter(x);
  }
};

// The index pass between runPass() calls: where it stopped (a chunk begun and paused in it when
// a limit or target stopped it) and what it carries from chunk to chunk.
struct Replay::Pass {
  explicit Pass(const LogReader& reader) : check(reader) {}
  LogCheck check;  // every record through the log's rules, once
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

// ---- Construction -----------------------------------------------------------------------------

Replay::Replay(const std::string& logPath, ReplayOptions options)
    : reader_(LogReader::open(logPath, options.intactPrefix ? ReadMode::kIntactPrefix
                                                            : ReadMode::kStrict)),
      options_(std::move(options)) {
  if (options_.useIndex && options_.indexPath.empty()) options_.indexPath = logPath + ".hmx";
  init();
}

Replay::Replay(LogReader reader, ReplayOptions options)
    : reader_(std::move(reader)), options_(std::move(options)) {
  init();
}

Replay::~Replay() = default;

namespace {
std::atomic<uint64_t> gSerials{0};
}  // namespace

void Replay::init() {
  serial_ = ++gSerials;
  // A log being written has no index file: each growth would make it stale.
  if (options_.follow && !reader_.end().complete) {
    options_.useIndex = false;
    options_.indexPath.clear();
  }
  dict_ = std::make_unique<InfoDict>(tables_.infos);
  listRecordChunks();
  auto t0 = std::chrono::steady_clock::now();
  bool loaded = false;
  std::vector<std::string> refused;  // paths holding a FIFO, a directory...: never opened again
  // The scan stopped at a corrupt chunk header (ReadMode::kIntactPrefix): no index, neither read
  // nor written, so that every open says the log is damaged.
  if (reader_.end().corruption) damage_ = reader_.end().corruption;
  if (options_.useIndex && !options_.indexPath.empty() && !damage_) {
    std::string why;
    for (const std::string& path : indexCandidates(options_.indexPath, reader_.name())) {
      std::string whyHere;
      if (loadIndexFile(path, &whyHere)) {
        loaded = true;
        status_.path = path;
        break;
      }
      if (whyHere.rfind(kNotRegular, 0) == 0) {
        refused.push_back(path);
        if (options_.notes) std::fprintf(options_.notes, "heapman: index %s: %s\n", path.c_str(),
                                         whyHere.c_str());
        continue;
      }
      if (whyHere != "missing") why = path + ": " + whyHere;
    }
    status_.why = why.empty() ? "missing" : why;
    if (!loaded && !why.empty() && options_.notes)
      std::fprintf(options_.notes, "heapman: index %s; rebuilding\n", why.c_str());
  }
  if (!loaded) {
    index_ = std::make_unique<Index>();
    indexWhere_.clear();
    if (options_.useIndex && !options_.indexPath.empty() && !damage_)
      for (const std::string& path : indexCandidates(options_.indexPath, reader_.name()))
        if (std::find(refused.begin(), refused.end(), path) == refused.end())
          indexWhere_.push_back(path);
    if (lazyAllowed() && readCodeAhead()) {
      // Checkpoints stay in memory (seeks read them while the pass is paused) until the index
      // is written at the pass's end.
      beginPass();
      pass_->lazy = true;
      status_.seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      return;
    }
    for (const std::string& path : indexWhere_)
      if (index_->openSpill(path)) break;
    try {
      beginPass();
      runPass(std::numeric_limits<uint64_t>::max(), nullptr, nullptr);
    } catch (const FormatError& e) {
      endAtDamage(e);  // no index for a damaged log
      index_ = std::make_unique<Index>();  // drops the spill file
      indexWhere_.clear();
      status_.why = "not written: the log is damaged";
      beginPass();
      runPass(std::numeric_limits<uint64_t>::max(), nullptr, nullptr);
    }
    writeIndex();
  }
  status_.checkpoints = index_ ? index_->checkpoints.size() : 0;
  status_.fileBytes = index_ ? index_->fileBytes : 0;
  status_.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  gcEndSeqs_.clear();
  for (const GcRecord& g : tables_.gcs)
    if (g.ended) gcEndSeqs_.push_back(g.endSeq);
  std::sort(gcEndSeqs_.begin(), gcEndSeqs_.end());
  dict_->rebuildFromInfos();
  resetState();
}

void Replay::listRecordChunks() {
  recordChunks_.clear();
  for (const ChunkRef& c : reader_.chunks())
    if (c.header.type == static_cast<uint16_t>(ChunkType::kRecords)) recordChunks_.push_back(c);
}

// Damage the scan could not see, met by the index pass: a payload that fails (checksum,
// decompression, records), or records that break the log's rules (LogCheck: a chunk missing,
// repeated or out of order, an impossible address or stack id). With intactPrefix the log ends
// before that chunk for every reader of it (the graph's RAM dumps too) and the pass is to run
// again over the chunks before it; otherwise, or for an error that names no chunk, rethrows.
void Replay::endAtDamage(const FormatError& e) {
  if (!options_.intactPrefix || e.chunk() < 0 ||
      static_cast<uint64_t>(e.chunk()) >= reader_.chunks().size())
    throw;
  damage_ = e;
  reader_.endBefore(e);
  listRecordChunks();
}

// A prefix of the log answers as the whole log would only when nothing after it changes what
// came before: see ReplayOptions::lazy.
bool Replay::lazyAllowed() const {
  // A stale or damaged index file is rebuilt now, as the note on stderr says.
  if (!options_.lazy || damage_ || !reader_.end().complete || status_.why != "missing")
    return false;
  const auto& footer = reader_.index();
  if (!footer || !footer->complete || footer->lostEvents) return false;
  // Without the footer's code marks, a JitRange recorded later may rename an earlier frame.
  if (!footer->codeMarked)
    for (const Runtime& rt : reader_.header().runtimes)
      if (rt.kind == Runtime::Kind::kMono) return false;
  for (const ChunkRef& c : reader_.chunks())
    if (c.header.type == static_cast<uint16_t>(ChunkType::kRamDump)) return false;
  // A damaged payload is found here, as the whole pass would find it (then it does).
  for (const ChunkRef& c : recordChunks_)
    if (!reader_.payloadIntact(c)) return false;
  return true;
}

namespace {
// The records a FrameNamer depends on, from one chunk (Replay::readCodeAhead).
struct CodeCollector {
  LogCode& code;
  size_t found = 0;
  void operator()(const ModuleLoad& x) {
    code.modules.push_back(x);
    ++found;
  }
  void operator()(const JitRange& x) {
    code.jitRanges.push_back(x);
    ++found;
  }
  void operator()(const MethodDef& x) {
    code.methods[x.id] = x.name;
    ++found;
  }
  template <class T>
  void operator()(const T&) {}
};
}  // namespace

// A lazy open of a log whose footer marks the chunks that name code: their ModuleLoad, JitRange
// and MethodDef records, the whole log's, read before the pass starts (nothing is applied, no
// LogCheck order is kept: the pass checks every chunk when it reaches it). False when a marked
// chunk does not decode or holds none of them: the log is then indexed on open, whose pass
// reports the damage as it would without a lazy open. An unmarked log reads nothing (true).
bool Replay::readCodeAhead() {
  const std::optional<IndexData>& footer = reader_.index();
  if (!footer || !footer->codeMarked) return true;
  auto code = std::make_unique<LogCode>();
  auto model = std::make_unique<ChunkModel>();
  std::vector<uint8_t> buffer;
  try {
    for (const ChunkRef& c : recordChunks_) {
      if (c.number >= footer->chunks.size() || !footer->chunks[c.number].namesCode) continue;
      CodeCollector v{*code};
      decodeRecords(reader_.payload(c, buffer), c.header.firstSeq, v, c.offset, c.number,
                    model.get());
      if (!v.found) return false;
    }
  } catch (const FormatError&) {
    return false;
  }
  codeAhead_ = std::move(code);
  return true;
}

// The RAM dumps' first copies, then the index file where one may be written.
void Replay::writeIndex() {
  // An eighth of the index's byte share at most (checkpoints take three quarters of it, the
  // tables and directory the rest), 4 KiB for a small log.
  if (!damage_)
    indexDumpCopies(reader_, tables_,
                    std::max<uint64_t>(reader_.bytes().size() /
                                           std::max<uint64_t>(options_.indexShare, 1) / 8,
                                       4096));
  status_.built = true;
  if (indexWhere_.empty()) return;
  std::string err;
  for (const std::string& path : indexWhere_) {
    if (index_->spillFd >= 0 && path != index_->spillTarget) continue;
    if (writeIndexFile(path, &err)) {
      status_.path = path;
      break;
    }
  }
  if (status_.path.empty() && options_.notes)
    std::fprintf(options_.notes, "heapman: cannot write an index (%s); seeks replay from memory\n",
                 err.c_str());
}

void Replay::resetState() {
  live_.clear();
  counters_ = {};
  pending_.clear();
  position_ = 0;
  chunk_ = 0;
  consumed_ = 0;
}

// The index pass: every record once, tables and definitions gathered, checkpoints taken at chunk
// boundaries every options_.checkpointEvents events. beginPass() starts it from a fresh state.
void Replay::beginPass() {
  tables_ = LogTables{};
  tables_.stacks.resize(1);
  tables_.stacks[0].defined = true;
  dict_ = std::make_unique<InfoDict>(tables_.infos);
  gcEndSeqs_.clear();
  resetState();
  if (!index_) index_ = std::make_unique<Index>();
  index_->checkpoints.clear();
  index_->memory.clear();
  bool lazy = pass_ && pass_->lazy;
  pass_ = std::make_unique<Pass>(reader_);
  pass_->lazy = lazy;
  cpFloor_ = 0;
  cpDeaths_.clear();
  cpDeltaOk_ = false;
  cpChainEntries_ = 0;
  cpSpent_ = 0;
  cpBytesPerEntry_ = 2.0;
  cpMeasured_ = false;
  // A log being written: a span could not end where the chunks so far do (endPass).
  if (!options_.follow || reader_.end().complete)
    spans_ = std::make_unique<SpanCounter>();
  else
    spans_.reset();
  suspended_.reset();
  spanFrom_ = 0;
}

// Carries the pass on from where it stopped, the state with it (the state must be at the pass's
// position: seek() and resolve() bring it there). It stops at the first event at or past
// `limit`, or past the record `target` names, or at the end of the log (then endPass()).
void Replay::runPass(uint64_t limit, const Point* target, Observer* observer) {
  Pass& p = *pass_;
  uint32_t seen = 0;
  if (target && target->kind == Point::Kind::kEvent)
    for (const EventRecord& e : tables_.events) seen += tables_.eventName(e.nameId) == target->name;
  const uint64_t wanted = limit;  // read by the decoding thread: never written while it runs
  bool stoppedAt = false;
  try {
    forEachChunk(
        p.chunk,
        [&](size_t k) {
          if (!p.inChunk) {
            p.check.beginRecords(recordChunks_[k]);
            if (p.sinceCheckpoint >= options_.checkpointEvents && k > 0) {
              const size_t before = index_->checkpoints.size();
              maybeCheckpoint(k, p.sinceCheckpoint);
              if (index_->checkpoints.size() > before)
                closeSpan(index_->checkpoints.back().position);
            }
            p.inChunk = true;
          }
          dict_->newChunk();
          Applier<true> a{*this, limit, observer};
          a.chunk = &recordChunks_[k];
          a.skip = k == p.chunk ? p.consumed : 0;
          a.check = &p.check;
          a.gcIndex = &p.gcIndex;
          a.eventCounts = &p.eventCounts;
          a.sawEvent = p.sawEvent;
          a.spans = spans_.get();
          a.target = target;
          a.targetSeen = seen;
          a.checkedFirst = k == p.chunk && p.checkedNext;
          return a;
        },
        [&](size_t k, Applier<true>& a, bool stopped) {
          p.sawEvent = a.sawEvent;
          seen = a.targetSeen;
          limit = a.limit;  // a target met at the end of this chunk stops at the next event
          p.sinceCheckpoint += a.applied();
          stats_.eventsApplied += a.applied();
          ++stats_.chunksDecoded;
          p.checkedNext = false;
          if (stopped) {
            p.chunk = k;
            p.consumed = a.visited;
            p.checkedNext = true;  // the record it stopped at
            stoppedAt = true;
            return false;
          }
          p.check.endRecords();
          p.inChunk = false;
          p.chunk = k + 1;
          p.consumed = 0;
          if (options_.progress) options_.progress(k + 1, recordChunks_.size());
          return true;
        },
        [&](size_t k) { return recordChunks_[k].header.firstSeq <= wanted; });
  } catch (...) {
    p.broken = true;  // records of the chunk it was in are in the tables, its cursor is not
    throw;
  }
  position_ = limit;
  if (stoppedAt) {
    p.position = limit;
    chunk_ = p.chunk;
    consumed_ = p.consumed;
    return;
  }
  chunk_ = recordChunks_.size();
  consumed_ = 0;
  endPass();
}

// The end of the log: the last checks and span, the GCs in number order; a lazy pass writes the
// index now.
void Replay::endPass() {
  // A log being written ends here for now: the pass is kept for grow(), with what it carries to
  // the next chunk (its checks of the end, the delta checkpoints' base), for the end that counts.
  const bool suspend = options_.follow && !reader_.end().complete && !damage_;
  if (!suspend) pass_->check.finish();
  closeSpan(0);
  // Kept while they take at most their share of the index once compressed, as they are stored.
  if (spans_ && options_.indexShare) {
    detail::Out o;
    writeChurnSpans(o, tables_.churnSpans);
    if (detail::lz4Compress(o.data()).size() > spanBudget()) spans_.reset();
  }
  tables_.churnSpansIndexed = spans_ != nullptr;
  if (!spans_) std::vector<ChurnSpan>().swap(tables_.churnSpans);
  spans_.reset();
  if (!pass_->sawEvent) tables_.firstSeq = tables_.endSeq = 0;
  if (!suspend) {
    cpFloor_ = 0;
    cpDeltaOk_ = false;
    std::vector<uint64_t>().swap(cpDeaths_);
  }
  std::stable_sort(tables_.gcs.begin(), tables_.gcs.end(),
                   [](const GcRecord& a, const GcRecord& b) { return a.number < b.number; });
  const bool lazy = pass_->lazy;
  if (suspend)
    suspended_ = std::move(pass_);
  else
    pass_.reset();
  if (!lazy) return;
  auto t0 = std::chrono::steady_clock::now();
  writeIndex();
  status_.checkpoints = index_->checkpoints.size();
  status_.fileBytes = index_->fileBytes;
  status_.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  gcEndSeqs_.clear();
  for (const GcRecord& g : tables_.gcs)
    if (g.ended) gcEndSeqs_.push_back(g.endSeq);
  std::sort(gcEndSeqs_.begin(), gcEndSeqs_.end());
}

// Brings the state to where the paused pass stopped (an interrupted pass starts again).
void Replay::toPass(Observer* observer) {
  if (pass_->broken) beginPass();
  if (observer) {
    if (position_ < pass_->position) runForward(pass_->position, observer);
  } else if (position_ != pass_->position || chunk_ != pass_->chunk ||
             consumed_ != pass_->consumed) {
    seekUnchecked(pass_->position, nullptr);
  }
}

uint64_t Replay::resolve(const Point& p) {
  if (pass_) {
    // A lazy pass paused: a point it has passed resolves from the tables so far; otherwise the
    // pass goes on until it meets the point, or to the end (then the whole log's tables answer,
    // or name the valid range).
    if (p.kind == Point::Kind::kEnd) completeIndex();
    if (pass_ && !pass_->sawEvent && !pass_->startKnown) {
      toPass(nullptr);
      const Point start{Point::Kind::kStart};
      runPass(std::numeric_limits<uint64_t>::max(), &start, nullptr);
      if (pass_) pass_->startKnown = true;
    }
    if (pass_ && p.kind == Point::Kind::kStart) return tables_.firstSeq;
    if (pass_ && p.kind == Point::Kind::kSeq) {
      // The footer knows where the events end; LogCheck has held the pass to it so far.
      if (p.number >= tables_.firstSeq && p.number < reader_.index()->endSeq) return p.number + 1;
      completeIndex();
    }
    if (pass_) {
      try {
        return resolveKnown(p);
      } catch (const ReplayError&) {
      }
      toPass(nullptr);
      runPass(std::numeric_limits<uint64_t>::max(), &p, nullptr);
      if (pass_) return pass_->position;
    }
  }
  return resolveKnown(p);
}

void Replay::completeIndex() {
  if (!pass_) return;
  seek(std::numeric_limits<uint64_t>::max());
}

// The churn spans may take an eighth of the index's share of the log (at least 64 KiB), LZ4'd;
// past that churn replays its range.
log::LogReader::Growth Replay::grow() {
  using Growth = LogReader::Growth;
  if (!suspended_) return Growth::kNone;
  const size_t hadChunks = reader_.chunks().size();
  Growth g;
  try {
    g = reader_.grow();
  } catch (const FormatError& e) {
    damage_ = e;  // the reader's chunks end before it
    g = Growth::kGrew;
  }
  if (g != Growth::kGrew) return g;
  // The state where the pass stopped (the end of the chunks so far), before the list grows.
  seek(std::numeric_limits<uint64_t>::max());
  const size_t hadRecords = recordChunks_.size();
  bool newDumps = false;
  for (size_t i = hadChunks; i < reader_.chunks().size(); ++i) {
    const ChunkRef& c = reader_.chunks()[i];
    if (c.header.type == static_cast<uint16_t>(ChunkType::kRecords)) recordChunks_.push_back(c);
    newDumps |= c.header.type == static_cast<uint16_t>(ChunkType::kRamDump);
  }
  pass_ = std::move(suspended_);
  pass_->chunk = hadRecords;
  // endPass() put the GCs in number order.
  pass_->gcIndex.clear();
  for (size_t i = 0; i < tables_.gcs.size(); ++i) pass_->gcIndex[tables_.gcs[i].number] = i;
  if (newDumps) {  // the dumps' first copies are found again by their reader
    tables_.dumpCopies.clear();
    tables_.dumpCopiesIndexed = false;
  }
  const std::atomic<bool>* cancel = options_.cancel;
  options_.cancel = nullptr;  // what was appended only: a quarter of a second of the program
  try {
    try {
      runPass(std::numeric_limits<uint64_t>::max(), nullptr, nullptr);
    } catch (const FormatError& e) {
      endAtDamage(e);  // as on open; the tables hold part of the damaged chunk: afresh
      beginPass();
      runPass(std::numeric_limits<uint64_t>::max(), nullptr, nullptr);
    }
  } catch (...) {
    options_.cancel = cancel;
    throw;
  }
  options_.cancel = cancel;
  live_.shrinkToFit();
  status_.checkpoints = index_->checkpoints.size();
  serial_ = ++gSerials;
  return Growth::kGrew;
}

uint64_t Replay::spanBudget() const {
  return std::max<uint64_t>(reader_.bytes().size() / std::max<uint64_t>(options_.indexShare, 1) / 8,
                            64 * 1024);
}

// Ends the span being counted where the checkpoint at `next` starts the next one. While the pass
// runs, counting stops once the spans hold more entries (an info in a span) than their budget
// has bytes (LZ4 brings an entry to 1.5 bytes on a guile log: the end of the pass checks the
// compressed size itself).
void Replay::closeSpan(uint64_t next) {
  if (!spans_) return;
  tables_.churnSpans.push_back(spans_->take(spanFrom_));
  spanFrom_ = next;
  if (options_.indexShare && spans_->entries() > spanBudget()) {
    spans_.reset();
    std::vector<ChurnSpan>().swap(tables_.churnSpans);
  }
}

uint32_t Replay::epochOf(uint64_t birthSeq) const {
  return static_cast<uint32_t>(std::upper_bound(gcEndSeqs_.begin(), gcEndSeqs_.end(), birthSeq) -
                               gcEndSeqs_.begin());
}

// ---- Seeking ----------------------------------------------------------------------------------

void Replay::runForward(uint64_t limit, Observer* observer) {
  uint64_t startChunk = chunk_;
  forEachChunk(
      chunk_,
      [&](size_t k) {
        dict_->newChunk();
        Applier<false> a{*this, limit, observer};
        a.chunk = &recordChunks_[k];
        a.skip = k == chunk_ ? consumed_ : 0;
        return a;
      },
      [&](size_t k, Applier<false>& a, bool stopped) {
        stats_.eventsApplied += a.applied();
        ++stats_.chunksDecoded;
        if (stopped) {
          chunk_ = k;
          consumed_ = a.visited;
          return false;
        }
        chunk_ = k + 1;
        consumed_ = 0;
        if (options_.progress && recordChunks_.size() > 64)
          options_.progress(chunk_ - startChunk, recordChunks_.size() - startChunk);
        return true;
      },
      // A chunk is needed when the one before it ends below the limit.
      [&](size_t k) { return recordChunks_[k].header.firstSeq <= limit; });
  position_ = limit;
}

void Replay::checkCancel() const {
  if (options_.cancel && options_.cancel->load(std::memory_order_relaxed)) [[unlikely]]
    throw Interrupted();
}

void Replay::seek(uint64_t limit, Observer* observer) {
  try {
    seekUnchecked(limit, observer);
  } catch (const Interrupted&) {
    resetState();  // stopped between chunks, position_ not updated: start afresh next time
    throw;
  }
}

void Replay::seekUnchecked(uint64_t limit, Observer* observer) {
  // Past a paused lazy pass: the pass takes the state on from where it stopped (the state there
  // first; it is never ahead of the pass).
  if (pass_ && limit > pass_->position) {
    toPass(observer);
    runPass(limit, nullptr, observer);
    live_.shrinkToFit();
    return;
  }
  if (observer) {
    if (limit < position_)
      throw ReplayError("cannot observe a backward seek (from " + describe(position_) + " to " +
                        describe(limit) + ")");
    reserveUpTo(limit);
    runForward(limit, observer);
    live_.shrinkToFit();
    return;
  }
  // The last checkpoint at or before the limit.
  static const std::vector<Index::CheckpointRef> kNone;
  const auto& cps = index_ ? index_->checkpoints : kNone;
  auto it = std::upper_bound(cps.begin(), cps.end(), limit,
                             [](uint64_t l, const Index::CheckpointRef& c) { return l < c.position; });
  bool haveCp = it != cps.begin();
  const Index::CheckpointRef* cp = haveCp ? &*(it - 1) : nullptr;
  // A kept state at or before the limit, when it is nearer than the checkpoint (and, forward,
  // ahead of the state).
  auto k = std::upper_bound(kept_.begin(), kept_.end(), limit,
                            [](uint64_t l, const KeptState& s) { return l < s.position; });
  if (k != kept_.begin() && (!cp || (k - 1)->position >= cp->position) &&
      (limit < position_ || (k - 1)->position > position_)) {
    const KeptState& s = *(k - 1);
    live_ = s.live;
    counters_ = s.counters;
    pending_ = s.pending;
    position_ = s.position;
    chunk_ = s.chunk;
    consumed_ = s.consumed;
  } else if (limit >= position_) {
    // Forward: jump only when the checkpoint is ahead by more events than it holds objects.
    if (cp && cp->position > position_ && cp->position - position_ > cp->liveObjects)
      loadCheckpoint(static_cast<size_t>(cp - cps.data()));
  } else if (cp) {
    loadCheckpoint(static_cast<size_t>(cp - cps.data()));
  } else {
    resetState();
  }
  reserveUpTo(limit);
  runForward(limit, nullptr);
  live_.shrinkToFit();
}

// The live set will hold at least as many objects as any collection on the way found (those it
// left alive and those it collected): room for the most of them (at a load of 0.65) at once,
// rather than growing in 5/4 steps that each re-insert every live object (a fifth of a
// 1 M-event seek from the start of a guile log).
void Replay::reserveUpTo(uint64_t limit) {
  uint64_t most = 0;
  for (const GcRecord& g : tables_.gcs)
    if (g.ended && g.endSeq >= position_ && g.endSeq < limit)
      most = std::max(most, g.liveObjects + g.collectedObjects);
  if (most > live_.size()) live_.reserve(static_cast<size_t>(most + most / 4));
}

bool Replay::keepState() {
  if (pass_ || suspended_ || keptBytes_ + live_.memoryBytes() > kKeptBytes) return false;
  auto at = std::lower_bound(kept_.begin(), kept_.end(), position_,
                             [](const KeptState& s, uint64_t p) { return s.position < p; });
  if (at != kept_.end() && at->position == position_) return true;
  keptBytes_ += live_.memoryBytes();
  kept_.insert(at, KeptState{position_, chunk_, consumed_, live_, counters_, pending_});
  return true;
}

void Replay::replayFromStart(uint64_t limit) {
  if (pass_ && limit > pass_->position) completeIndex();  // the infos past it are not known yet
  resetState();
  reserveUpTo(limit);
  runForward(limit, nullptr);
  live_.shrinkToFit();
}

}  // namespace heapman::replay
