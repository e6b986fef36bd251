// The engine's record applier: Replay::Applier<true> applies records for the index pass and
// gathers the tables (index_pass.cpp), Applier<false> applies them for a seek (seek.cpp). Its
// member functions are the visitors of the decode pipeline (decode_pipeline.h) and inline into its
// loops: include this header only where forEachChunk is instantiated with them. Private to
// replay/src.
#pragma once

#include <algorithm>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "churn_spans.h"
#include "decode_pipeline.h"
#include "heapman/logformat/check.h"
#include "heapman/replay/replay.h"
#include "info_dict.h"
#include "series_counter.h"

namespace heapman::replay {

// The records' types, as in every file of replay/src that includes this one.
using namespace heapman::log;

namespace detail {

template <class T>
concept IsEvent = requires(const T& r) { r.ev.seq; };

}  // namespace detail


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
  SeriesCounter* series = nullptr;  // null when the pass does not count the series
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
    if constexpr (detail::IsEvent<T>) {
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
    const AllocInfo& info = r.tables_.infos[o.info()];
    const uint64_t size = info.size;
    r.counters_.liveBytes -= size;
    if constexpr (kBuild) {
      if (spans) spans->died(o.info(), how, size);
      if (series) series->died(seq, info);
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
      if (series) series->born(seq, id, r.tables_.infos[id], address);
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
        if (k + detail::kOpsAhead < set.size()) r.live_.prefetch(set[k + detail::kOpsAhead]);
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
      if (series) series->gcEnded(g.ev.seq);
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

}  // namespace heapman::replay
