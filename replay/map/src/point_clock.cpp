// PointClock (heap_map.h): where a position of the log is (last GC, frame mark, custom event)
// and its recorded time, for the map's header and the video's timing.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "heapman/map/heap_map.h"

namespace heapman::map {

PointClock::PointClock(const replay::LogTables& t) : t_(t) {
  for (const replay::GcRecord& g : t.gcs) {
    anchors_.push_back({g.beginSeq, g.beginTimeNs});
    if (g.ended) {
      anchors_.push_back({g.endSeq, g.endTimeNs});
      gcEnds_.push_back(g.endSeq);
      gcNumbers_.push_back(g.number);
    }
  }
  for (const replay::EventRecord& e : t.events) anchors_.push_back({e.seq, e.timeNs});
  for (const replay::FrameRecord& f : t.frames) anchors_.push_back({f.seq, f.timeNs});
  std::sort(anchors_.begin(), anchors_.end());
  // Times go forward with seqs (threads' clocks may disagree by a little: keep them monotonic).
  for (size_t i = 1; i < anchors_.size(); ++i)
    anchors_[i].second = std::max(anchors_[i].second, anchors_[i - 1].second);
  for (auto [seq, time] : anchors_) byTime_.push_back({time, seq});
  std::vector<size_t> order(gcEnds_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return gcEnds_[a] < gcEnds_[b]; });
  std::vector<uint64_t> ends;
  std::vector<uint32_t> numbers;
  for (size_t i : order) ends.push_back(gcEnds_[i]), numbers.push_back(gcNumbers_[i]);
  gcEnds_ = std::move(ends);
  gcNumbers_ = std::move(numbers);
}

uint64_t PointClock::timeAt(uint64_t limit) const {
  if (anchors_.empty()) return limit >= t_.endSeq ? t_.endTimeNs : 0;
  if (limit >= t_.endSeq) return std::max(anchors_.back().second, t_.endTimeNs);
  auto it = std::partition_point(anchors_.begin(), anchors_.end(),
                                 [&](const auto& a) { return a.first < limit; });
  return it == anchors_.begin() ? anchors_.front().second : (it - 1)->second;
}

uint64_t PointClock::limitAt(uint64_t timeNs) const {
  auto it = std::partition_point(byTime_.begin(), byTime_.end(),
                                 [&](const auto& a) { return a.first <= timeNs; });
  return it == byTime_.begin() ? t_.firstSeq : (it - 1)->second + 1;
}

PointInfo PointClock::at(uint64_t limit) const {
  PointInfo p;
  p.timeNs = timeAt(limit);
  auto g = std::partition_point(gcEnds_.begin(), gcEnds_.end(), [&](uint64_t s) { return s < limit; });
  if (g != gcEnds_.begin()) p.hasGc = true, p.gc = gcNumbers_[size_t(g - gcEnds_.begin()) - 1];
  auto f = std::partition_point(t_.frames.begin(), t_.frames.end(),
                                [&](const replay::FrameRecord& x) { return x.seq < limit; });
  if (f != t_.frames.begin()) p.hasFrame = true, p.frame = (f - 1)->frame;
  auto e = std::partition_point(t_.events.begin(), t_.events.end(),
                                [&](const replay::EventRecord& x) { return x.seq < limit; });
  if (e != t_.events.begin())
    p.lastEvent = t_.eventName((e - 1)->nameId) + "#" + std::to_string((e - 1)->occurrence);
  return p;
}

}  // namespace heapman::map
