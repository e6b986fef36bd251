// The replay engine's construction and index pass: every record once (Replay::Applier<true>,
// applier.h), tables and checkpoints gathered, the lazy open that stops the pass at a point and
// carries it on later, the index file written, the log's growth followed, the churn spans
// counted. Seeking with the state it leaves is in seek.cpp. The index file's layout is in
// docs/DESIGN.md §3.3 and index_file.cpp.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <limits>
#include <type_traits>
#include <utility>

#include "applier.h"
#include "churn_spans.h"
#include "decode_pipeline.h"
#include "heapman/logformat/check.h"
#include "heapman/replay/replay.h"
#include "index_file.h"
#include "index_pass.h"
#include "info_dict.h"
#include "serial.h"

namespace heapman::replay {

using namespace heapman::log;

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

void Replay::resetState(bool keepCapacity) {
  if (keepCapacity)
    live_.clearKeepingCapacity();
  else
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
  if (!options_.follow || reader_.end().complete) {
    spans_ = std::make_unique<SpanCounter>();
    series_ = std::make_unique<SeriesCounter>(options_.seriesPoints);
  } else {
    spans_.reset();
    series_.reset();
  }
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
          a.series = series_.get();
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
  if (series_ && !suspend) series_->finish(tables_.endSeq, tables_);
  series_.reset();
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

}  // namespace heapman::replay
