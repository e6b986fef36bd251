// Seeking: the state brought to a position from the nearest checkpoint or kept state, or from
// the start, applying records with Replay::Applier<false> (applier.h); past where a paused index
// pass stopped, the pass carries on (index_pass.cpp).
#include <algorithm>
#include <vector>

#include "applier.h"
#include "decode_pipeline.h"
#include "heapman/replay/replay.h"
#include "index_file.h"
#include "index_pass.h"
#include "info_dict.h"

namespace heapman::replay {

using namespace heapman::log;

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
    const size_t reserved = reserveUpTo(limit);
    runForward(limit, observer);
    live_.shrinkToFit(reserved);
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
  const size_t reserved = reserveUpTo(limit);
  runForward(limit, nullptr);
  live_.shrinkToFit(reserved);
}

// The live set will hold at least as many objects as any collection on the way found (those it
// left alive and those it collected): room for the most of them (at a load of 0.65) at once,
// rather than growing in 5/4 steps that each re-insert every live object (a fifth of a
// 1 M-event seek from the start of a guile log). Returns the objects the table should keep room
// for when the seek hands it over: those, or the next collection's after the limit if more (a
// seek on from there needs them: the report's points, a heap map's two seeks).
size_t Replay::reserveUpTo(uint64_t limit) {
  uint64_t most = 0, next = 0, nextEnd = ~uint64_t{0};
  for (const GcRecord& g : tables_.gcs) {
    if (!g.ended) continue;
    if (g.endSeq >= position_ && g.endSeq < limit)
      most = std::max(most, g.liveObjects + g.collectedObjects);
    else if (g.endSeq >= limit && g.endSeq < nextEnd)
      nextEnd = g.endSeq, next = g.liveObjects + g.collectedObjects;
  }
  if (most > live_.size()) live_.reserve(static_cast<size_t>(most + most / 4));
  const uint64_t keep = std::max(most, next);
  return static_cast<size_t>(keep + keep / 4);
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
  const size_t reserved = reserveUpTo(limit);
  runForward(limit, nullptr);
  live_.shrinkToFit(reserved);
}

}  // namespace heapman::replay
