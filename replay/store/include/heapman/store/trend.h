// A figure across runs in the order of a tag (heapman trend), and the run where it stepped up.
//
// The step: the one split of the series into a before and an after that leaves the least squared
// error about their two means (the least-squares single change-point), taken among the splits
// where the mean goes up. It is a step when the rise is more than `sigmas` times the noise (the
// median absolute deviation about the two means, scaled to a standard deviation: one run far
// off does not hide a step) and more than `minRise` of the mean before (so that on a figure with
// no noise at all a few bytes do not count as a step).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "heapman/map/image.h"
#include "heapman/store/store.h"

namespace heapman::store {

struct Step {
  bool found = false;
  size_t at = 0;              // index of the first value after the step
  double before = 0, after = 0;  // the means either side
  double noise = 0;           // standard deviation about the two means
};
Step findStep(const std::vector<double>& values, double sigmas = 3.0, double minRise = 0.01);

struct TrendRow {
  std::string tag;  // the tag's value ("17")
  std::string logId;
  uint64_t value = 0;
};

struct TrendResult {
  std::string tagKey;
  std::vector<TrendRow> rows;  // in the tag's order when every value is a number, else in the
                               // order the runs started (a commit hash tells no order)
  Step step;                   // over rows
  std::vector<std::string> warnings;  // runs left out (no such tag, no such point)
};

// The figure of one summary, as the stores compute it for theirs; false when the run has no
// such point. Throws replay::ReplayError (a bad regex).
bool figureOf(const RunSummary& s, const FigureQuery& q, uint64_t* value);

// The figure of every run with the tag; with `current` (a log not stored, a CI job's own run),
// its figure after them as the newest run, its tag shown as `currentTag`. Throws StoreError,
// replay::ReplayError (a bad regex).
TrendResult trend(Store& s, const std::string& tagKey, const FigureQuery& q,
                  const RunSummary* current = nullptr, const std::string& currentTag = "");

// The series as a bar chart (heapman trend --png): a bar per run in the tag's order, the runs
// from the step on in another colour with the two means drawn across them, the title above, the
// highest value and 0 on the left, the first and last tags and the step's under the bars.
inline constexpr int kChartWidth = 800, kChartHeight = 360;
inline constexpr map::Rgb kChartBefore = 0x4c72b0, kChartAfter = 0xdd8452;
// unit: "bytes", "ns" or "count", how the values are written.
map::Image trendChart(const TrendResult& t, const std::string& title,
                      const std::string& unit = "bytes");

}  // namespace heapman::store
