// The scan of a log for its pictures: the granules every object touched (the layout's regions),
// bytes allocated per AllocInfo (the top colours) and live bytes over the log (the timeline):
// read from what the index pass counted (LogTables::series), else one forward replay with an
// observer.
#include <algorithm>
#include <chrono>
#include <deque>
#include <future>
#include <mutex>
#include <string>

#include "heapman/map/heap_map.h"

namespace heapman::map {

LogScanner::LogScanner(const replay::Replay& r, size_t samples)
    : r_(r), bins_(samples ? samples : 1), delta_(bins_ + 1) {
  const replay::LogTables& t = r.tables();
  s_.firstSeq = t.firstSeq;
  s_.endSeq = t.endSeq;
  s_.allocBytes.assign(t.infos.size(), 0);
}

void LogScanner::born(const replay::LiveObject& o) {
  const replay::AllocInfo& i = r_.info(o.info());
  uint64_t id = o.info();
  if (id >= s_.allocBytes.size()) s_.allocBytes.resize(id + 1);
  s_.allocBytes[id] += i.size;
  delta_[bin(o.birthSeq())] += int64_t(i.size);
  uint64_t size = std::max<uint64_t>(1, i.actualSize ? i.actualSize : i.size);
  uint64_t g0 = o.address >> kGranuleBits, g1 = (o.address + size - 1) >> kGranuleBits;
  for (uint64_t g = g0; g <= g1; ++g) {
    if (g == last_) continue;
    last_ = g;
    granules_.push_back(g);
  }
  if (granules_.size() >= kCompactAt) compact();
}

void LogScanner::died(const replay::LiveObject& o, replay::Death, uint64_t seq) {
  delta_[bin(seq)] -= int64_t(r_.info(o.info()).size);
}

LogScan LogScanner::take() {
  compact();
  s_.granules = std::move(granules_);
  s_.liveBytes.assign(bins_, 0);
  int64_t live = 0;
  for (size_t b = 0; b < bins_; ++b) {
    live += delta_[b];
    s_.liveBytes[b] = uint64_t(std::max<int64_t>(live, 0));
    s_.peakBytes = std::max(s_.peakBytes, s_.liveBytes[b]);
  }
  return std::move(s_);
}

size_t LogScanner::bin(uint64_t seq) const {
  uint64_t span = s_.endSeq - s_.firstSeq;
  if (span == 0 || seq < s_.firstSeq) return 0;
  return std::min<size_t>(bins_ - 1, size_t(__uint128_t(seq - s_.firstSeq) * bins_ / span));
}

void LogScanner::compact() {
  std::sort(granules_.begin(), granules_.end());
  granules_.erase(std::unique(granules_.begin(), granules_.end()), granules_.end());
  last_ = ~uint64_t{0};
}

static_assert(replay::kAddressBlockBits == kGranuleBits, "the index's address blocks are granules");

namespace {

// The scan from the index's counts. A bin's live bytes are those at the first series point at or
// past the bin's end (within LogTables::seriesEvery events of it; exact where a point falls on it).
LogScan indexedScan(const replay::LogTables& t, size_t samples) {
  LogScan s;
  s.firstSeq = t.firstSeq;
  s.endSeq = t.endSeq;
  s.granules = t.addressBlocks;
  s.allocBytes.assign(t.infos.size(), 0);
  for (size_t i = 0; i < t.infos.size() && i < t.births.size(); ++i)
    s.allocBytes[i] = t.births[i] * t.infos[i].size;
  const size_t bins = samples ? samples : 1;
  const uint64_t span = s.endSeq - s.firstSeq;
  s.liveBytes.assign(bins, 0);
  size_t at = 0;
  for (size_t b = 0; b < bins && !t.series.empty(); ++b) {
    // The first seq in bin b + 1 (LogScanner::bin): the state there holds bins 0..b.
    uint64_t end = b + 1 == bins || span == 0
                       ? s.endSeq
                       : s.firstSeq + uint64_t((__uint128_t(span) * (b + 1) + bins - 1) / bins);
    while (at + 1 < t.series.size() && t.series[at].limit < end) ++at;
    uint64_t live = 0;
    for (uint64_t v : t.series[at].bytes) live += v;
    s.liveBytes[b] = live;
    s.peakBytes = std::max(s.peakBytes, live);
  }
  return s;
}

}  // namespace

LogScan scanLog(replay::Replay& r, size_t samples) {
  const replay::LogTables& t = r.tables();
  if (t.seriesIndexed) return indexedScan(t, samples);
  LogScanner obs(r, samples);
  r.replayFromStart(t.firstSeq);
  r.seek(t.endSeq, &obs);
  return obs.take();
}

std::shared_ptr<const LogScan> sharedScan(replay::Replay& r, size_t samples) {
  // Kept for the whole process, by what the scan depends on (the log file and how much of it
  // the replay covers), so that heapman serve's workers, each with a replay of its own, scan a
  // log once between them: the first asks, the others wait for its answer. The last two logs.
  struct Key {
    std::string name;
    uint64_t fileBytes, endSeq, eventCount;
    size_t chunks, samples;
    bool operator==(const Key&) const = default;
  };
  using Scan = std::shared_future<std::shared_ptr<const LogScan>>;
  static std::mutex m;
  static std::deque<std::pair<Key, Scan>> kept;
  const replay::LogTables& t = r.tables();
  Key key{r.reader().name(), r.reader().fileSize(), t.endSeq, t.eventCount,
          r.reader().chunks().size(), samples};
  for (;;) {
    std::promise<std::shared_ptr<const LogScan>> mine;
    Scan scan;
    {
      std::lock_guard<std::mutex> lock(m);
      auto it = std::find_if(kept.begin(), kept.end(), [&](const auto& k) { return k.first == key; });
      if (it != kept.end()) {
        scan = it->second;
      } else {
        kept.emplace_front(key, mine.get_future().share());
        if (kept.size() > 2) kept.pop_back();
      }
    }
    if (scan.valid()) {
      try {
        return scan.get();
      } catch (const std::exception&) {
        // The thread that scanned was stopped (its request cancelled): scan here instead.
        std::lock_guard<std::mutex> lock(m);
        std::erase_if(kept, [&](const auto& k) { return k.first == key && k.second.valid() &&
                                                        k.second.wait_for(std::chrono::seconds(0)) ==
                                                            std::future_status::ready; });
        continue;
      }
    }
    try {
      auto made = std::make_shared<const LogScan>(scanLog(r, samples));
      mine.set_value(made);
      return made;
    } catch (...) {
      mine.set_exception(std::current_exception());
      throw;
    }
  }
}

}  // namespace heapman::map
