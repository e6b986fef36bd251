// The index pass's count of the live heap over the log (LogTables::series), of the objects born
// per AllocInfo (LogTables::births) and of the address blocks they covered
// (LogTables::addressBlocks): what the report's series and the heap map's scan read instead of a
// pass of their own.
//
// A point is taken when the first birth or death at or past its limit arrives (the state then
// holds every event before the limit: nothing was born or died between), the rest at the end, so
// that a point is the state a seek to its limit gives. Points fall every `every_` events (a power
// of two from 64); when more than `maxFine` of them are kept, `every_` doubles and every other one
// goes, its peak carried to the next. A GC's end adds a point just after it, kept through the
// thinning.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "heapman/replay/replay.h"

namespace heapman::replay {

class Replay::SeriesCounter {
 public:
  explicit SeriesCounter(size_t maxFine) : maxFine_(std::max<size_t>(maxFine, 2)) {
    seen_.fill(~uint64_t{0});
  }

  [[gnu::always_inline]] void born(uint64_t seq, uint32_t id, const AllocInfo& i,
                                   uint64_t address) {
    if (seq >= next_) [[unlikely]]
      advance(seq);
    const int h = static_cast<int>(i.heap);
    bytes_[h] += i.size, ++objects_[h], total_ += i.size;
    peak_ = std::max(peak_, total_);
    if (id >= births_.size()) [[unlikely]]
      births_.resize(std::max<size_t>(id + 1, births_.size() * 2));
    ++births_[id];
    const uint64_t size = std::max<uint64_t>(1, i.actualSize ? i.actualSize : i.size);
    const uint64_t last = (address + size - 1) >> kAddressBlockBits;
    for (uint64_t b = address >> kAddressBlockBits; b <= last; ++b) {
      uint64_t& seen = seen_[b % kSeen];
      if (seen == b) continue;
      seen = b;
      blocks_.push_back(b);
    }
    if (blocks_.size() >= compactAt_) [[unlikely]]
      compact();
  }
  [[gnu::always_inline]] void died(uint64_t seq, const AllocInfo& i) {
    if (seq >= next_) [[unlikely]]
      advance(seq);
    const int h = static_cast<int>(i.heap);
    bytes_[h] -= i.size, --objects_[h], total_ -= i.size;
  }
  // The GC whose GcEnd is at `seq` has been applied: a point just after it.
  void gcEnded(uint64_t seq) {
    advance(seq + 1);
    if (points_.empty() || points_.back().limit != seq + 1) take(seq + 1);
    if (!points_.back().gc) points_.back().gc = true, --fine_;
  }
  // The pass reached the log's end (events [.., endSeq)): the points up to it, one at the end.
  void finish(uint64_t endSeq, LogTables& t) {
    advance(endSeq);
    if (points_.empty() || points_.back().limit != endSeq) take(endSeq);
    compact();
    births_.resize(t.infos.size());
    t.series = std::move(points_);
    t.seriesEvery = every_;
    t.births = std::move(births_);
    t.addressBlocks = std::move(blocks_);
    t.seriesIndexed = true;
  }

 private:
  [[gnu::noinline]] void advance(uint64_t seq) {
    if (!started_) {
      started_ = true;
      next_ = (seq / every_ + 1) * every_;  // no point before the first event
      if (seq < next_) return;
    }
    while (seq >= next_) {
      take(next_);
      next_ += every_;
      if (fine_ > maxFine_) thin();
    }
  }
  void take(uint64_t limit) {
    SeriesPoint p;
    p.limit = limit;
    p.bytes = bytes_, p.objects = objects_;
    p.peak = std::max(peak_, total_);
    peak_ = total_;
    points_.push_back(p);
    ++fine_;
  }
  // Every other fine point goes (those off the doubled spacing), its peak to the point after it.
  void thin() {
    every_ *= 2;
    size_t kept = 0;
    uint64_t carried = 0;
    fine_ = 0;
    for (SeriesPoint& p : points_) {
      p.peak = std::max(p.peak, carried);
      carried = 0;
      if (!p.gc && p.limit % every_ != 0) {
        carried = p.peak;
        continue;
      }
      fine_ += !p.gc;
      points_[kept++] = p;
    }
    points_.resize(kept);
    peak_ = std::max(peak_, carried);  // the last point went: its peak is the next one's
    next_ = (next_ + every_ - 1) / every_ * every_;
  }
  void compact() {
    std::sort(blocks_.begin(), blocks_.end());
    blocks_.erase(std::unique(blocks_.begin(), blocks_.end()), blocks_.end());
    compactAt_ = std::max<size_t>(size_t{1} << 16, blocks_.size() * 2);
  }

  const size_t maxFine_;
  uint64_t every_ = 64, next_ = 0;
  bool started_ = false;
  size_t fine_ = 0;  // points that are not a GC's end
  std::array<uint64_t, log::kHeapKindCount> bytes_{}, objects_{};
  uint64_t total_ = 0, peak_ = 0;
  std::vector<SeriesPoint> points_;
  std::vector<uint64_t> births_, blocks_;
  // The blocks met lately, by block number modulo kSeen: one already there is in blocks_ (a heap
  // reuses a few blocks over and over; pushing each again cost malloc's churn a sort per 64 k).
  static constexpr size_t kSeen = 256;
  std::array<uint64_t, kSeen> seen_;
  size_t compactAt_ = size_t{1} << 16;  // blocks_ is sorted again at this size
};

}  // namespace heapman::replay
