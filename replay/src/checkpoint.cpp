// Checkpoints of the replay state (docs/DESIGN.md §3.3): the index pass takes them
// (Replay::maybeCheckpoint), a seek loads a chain of them (Replay::loadCheckpoint).
//
// Raw layout (LZ4'd in the index file), all varints: position, chunk, unknownFrees,
// replacedAllocs, unknownCollected, gcEnds, lostEvents, liveBytes, live count (after applying);
// then kind (0 full, 1 delta against the checkpoint before); a delta then has the removed
// addresses: count, ascending address deltas; then the objects (full: every live one; delta: those
// born since the checkpoint before and alive) by ascending address as three columns: n address
// deltas, n info ids, n zigzag deltas of birth seq from the object before (bdwgc and malloc hand
// out neighbouring addresses in allocation order, so these are small and repetitive: LZ4 shrinks
// the columns to ~1.5 bytes per object on a guile log, against ~4.7 for rows); then the pending
// collected sets {gc, count, address deltas}.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "heapman/replay/replay.h"
#include "decode_pipeline.h"
#include "index_file.h"
#include "serial.h"

namespace heapman::replay {

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
// the events it saves replaying, and when it fits options_.indexShare's byte budget, judged by
// the bytes per entry the last one took once one was measured (so a heap that only grows, like a
// guile program's, gets few checkpoints and a small index).
void Replay::maybeCheckpoint(size_t k, uint64_t& sinceCheckpoint) {
  size_t live = live_.size();
  bool haveBase = !index_->checkpoints.empty() && cpDeltaOk_;
  uint64_t removed = haveBase ? cpDeaths_.size() : 0;
  uint64_t added = haveBase ? live + removed - cpLiveAt_ : live;
  bool delta = haveBase && cpChainEntries_ + added + removed <= live;
  uint64_t entries = delta ? added + removed : live;
  if (entries > sinceCheckpoint) return;
  double budget = std::numeric_limits<double>::max();
  if (options_.indexShare) {
    // A share of the log, or of indexFloor over a log smaller than indexShare times it, spread
    // over the log in proportion to the bytes read: a well-compressed log (guile's takes 0.2
    // bytes an event, its live set 0.26 bytes an entry) still gets a checkpoint every few
    // hundred thousand events, and a big one keeps its index under its share.
    const double logBytes = double(std::max<size_t>(reader_.bytes().size(), 1));
    const double share =
        std::max(1.0 / double(options_.indexShare), double(options_.indexFloor) / logBytes);
    budget = double(recordChunks_[k].offset) * 0.75 * share - double(cpSpent_);
  }
  // Before the first measurement the rate is a guess (2 bytes an entry, where a guile heap takes
  // 0.26): the first candidate is serialized and measured even when the guess says it would not
  // fit. Trusting the guess kept a guile log's first checkpoint back to two thirds of the log.
  if (cpMeasured_ && double(entries) * cpBytesPerEntry_ > budget) return;
  position_ = recordChunks_[k].header.firstSeq;
  chunk_ = k;
  std::vector<uint8_t> raw = serializeState(delta);
  std::vector<uint8_t> stored = detail::lz4Compress(raw);
  cpBytesPerEntry_ = std::max(0.05, double(stored.size()) / double(std::max<uint64_t>(entries, 1)));
  cpMeasured_ = true;
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
  resetState(true);
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
  // The slots are loaded ahead, as a replay's are (their homes are random places in a table
  // larger than the caches).
  for (size_t k = 0; k < objs.size(); ++k) {
    if (k + detail::kOpsAhead < objs.size()) live_.prefetch(objs[k + detail::kOpsAhead].address);
    if (live_.insert(objs[k], &dummy)) throw log::CursorOverrun("object added twice");
  }
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

}  // namespace heapman::replay
