// trendChart(): the bars, the means either side of the step, and the labels, in the heap map's
// raster and bitmap font (replay/map).
#include <algorithm>
#include <cmath>

#include "heapman/store/budget.h"
#include "heapman/store/trend.h"

namespace heapman::store {

namespace {

constexpr int kLeft = 80, kRight = 20, kTop = 30, kBottom = 40;
constexpr map::Rgb kBackground = 0xffffff, kAxis = 0x808080, kText = 0x202020;
constexpr map::Rgb kMeanBefore = 0x1f3f7a, kMeanAfter = 0xa03010;

}  // namespace

map::Image trendChart(const TrendResult& t, const std::string& title, const std::string& unit) {
  auto valueText = [&](uint64_t v) {
    return unit == "bytes" ? bytesText(v) : unit == "ns" ? nanosText(v) : std::to_string(v);
  };
  map::Image img(kChartWidth, kChartHeight, kBackground);
  int x0 = kLeft, x1 = kChartWidth - kRight, y0 = kTop, y1 = kChartHeight - kBottom;
  map::drawText(img, kLeft, 8, map::fitText(title, static_cast<size_t>((x1 - x0) / map::kCellWidth)),
                kText);
  img.fill(x0 - 1, y0, 1, y1 - y0 + 1, kAxis);
  img.fill(x0 - 1, y1, x1 - x0 + 1, 1, kAxis);
  size_t n = t.rows.size();
  if (n == 0) {
    map::drawText(img, x0 + 10, (y0 + y1) / 2, "no runs", kText);
    return img;
  }
  uint64_t top = 1;
  for (const TrendRow& r : t.rows) top = std::max(top, r.value);
  auto yOf = [&](double v) {
    return y1 - static_cast<int>(std::lround(v / static_cast<double>(top) * (y1 - y0)));
  };
  double slot = static_cast<double>(x1 - x0) / static_cast<double>(n);
  int bar = std::max(1, static_cast<int>(slot * 0.7));
  auto xOf = [&](size_t i) { return x0 + static_cast<int>(slot * static_cast<double>(i)); };
  for (size_t i = 0; i < n; ++i) {
    int y = yOf(static_cast<double>(t.rows[i].value));
    bool after = t.step.found && i >= t.step.at;
    img.fill(xOf(i) + static_cast<int>((slot - bar) / 2), y, bar, y1 - y, after ? kChartAfter
                                                                               : kChartBefore);
  }
  if (t.step.found) {
    int split = xOf(t.step.at);
    img.fill(x0, yOf(t.step.before) - 1, split - x0, 2, kMeanBefore);
    img.fill(split, yOf(t.step.after) - 1, x1 - split, 2, kMeanAfter);
  }
  std::string high = valueText(top);
  map::drawText(img, std::max(0, x0 - 6 - map::textWidth(high)), y0, high, kText);
  map::drawText(img, x0 - 6 - map::textWidth("0"), y1 - map::kCellHeight + 2, "0", kText);
  auto label = [&](size_t i, const std::string& text, int row) {
    int w = map::textWidth(text);
    int x = std::clamp(xOf(i) + static_cast<int>(slot / 2) - w / 2, 0, kChartWidth - w);
    map::drawText(img, x, y1 + 6 + row * (map::kCellHeight + 3), text, kText);
  };
  label(0, t.rows.front().tag, 0);
  if (n > 1) label(n - 1, t.rows.back().tag, 0);
  if (t.step.found)
    label(t.step.at, "step: " + t.tagKey + " " + t.rows[t.step.at].tag + ", +" +
                         valueText(static_cast<uint64_t>(std::llround(t.step.after - t.step.before))),
          1);
  return img;
}

}  // namespace heapman::store
