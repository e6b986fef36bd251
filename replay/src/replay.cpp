// The replay engine: applying records to the state, the index pass, checkpoints and seeking.
// The index file's layout is in docs/DESIGN.md §3.3 and index_file.cpp.
#include "heapman/replay/replay.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <limits>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>
#include <type_traits>

#include "heapman/logformat/check.h"
#include "index_file.h"
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

// ---- AllocInfo dictionary -------------------------------------------------------------------

class Replay::InfoDict {
 public:
  explicit InfoDict(std::vector<AllocInfo>& infos) : infos_(infos) { rehash(1024); }

  void rebuildFromInfos() {
    size_t cap = 1024;
    while (cap < infos_.size() * 2) cap *= 2;
    rehash(cap);
  }

  // The chunk being applied starts: forget the chunk-local indices of the one before.
  void newChunk() {
    for (auto& t : local_) t.second.clear();
  }

  // The id of an allocation's AllocInfo, given its index in the chunk's dictionary
  // (log::AllocLocalVisitor): an array lookup per (thread, chunk-local index) after the first
  // allocation, which interns. Ids come out exactly as intern() would give them.
  [[gnu::always_inline]] uint32_t idOf(const Alloc& a, uint32_t local) {
    if (a.ev.thread == thread_) [[likely]] {
      const std::vector<uint32_t>& ids = local_[cur_].second;
      if (local < ids.size()) [[likely]] {
        uint32_t id = ids[local];
        if (id != kUnset) [[likely]]
          return id;
      }
    }
    return idOfFirst(a, local);
  }
  // idOf() for the first allocation of a (thread, chunk-local index), or of another thread.
  [[gnu::noinline]] uint32_t idOfFirst(const Alloc& a, uint32_t local) {
    if (a.ev.thread != thread_) selectThread(a.ev.thread);
    std::vector<uint32_t>& ids = local_[cur_].second;
    if (local < ids.size()) {
      uint32_t id = ids[local];
      if (id != kUnset) return id;
    } else {
      ids.resize(local + size_t{1}, kUnset);
    }
    uint32_t id = intern(AllocInfo{a.heap, a.ev.thread, a.size, a.actualSize, a.stackId, a.typeId});
    ids[local] = id;
    return id;
  }

  uint32_t intern(const AllocInfo& a) {
    uint64_t h = hash(a);
    size_t mask = table_.size() - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
      uint32_t v = table_[i];
      if (v == 0) break;
      if (infos_[v - 1] == a) return v - 1;
    }
    if (infos_.size() >= kMaxInfos)
      throw DataError("the log has more than " + std::to_string(kMaxInfos) +
                      " distinct (heap, size, stack, type, thread) combinations, more than this "
                      "heapman can replay (a corrupt log? `heapman verify LOG` checks it)");
    infos_.push_back(a);
    if (infos_.size() * 2 > table_.size()) {
      rehash(table_.size() * 2);
    } else {
      place(h, static_cast<uint32_t>(infos_.size()));
    }
    return static_cast<uint32_t>(infos_.size() - 1);
  }

 private:
  static uint64_t hash(const AllocInfo& a) {
    uint64_t h = a.size * 0x9E3779B97F4A7C15ull;
    h ^= (a.actualSize - a.size) + (uint64_t{a.stackId} << 20) + 0x632BE59BD9B4E019ull;
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= uint64_t{a.typeId} << 32 | (uint64_t{a.thread} << 3) | static_cast<uint64_t>(a.heap);
    h *= 0x94D049BB133111EBull;
    return h ^ (h >> 31);
  }
  void place(uint64_t h, uint32_t v) {
    size_t mask = table_.size() - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask)
      if (table_[i] == 0) {
        table_[i] = v;
        return;
      }
  }
  void rehash(size_t cap) {
    table_.assign(cap, 0);
    for (size_t i = 0; i < infos_.size(); ++i) place(hash(infos_[i]), static_cast<uint32_t>(i + 1));
  }

  void selectThread(uint32_t thread) {
    auto [it, added] = threadSlot_.try_emplace(thread, local_.size());
    if (added) local_.emplace_back(thread, std::vector<uint32_t>());
    thread_ = thread;
    cur_ = it->second;
  }

  static constexpr uint32_t kUnset = 0xFFFFFFFF;
  std::vector<AllocInfo>& infos_;
  std::vector<uint32_t> table_;  // id + 1; 0 empty
  // Per thread: chunk-local dictionary index -> id (kUnset: not seen in this chunk yet).
  std::vector<std::pair<uint32_t, std::vector<uint32_t>>> local_{{0u, {}}};
  std::unordered_map<uint32_t, size_t> threadSlot_{{0u, 0}};
  uint32_t thread_ = 0;  // the thread of local_[cur_]
  size_t cur_ = 0;
};

// ---- Applying records -------------------------------------------------------------------------

namespace {

// Thrown by the visitor at the first event at or past the limit: ends decoding of the chunk.
struct StopDecoding {};

template <class T>
concept IsEvent = requires(const T& r) { r.ev.seq; };

// One decoded chunk, as compact operations: allocs, frees and reallocs inline, every other record
// kept aside. Lets chunk k+1 decode on a second thread while chunk k is applied.
struct Op {
  uint8_t kind;  // kOpAlloc, kOpFree, kOpRealloc, kOpOther (a = index into Batch::others)
  uint8_t heap;
  uint32_t thread;
  uint32_t stackId, typeId;
  uint64_t seq, time;
  uint64_t a, b, size, actual;
};
static_assert(sizeof(Op) == 64);
// kOpSkipped: an event of an extended kind the decoder does not know (seq only).
constexpr uint8_t kOpAlloc = 0, kOpFree = 1, kOpRealloc = 2, kOpOther = 3, kOpSkipped = 4;

// A block of decoded operations; blocks of one chunk arrive in order, the last with chunkEnd.
struct Batch {
  std::vector<Op> ops;
  std::vector<Record> others;
  size_t chunk = 0;
  bool chunkEnd = false;
  std::exception_ptr error;  // decoding failed here (the last block)
  void clear() {
    ops.clear();
    others.clear();
    chunkEnd = false;
    error = nullptr;
  }
};

struct Cancelled {};

// The hand-over between the decoding thread and the applying one: a few blocks of a few thousand
// operations (about 1 MiB in all, so they stay in cache), passed under a mutex per block.
class BlockPipe {
 public:
  static constexpr size_t kBlockOps = 2048;
  static constexpr size_t kBlocks = 8;
  BlockPipe() {
    for (size_t i = 0; i < kBlocks; ++i) {
      free_.push_back(std::make_unique<Batch>());
      free_.back()->ops.reserve(kBlockOps);
    }
  }
  // Producer side. Throws Cancelled when the consumer has stopped.
  std::unique_ptr<Batch> take() {
    std::unique_lock<std::mutex> l(m_);
    cv_.wait(l, [&] { return cancel_ || !free_.empty(); });
    if (cancel_) throw Cancelled{};
    auto b = std::move(free_.back());
    free_.pop_back();
    b->clear();
    return b;
  }
  void put(std::unique_ptr<Batch> b) {
    std::lock_guard<std::mutex> l(m_);
    full_.push_back(std::move(b));
    cv_.notify_all();
  }
  void finish() {
    std::lock_guard<std::mutex> l(m_);
    done_ = true;
    cv_.notify_all();
  }
  // Consumer side: nullptr at the end.
  std::unique_ptr<Batch> next() {
    std::unique_lock<std::mutex> l(m_);
    cv_.wait(l, [&] { return done_ || !full_.empty(); });
    if (full_.empty()) return nullptr;
    auto b = std::move(full_.front());
    full_.pop_front();
    return b;
  }
  void recycle(std::unique_ptr<Batch> b) {
    std::lock_guard<std::mutex> l(m_);
    free_.push_back(std::move(b));
    cv_.notify_all();
  }
  void cancel() {
    std::lock_guard<std::mutex> l(m_);
    cancel_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<Batch>> free_;
  std::deque<std::unique_ptr<Batch>> full_;
  bool cancel_ = false, done_ = false;
};

struct BatchCollector {
  BlockPipe& pipe;
  std::unique_ptr<Batch> cur;
  void room() {
    if (cur->ops.size() >= BlockPipe::kBlockOps) {
      size_t chunk = cur->chunk;
      pipe.put(std::move(cur));
      cur = pipe.take();
      cur->chunk = chunk;
    }
  }
  void allocLocal(const Alloc& r, uint32_t local) {
    room();
    cur->ops.push_back({kOpAlloc, static_cast<uint8_t>(r.heap), r.ev.thread, r.stackId, r.typeId,
                        r.ev.seq, r.ev.timeNs, r.address, local, r.size, r.actualSize});
  }
  void operator()(const Free& r) {
    room();
    cur->ops.push_back({kOpFree, static_cast<uint8_t>(r.heap), r.ev.thread, 0, 0, r.ev.seq,
                        r.ev.timeNs, r.address, 0, 0, 0});
  }
  void operator()(const Realloc& r) {
    room();
    cur->ops.push_back({kOpRealloc, static_cast<uint8_t>(r.heap), r.ev.thread, r.stackId,
                        r.typeId, r.ev.seq, r.ev.timeNs, r.oldAddress, r.newAddress, r.size,
                        r.actualSize});
  }
  void skippedEvent(const EventCommon& ev) {
    room();
    cur->ops.push_back({kOpSkipped, 0, ev.thread, 0, 0, ev.seq, ev.timeNs, 0, 0, 0, 0});
  }
  template <class T>
  void operator()(const T& r) {
    room();
    cur->ops.push_back({kOpOther, 0, 0, 0, 0, 0, 0, cur->others.size(), 0, 0, 0});
    cur->others.emplace_back(r);
  }
};

// Feeds a batch to a visitor in record order (the visitor may throw StopDecoding).
template <class V>
void replayBatch(const Batch& b, V& v) {
  for (const Op& op : b.ops) {
    switch (op.kind) {
      case kOpAlloc:
        v.allocLocal(Alloc{{op.seq, op.time, op.thread}, static_cast<HeapKind>(op.heap), op.a,
                           op.size, op.actual, op.stackId, op.typeId},
                     static_cast<uint32_t>(op.b));
        break;
      case kOpFree:
        v(Free{{op.seq, op.time, op.thread}, static_cast<HeapKind>(op.heap), op.a});
        break;
      case kOpRealloc:
        v(Realloc{{op.seq, op.time, op.thread}, static_cast<HeapKind>(op.heap), op.a, op.b,
                  op.size, op.actual, op.stackId, op.typeId});
        break;
      case kOpSkipped:
        v.skippedEvent(EventCommon{op.seq, op.time, op.thread});
        break;
      default:
        std::visit(v, b.others[op.a]);
    }
  }
}

}  // namespace

// Runs `Applier`s over record chunks first.. in order. make(k) creates the applier for chunk k;
// done(k, applier, stopped) takes it back after the chunk (stopped: it threw StopDecoding) and
// returns false to stop. want(k) says whether chunk k will be needed (the decoder runs ahead only
// over those). With a second hardware thread, decoding runs on it, a few thousand records ahead
// of the applying thread; else records go straight from the decoder to the applier.
template <class Make, class Done, class Want>
void Replay::forEachChunk(size_t first, Make&& make, Done&& done, Want&& want) {
  const size_t n = recordChunks_.size();
  if (first >= n) return;
  // The pipeline gains ~20% with a free core and loses ~25% when the second core is busy
  // (docs/PERFORMANCE.md): use it when the load average leaves a core free.
  static const bool threaded = [] {
    const char* e = std::getenv("HEAPMAN_REPLAY_THREADS");
    if (e) return std::atoi(e) > 1;
    unsigned cores = std::thread::hardware_concurrency();
    double load[1] = {0};
    if (::getloadavg(load, 1) != 1) load[0] = 0;
    return cores > 1 && load[0] + 1.0 <= cores;
  }();
  if (!threaded) {
    std::vector<uint8_t> buf;
    auto model = std::make_unique<ChunkModel>();
    for (size_t k = first; k < n; ++k) {
      auto a = make(k);
      bool stopped = false;
      try {
        reader_.decodeChunk(recordChunks_[k], buf, a, model.get());
      } catch (const StopDecoding&) {
        stopped = true;
      }
      if (!done(k, a, stopped)) return;
      checkCancel();
    }
    return;
  }
  BlockPipe pipe;
  std::thread producer([&] {
    std::vector<uint8_t> buf;
    auto model = std::make_unique<ChunkModel>();
    BatchCollector c{pipe, nullptr};
    try {
      for (size_t k = first; k < n; ++k) {
        if (k > first && !want(k)) break;
        c.cur = pipe.take();
        c.cur->chunk = k;
        try {
          reader_.decodeChunk(recordChunks_[k], buf, c, model.get());
        } catch (const Cancelled&) {
          throw;
        } catch (...) {
          c.cur->error = std::current_exception();
          pipe.put(std::move(c.cur));
          break;
        }
        c.cur->chunkEnd = true;
        pipe.put(std::move(c.cur));
      }
    } catch (const Cancelled&) {
    }
    pipe.finish();
  });
  auto stop = [&] {
    pipe.cancel();
    while (auto b = pipe.next()) pipe.recycle(std::move(b));  // unblock and drain
    producer.join();
  };
  try {
    size_t k = first;
    std::optional<decltype(make(first))> a;
    a.emplace(make(k));
    while (auto b = pipe.next()) {
      if (b->error) std::rethrow_exception(b->error);
      bool stopped = false;
      try {
        replayBatch(*b, *a);
      } catch (const StopDecoding&) {
        stopped = true;
      }
      bool end = b->chunkEnd;
      pipe.recycle(std::move(b));
      checkCancel();
      if (stopped || end) {
        if (!done(k, *a, stopped)) break;
        if (++k >= n) break;
        a.emplace(make(k));
      }
    }
  } catch (...) {
    stop();
    throw;
  }
  stop();
}

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

  // Returns false when the record was applied before (resume) and must be ignored.
  template <class T>
  [[gnu::always_inline]] bool enter(const T& rec) {
    if (visited < skip) {
      ++visited;
      return false;
    }
    // What `heapman verify` refuses, the index pass refuses: one set of rules (check.h).
    if constexpr (kBuild) check->record(rec);
    if constexpr (IsEvent<T>) {
      if (rec.ev.seq >= limit) throw StopDecoding{};
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

  // An event of an extended kind the decoder does not know: its sequence number counts.
  void skippedEvent(const EventCommon& ev) {
    if constexpr (kBuild) check->event(ev.seq);
  }

  [[gnu::always_inline]] void kill(const LiveObject& o, Death how, uint64_t seq) {
    r.counters_.liveBytes -= r.tables_.infos[o.info()].size;
    if constexpr (kBuild) {
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
      for (uint64_t a : it->second) {
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
    }
  }
  void operator()(const FrameMark& f) {
    if (!enter(f)) return;
    if constexpr (kBuild) r.tables_.frames.push_back({f.frame, f.ev.seq, f.ev.timeNs});
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

void Replay::init() {
  static std::atomic<uint64_t> serials{0};
  serial_ = ++serials;
  dict_ = std::make_unique<InfoDict>(tables_.infos);
  auto listRecordChunks = [&] {
    recordChunks_.clear();
    for (const ChunkRef& c : reader_.chunks())
      if (c.header.type == static_cast<uint16_t>(ChunkType::kRecords)) recordChunks_.push_back(c);
  };
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
    std::vector<std::string> where;
    if (options_.useIndex && !options_.indexPath.empty() && !damage_)
      for (const std::string& path : indexCandidates(options_.indexPath, reader_.name()))
        if (std::find(refused.begin(), refused.end(), path) == refused.end())
          where.push_back(path);
    for (const std::string& path : where)
      if (index_->openSpill(path)) break;
    try {
      buildTables(true);
    } catch (const FormatError& e) {
      // Damage the scan could not see: a payload that fails (checksum, decompression, records),
      // or records that break the log's rules (LogCheck: a chunk missing, repeated or out of
      // order, an impossible address or stack id). The log ends before that chunk for every
      // reader of it (the graph's RAM dumps too); replay the chunks before it, afresh, and keep
      // no index for a damaged log.
      if (!options_.intactPrefix || e.chunk() < 0 ||
          static_cast<uint64_t>(e.chunk()) >= reader_.chunks().size())
        throw;
      damage_ = e;
      reader_.endBefore(e);
      listRecordChunks();
      index_ = std::make_unique<Index>();  // drops the spill file
      where.clear();
      status_.why = "not written: the log is damaged";
      buildTables(true);
    }
    // The RAM dumps' first copies: an eighth of the index's byte share at most (checkpoints
    // take three quarters of it, the tables and directory the rest), 4 KiB for a small log.
    if (!damage_)
      indexDumpCopies(reader_, tables_,
                      std::max<uint64_t>(reader_.bytes().size() /
                                             std::max<uint64_t>(options_.indexShare, 1) / 8,
                                         4096));
    status_.built = true;
    if (!where.empty()) {
      std::string err;
      for (const std::string& path : where) {
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

void Replay::resetState() {
  live_.clear();
  counters_ = {};
  pending_.clear();
  position_ = 0;
  chunk_ = 0;
  consumed_ = 0;
}

// The index pass: every record once, tables and definitions gathered, checkpoints taken at chunk
// boundaries every options_.checkpointEvents events.
void Replay::buildTables(bool withCheckpoints) {
  tables_ = LogTables{};
  tables_.stacks.resize(1);
  tables_.stacks[0].defined = true;
  dict_ = std::make_unique<InfoDict>(tables_.infos);
  gcEndSeqs_.clear();
  resetState();
  if (!index_) index_ = std::make_unique<Index>();
  std::unordered_map<uint32_t, size_t> gcIndex;
  std::unordered_map<uint32_t, uint32_t> eventCounts;
  uint64_t sinceCheckpoint = 0;
  bool sawEvent = false;
  cpFloor_ = 0;
  cpDeaths_.clear();
  cpDeltaOk_ = false;
  cpChainEntries_ = 0;
  cpSpent_ = 0;
  cpBytesPerEntry_ = 2.0;
  LogCheck check(reader_);
  forEachChunk(
      0,
      [&](size_t k) {
        check.beginRecords(recordChunks_[k]);
        if (withCheckpoints && sinceCheckpoint >= options_.checkpointEvents && k > 0)
          maybeCheckpoint(k, sinceCheckpoint);
        dict_->newChunk();
        Applier<true> a{*this, std::numeric_limits<uint64_t>::max(), nullptr};
        a.chunk = &recordChunks_[k];
        a.check = &check;
        a.gcIndex = &gcIndex;
        a.eventCounts = &eventCounts;
        a.sawEvent = sawEvent;
        return a;
      },
      [&](size_t k, Applier<true>& a, bool) {
        check.endRecords();
        sawEvent = a.sawEvent;
        sinceCheckpoint += a.applied();
        stats_.eventsApplied += a.applied();
        ++stats_.chunksDecoded;
        if (options_.progress) options_.progress(k + 1, recordChunks_.size());
        return true;
      },
      [](size_t) { return true; });
  check.finish();
  if (!sawEvent) tables_.firstSeq = tables_.endSeq = 0;
  cpFloor_ = 0;
  cpDeltaOk_ = false;
  std::vector<uint64_t>().swap(cpDeaths_);
  std::stable_sort(tables_.gcs.begin(), tables_.gcs.end(),
                   [](const GcRecord& a, const GcRecord& b) { return a.number < b.number; });
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
  if (observer) {
    if (limit < position_)
      throw ReplayError("cannot observe a backward seek (from " + describe(position_) + " to " +
                        describe(limit) + ")");
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
  if (limit >= position_) {
    // Forward: jump only when the checkpoint is ahead by more events than it holds objects.
    if (cp && cp->position > position_ && cp->position - position_ > cp->liveObjects)
      loadCheckpoint(static_cast<size_t>(cp - cps.data()));
  } else if (cp) {
    loadCheckpoint(static_cast<size_t>(cp - cps.data()));
  } else {
    resetState();
  }
  runForward(limit, nullptr);
  live_.shrinkToFit();
}

void Replay::replayFromStart(uint64_t limit) {
  resetState();
  runForward(limit, nullptr);
  live_.shrinkToFit();
}

// ---- Checkpoints ------------------------------------------------------------------------------
// Raw layout (LZ4'd in the index file), all varints: position, chunk, unknownFrees,
// replacedAllocs, unknownCollected, gcEnds, lostEvents, liveBytes, live count (after applying);
// then kind (0 full, 1 delta against the checkpoint before); a delta then has the removed
// addresses: count, ascending address deltas; then the objects (full: every live one; delta: those
// born since the checkpoint before and alive) by ascending address as three columns: n address
// deltas, n info ids, n zigzag deltas of birth seq from the object before (bdwgc and malloc hand
// out neighbouring addresses in allocation order, so these are small and repetitive: LZ4 shrinks
// the columns to ~1.5 bytes per object on a guile log, against ~4.7 for rows); then the pending
// collected sets {gc, count, address deltas}.

namespace {

uint64_t zigzag(int64_t v) { return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63); }
int64_t unzigzag(uint64_t v) { return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1); }

}  // namespace

std::vector<uint8_t> Replay::serializeState(bool delta) const {
  detail::Out o;
  o.var(position_);
  o.var(chunk_);
  o.var(counters_.unknownFrees);
  o.var(counters_.replacedAllocs);
  o.var(counters_.unknownCollected);
  o.var(counters_.gcEnds);
  o.var(counters_.lostEvents);
  o.var(counters_.liveBytes);
  o.var(live_.size());
  o.u8(delta ? 1 : 0);
  if (delta) {
    std::vector<uint64_t> removed = cpDeaths_;
    std::sort(removed.begin(), removed.end());
    o.var(removed.size());
    uint64_t p = 0;
    for (uint64_t a : removed) {
      o.var(a - p);
      p = a;
    }
  }
  std::vector<LiveObject> objs;
  objs.reserve(delta ? live_.size() + cpDeaths_.size() - cpLiveAt_ : live_.size());
  live_.forEach([&](const LiveObject& x) {
    if (!delta || x.birthSeq() >= cpFloor_) objs.push_back(x);
  });
  sortByAddress(objs);
  o.var(objs.size());
  uint64_t prev = 0;
  for (const LiveObject& x : objs) {
    o.var(x.address - prev);
    prev = x.address;
  }
  for (const LiveObject& x : objs) o.var(x.info());
  uint64_t birth = 0;
  for (const LiveObject& x : objs) {
    o.var(zigzag(static_cast<int64_t>(x.birthSeq() - birth)));
    birth = x.birthSeq();
  }
  o.var(pending_.size());
  for (const auto& [gc, addrs] : pending_) {
    o.var(gc);
    o.var(addrs.size());
    uint64_t p = 0;
    for (uint64_t a : addrs) {
      o.var(a - p);  // ascending within one Collected record; wraps harmlessly otherwise
      p = a;
    }
  }
  return std::move(o.data());
}

// Index pass, at the start of chunk k, once checkpointEvents events have passed since the last
// checkpoint: takes one when it is worth its bytes. A delta (objects born and addresses died
// since the last one) when the chain of deltas since the last full checkpoint stays smaller than
// a full one would be, so loading any checkpoint costs at most about two full loads; taken only
// when loading it (about one live-set insert per object or address) costs fewer operations than
// the events it saves replaying, and when it fits options_.indexShare's byte budget (so a heap
// that only grows, like a guile program's, gets few checkpoints and a small index).
void Replay::maybeCheckpoint(size_t k, uint64_t& sinceCheckpoint) {
  size_t live = live_.size();
  bool haveBase = !index_->checkpoints.empty() && cpDeltaOk_;
  uint64_t removed = haveBase ? cpDeaths_.size() : 0;
  uint64_t added = haveBase ? live + removed - cpLiveAt_ : live;
  bool delta = haveBase && cpChainEntries_ + added + removed <= live;
  uint64_t entries = delta ? added + removed : live;
  if (entries > sinceCheckpoint) return;
  double budget = std::numeric_limits<double>::max();
  if (options_.indexShare)
    budget = double(recordChunks_[k].offset) * 0.75 / double(options_.indexShare) -
             double(cpSpent_);
  if (double(entries) * cpBytesPerEntry_ > budget) return;
  position_ = recordChunks_[k].header.firstSeq;
  chunk_ = k;
  std::vector<uint8_t> raw = serializeState(delta);
  std::vector<uint8_t> stored = detail::lz4Compress(raw);
  cpBytesPerEntry_ = std::max(0.05, double(stored.size()) / double(std::max<uint64_t>(entries, 1)));
  if (double(stored.size()) > budget) return;  // the estimate was low: wait for more log
  index_->addCheckpoint(k, position_, live, delta, stored, raw.size());
  cpSpent_ += stored.size();
  cpChainEntries_ = delta ? cpChainEntries_ + entries : 0;
  cpFloor_ = position_;
  cpDeaths_.clear();
  cpLiveAt_ = live;
  cpDeltaOk_ = true;
  sinceCheckpoint = 0;
}

// Checkpoint i: its chain from the last full checkpoint at or before it, applied in order.
void Replay::loadCheckpoint(size_t i) {
  size_t first = i;
  while (first > 0 && index_->checkpoints[first].delta) --first;
  resetState();
  for (size_t j = first; j <= i; ++j) {
    std::vector<uint8_t> raw = index_->checkpointBytes(j);
    try {
      applyCheckpoint(raw, index_->checkpoints[j].delta);
    } catch (const log::CursorOverrun& e) {
      resetState();
      throw DataError("index " + status_.path + ": checkpoint " + std::to_string(j) +
                      " is corrupt (" + e.what() + "); delete the index file to rebuild it");
    }
  }
  consumed_ = 0;
  ++stats_.checkpointLoads;
}

void Replay::applyCheckpoint(const std::vector<uint8_t>& raw, bool delta) {
  detail::In in(raw);
  position_ = in.var();
  chunk_ = in.var();
  counters_.unknownFrees = in.var();
  counters_.replacedAllocs = in.var();
  counters_.unknownCollected = in.var();
  counters_.gcEnds = in.var();
  counters_.lostEvents = in.var();
  counters_.liveBytes = in.var();
  uint64_t liveAfter = in.var();
  if ((in.u8() != 0) != delta || (!delta && live_.size() != 0))
    throw log::CursorOverrun("checkpoint kind");
  LiveObject dummy;
  if (delta) {
    uint64_t n = in.count();
    uint64_t addr = 0;
    for (uint64_t k = 0; k < n; ++k) {
      addr += in.var();
      if (!live_.erase(addr, &dummy)) throw log::CursorOverrun("removed object not live");
    }
  }
  uint64_t n = in.count();
  if (n > liveAfter) throw log::CursorOverrun("more objects than the live count");
  std::vector<LiveObject> objs(n);
  uint64_t addr = 0;
  for (LiveObject& x : objs) {
    addr += in.var();
    if (addr == 0 || addr >= LiveSet::kAddressLimit)
      throw log::CursorOverrun("live object out of range");
    x.address = addr;
  }
  for (LiveObject& x : objs) {
    uint64_t info = in.var();
    if (info >= tables_.infos.size()) throw log::CursorOverrun("live object's info out of range");
    x.packed = info;
  }
  uint64_t birth = 0;
  for (LiveObject& x : objs) {
    birth += static_cast<uint64_t>(unzigzag(in.var()));
    if (birth > kMaxSeq) throw log::CursorOverrun("live object's birth out of range");
    x.packed = LiveObject::pack(birth, static_cast<uint32_t>(x.packed));
  }
  live_.reserve(liveAfter);
  for (const LiveObject& x : objs)
    if (live_.insert(x, &dummy)) throw log::CursorOverrun("object added twice");
  if (live_.size() != liveAfter) throw log::CursorOverrun("live count");
  pending_.clear();
  uint64_t sets = in.count();
  for (uint64_t s = 0; s < sets; ++s) {
    uint32_t gc = in.var32();
    uint64_t m = in.count();
    std::vector<uint64_t> addrs(m);
    uint64_t p = 0;
    for (uint64_t k = 0; k < m; ++k) addrs[k] = p += in.var();
    pending_.emplace_back(gc, std::move(addrs));
  }
  if (chunk_ > recordChunks_.size()) throw log::CursorOverrun("chunk out of range");
  if (!in.atEnd()) throw log::CursorOverrun("bytes after the checkpoint");
}

// ---- Points -----------------------------------------------------------------------------------

uint64_t Replay::resolve(const Point& p) const {
  const LogTables& t = tables_;
  switch (p.kind) {
    case Point::Kind::kStart: return t.firstSeq;
    case Point::Kind::kEnd: return t.endSeq;
    case Point::Kind::kSeq:
      if (p.number < t.firstSeq || p.number >= t.endSeq)
        throw ReplayError("seq:" + std::to_string(p.number) + " is outside the log (" +
                          (t.eventCount ? "seq " + std::to_string(t.firstSeq) + ".." +
                                          std::to_string(t.endSeq - 1)
                                    : std::string("it has no events")) +
                          ")");
      return p.number + 1;
    case Point::Kind::kGc: {
      const GcRecord* g = p.number <= std::numeric_limits<uint32_t>::max()
                              ? t.gc(static_cast<uint32_t>(p.number))
                              : nullptr;
      if (!g || !g->ended) {
        std::string range = "log has no completed GCs";
        std::vector<uint32_t> ended;
        for (const GcRecord& x : t.gcs)
          if (x.ended) ended.push_back(x.number);
        if (!ended.empty())
          range = "log has GCs " + std::to_string(ended.front()) + ".." +
                  std::to_string(ended.back());
        if (g && !g->ended) range += "; GC " + std::to_string(p.number) + " never ended";
        // GC numbers are the collector's own count (what C#'s GC.CollectionCount returns): a Mono
        // log starts at 2, since Mono's collector runs once at start-up, before the recorder is
        // loaded as its profiler.
        if (!g && !ended.empty() && p.number < ended.front())
          range += "; GC " + std::to_string(p.number) +
                   " ran before recording started (GC numbers are the collector's own count)";
        throw ReplayError("unknown GC " + std::to_string(p.number) + " (" + range + ")");
      }
      return g->endSeq + 1;
    }
    case Point::Kind::kFrame: {
      for (const FrameRecord& f : t.frames)
        if (f.frame == p.number) return f.seq + 1;
      if (t.frames.empty()) throw ReplayError("unknown frame " + std::to_string(p.number) +
                                              " (log has no frame marks)");
      uint64_t lo = t.frames.front().frame, hi = lo;
      for (const FrameRecord& f : t.frames) lo = std::min(lo, f.frame), hi = std::max(hi, f.frame);
      throw ReplayError("unknown frame " + std::to_string(p.number) + " (log has frames " +
                        std::to_string(lo) + ".." + std::to_string(hi) + ")");
    }
    case Point::Kind::kEvent: {
      uint32_t count = 0;
      bool known = false;
      for (const EventRecord& e : t.events) {
        if (t.eventName(e.nameId) != p.name) continue;
        known = true;
        if (++count == p.number) return e.seq + 1;
      }
      if (known)
        throw ReplayError("event '" + p.name + "' occurs " + std::to_string(count) +
                          (count == 1 ? " time" : " times") + "; asked for occurrence " +
                          std::to_string(p.number));
      std::vector<std::string> names;
      for (const EventRecord& e : t.events) {
        std::string n = t.eventName(e.nameId);
        if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
      }
      std::string list;
      for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
      throw ReplayError("unknown event '" + p.name + "' (" +
                        (names.empty() ? "log has no custom events" : "known events: " + list) +
                        ")");
    }
  }
  throw ReplayError("bad point");
}

std::string Replay::describe(uint64_t limit) const {
  const LogTables& t = tables_;
  if (limit <= t.firstSeq) return "start";
  for (const GcRecord& g : t.gcs)
    if (g.ended && g.endSeq + 1 == limit) return "gc:" + std::to_string(g.number);
  for (const EventRecord& e : t.events)
    if (e.seq + 1 == limit) return t.eventName(e.nameId) + "#" + std::to_string(e.occurrence);
  for (const FrameRecord& f : t.frames)
    if (f.seq + 1 == limit) return "frame:" + std::to_string(f.frame);
  if (limit >= t.endSeq) return "end";
  return "seq:" + std::to_string(limit - 1);
}

}  // namespace heapman::replay
