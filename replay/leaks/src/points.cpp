// The points a leak search compares (each occurrence of a repeated event, or listed GCs), the
// growth rule every series goes through, and findLeaks, which runs the steps in order.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "heapman/leaks/leaks.h"
#include "heapman/replay/queries.h"

namespace heapman::leaks {

namespace {

std::string bytesText(int64_t v) { return std::to_string(v); }

}  // namespace

Trend classify(const std::vector<uint64_t>& series) {
  Trend t;
  if (series.size() < 2) {
    t.why = "one point only";
    return t;
  }
  const size_t n = series.size();
  t.steps = n - 1;
  uint64_t gain = 0, maxFall = 0, maxRise = 0;
  size_t fallAt = 0, riseAt = 0;
  // Past a dip, the series must regain what it lost and the gain of an average rise on top.
  uint64_t rising = 0, rose = 0;
  for (size_t i = 1; i < n; ++i)
    if (series[i] > series[i - 1]) rising += series[i] - series[i - 1], ++rose;
  const uint64_t past = rose ? rising / rose : 0;
  auto regained = [&](size_t at, size_t before) { return series[at] > series[before] + past; };
  for (size_t i = 1; i < n; ++i) {
    if (series[i] > series[i - 1]) {
      ++t.rises;
      gain += series[i] - series[i - 1];
      if (series[i] - series[i - 1] > maxRise) maxRise = series[i] - series[i - 1], riseAt = i;
    } else if (series[i] < series[i - 1] && series[i - 1] - series[i] > maxFall &&
               !(i + 1 < n && regained(i + 1, i - 1)) &&
               !(i + 2 < n && regained(i + 2, i - 1) && series[i + 1] > series[i])) {
      // A dip that the next points (one or two) more than make up for is no clearing: for a
      // collection or two something else (a stale word on a stack) shared what the holder
      // keeps. A cleared list needs more steps to grow back past where it was.
      maxFall = series[i - 1] - series[i];
      fallAt = i;
    }
  }
  int64_t net = static_cast<int64_t>(series.back()) - static_cast<int64_t>(series.front());
  t.perStep = net / static_cast<int64_t>(t.steps);
  // The trend over the whole series, not step by step: growth by uneven steps (+3, +11, +1, +7)
  // has flat steps between its rises. Mann-Kendall's S (pairs that rise minus pairs that fall)
  // and the Theil-Sen slope (the median of the pairs' slopes).
  int64_t mk = 0;
  std::vector<double> slopes;
  slopes.reserve(n * (n - 1) / 2);
  for (size_t i = 0; i < n; ++i)
    for (size_t j = i + 1; j < n; ++j) {
      mk += series[j] > series[i] ? 1 : series[j] < series[i] ? -1 : 0;
      slopes.push_back((static_cast<double>(series[j]) - static_cast<double>(series[i])) /
                       static_cast<double>(j - i));
    }
  std::nth_element(slopes.begin(), slopes.begin() + slopes.size() / 2, slopes.end());
  t.slope = slopes[slopes.size() / 2];
  // S's z score without the ties' correction (ties only make it larger: this is conservative).
  const double nd = static_cast<double>(n);
  double z = (static_cast<double>(mk) - 1) / std::sqrt(nd * (nd - 1) * (2 * nd + 5) / 18);
  // A plateau stopped growing for good: nothing gained (or under a tenth of the series' average
  // rate) over its last third, at least 2 steps. One flat step is no plateau: two points can show
  // the same state (a program that collects just before the event is dumped at the next
  // repetition's collection, and its last two points can be one state).
  const size_t tail = std::max<size_t>(2, (t.steps + 2) / 3);
  bool plateau = false;
  if (tail < t.steps && net > 0) {
    int64_t tailGain =
        static_cast<int64_t>(series.back()) - static_cast<int64_t>(series[n - 1 - tail]);
    plateau = tailGain * 10 * static_cast<int64_t>(t.steps) <= net * static_cast<int64_t>(tail);
  }
  // With 2 steps, both must rise; with 3, all but one; from 4 on, a significant monotone trend
  // (Mann-Kendall, one-sided 5%) with a positive Theil-Sen slope.
  // A trend is made of many steps: one step that makes most (60%) of the gain is a jump (a
  // pool filled, or shared at one point), not a trend.
  bool jump = t.steps >= 4 && maxRise * 5 > gain * 3;
  bool steady = t.steps <= 2   ? t.rises == t.steps
                : t.steps == 3 ? t.rises >= 2
                               : z >= 1.645 && t.slope > 0 && !jump;
  uint64_t avgRise = t.rises ? gain / t.rises : 0;
  char trend[96];
  std::snprintf(trend, sizeof trend, "no steady trend (Mann-Kendall z %.1f, Theil-Sen slope %.0f)",
                z, t.slope);
  if (t.rises == 0) {
    t.why = maxFall ? "only shrinks" : "the same at every point (reused, or of a fixed size)";
  } else if (net <= 0) {
    t.why = "grew at " + std::to_string(t.rises) + " of " + std::to_string(t.steps) +
            " steps but lost it again (" +
            (net == 0 ? std::string("back where it started") : bytesText(-net) + " less at the end") +
            ": cleared)";
  } else if (maxFall > avgRise) {
    t.why = "lost " + std::to_string(maxFall) + " at step " + std::to_string(fallAt) +
            ", more than a step gains on average (" + std::to_string(avgRise) + "): cleared";
  } else if (plateau) {
    size_t flatFrom = n - 1;
    while (flatFrom > 0 && series[flatFrom] <= series[flatFrom - 1]) --flatFrom;
    if (n - 1 - flatFrom < tail) flatFrom = n - 1 - tail;
    t.why = "grew at " + std::to_string(t.rises) + " of " + std::to_string(t.steps) +
            " steps, flat from point " + std::to_string(flatFrom + 1) + " on (the last " +
            std::to_string(tail) + " steps gain nothing: it fills up, then stops)";
  } else if (!steady) {
    t.why = "grew at " + std::to_string(t.rises) + " of " + std::to_string(t.steps) + " steps";
    if (jump)
      t.why += ", " + std::to_string(maxRise * 100 / gain) + "% of the gain at step " +
               std::to_string(riseAt) + " alone: a jump, not a trend";
    else if (t.steps >= 4)
      t.why += ": " + std::string(trend);
  } else {
    t.grows = true;
  }
  return t;
}

std::vector<LeakPoint> leakPoints(const replay::Replay& r, graph::DumpStore& store,
                                  const LeaksRequest& req, std::string* event,
                                  std::string* because) {
  const replay::LogTables& t = r.tables();
  std::vector<LeakPoint> pts;
  auto gcPoint = [&](uint32_t n) {
    LeakPoint p;
    p.name = "gc:" + std::to_string(n);
    p.limit = p.eventLimit = r.resolve(p.name);
    p.gc = n;
    p.dumped = store.has(n);
    return p;
  };
  std::string name = req.atEach;
  if (name.empty() && req.gcs.empty()) {
    // The custom event that repeats most; ties: the one with more dumped collections after it,
    // then the one that comes later (level_end after level_start).
    std::map<uint32_t, std::pair<size_t, uint64_t>> counts;  // name id -> (count, last seq)
    for (const replay::EventRecord& e : t.events) {
      auto& c = counts[e.nameId];
      ++c.first;
      c.second = e.seq;
    }
    size_t best = 0;
    uint64_t bestSeq = 0;
    for (const auto& [id, c] : counts)
      if (c.first >= req.minPoints && (c.first > best || (c.first == best && c.second > bestSeq))) {
        best = c.first;
        bestSeq = c.second;
        name = t.eventName(id);
      }
    if (!name.empty()) {
      *because = "the custom event that repeats most";
    } else {
      for (uint32_t gc : store.dumpedGcs()) pts.push_back(gcPoint(gc));
      *because = "every dumped collection (no custom event repeats " +
                 std::to_string(req.minPoints) + " times)";
      if (pts.size() < req.minPoints)
        throw replay::ReplayError(
            "no custom event repeats " + std::to_string(req.minPoints) + " times and the log has " +
            std::to_string(pts.size()) +
            " dumped collections: name the points with --at-each EVENT or --gcs N,M,... "
            "(or lower --min-points)");
      *event = "";
      return pts;
    }
  } else if (!req.atEach.empty()) {
    *because = "--at-each";
  }
  if (!req.gcs.empty() && req.atEach.empty()) {
    *because = "--gcs";
    for (uint32_t gc : req.gcs) pts.push_back(gcPoint(gc));
    *event = "";
  } else {
    *event = name;
    // Every occurrence, in order (resolve checks the name and lists the known events).
    r.resolve(name + "#1");
    std::vector<const replay::EventRecord*> occ;
    for (const replay::EventRecord& e : t.events)
      if (t.eventName(e.nameId) == name) occ.push_back(&e);
    for (size_t i = 0; i < occ.size(); ++i) {
      LeakPoint p;
      p.name = name + "#" + std::to_string(occ[i]->occurrence);
      p.limit = p.eventLimit = r.resolve(p.name);
      uint64_t nextSeq = i + 1 < occ.size() ? occ[i + 1]->seq : UINT64_MAX;
      for (const replay::GcRecord& g : t.gcs)
        if (g.ended && g.endSeq > occ[i]->seq) {
          if (g.endSeq < nextSeq) {
            p.gc = g.number;
            p.limit = r.resolve("gc:" + std::to_string(g.number));
            p.dumped = store.has(g.number);
          }
          break;
        }
      pts.push_back(p);
    }
  }
  if (pts.size() < req.minPoints)
    throw replay::ReplayError("only " + std::to_string(pts.size()) + " points (" +
                              (event->empty() ? std::string("GCs") : "'" + *event + "'") +
                              ") where --min-points is " + std::to_string(req.minPoints) +
                              ": record more repetitions or lower --min-points");
  for (size_t i = 1; i < pts.size(); ++i)
    if (pts[i].limit < pts[i - 1].limit)
      throw replay::ReplayError("the points must be in log order (" + pts[i - 1].name +
                                " comes after " + pts[i].name + ")");
  return pts;
}

LeaksResult findLeaks(replay::Replay& r, replay::Attribution& a, const LeaksRequest& req) {
  if (req.minPoints < 2) throw replay::ReplayError("--min-points must be at least 2");
  LeaksResult out;
  // A session of its own: graphSessionFor keys its sessions by the Replay's address, so a
  // later Replay at the address of a destroyed one would get the old one's dump store.
  graph::GraphSession s(r);
  out.points = leakPoints(r, s.store(), req, &out.event, &out.chosenBecause);
  out.warnings = replay::warnings(r);
  growthBySite(r, a, out.points, out, req.top);
  // The last occurrence has no next one to bound its collection: when the heap grew over the
  // repetitions and that collection finds less alive than the first point did (it lost more
  // than all the growth), the program was already on its way out (a game back at its menu, its
  // finalizers run, its session saved and dropped), and the point shows no state of a
  // repetition: it is left out. (What grew and was freed then is still judged, as growth freed
  // at the end.)
  const size_t np = out.points.size();
  if (!out.event.empty() && np > std::max<size_t>(req.minPoints, 2) && out.points.back().gc &&
      out.points[np - 2].liveBytes > out.points.front().liveBytes &&
      out.points.back().liveBytes < out.points.front().liveBytes) {
    const LeakPoint& last = out.points.back();
    out.warnings.push_back(last.name + " left out: its collection (gc:" + std::to_string(last.gc) +
                           ") finds " + std::to_string(last.liveBytes) +
                           " bytes alive, less than the first point's " +
                           std::to_string(out.points.front().liveBytes) +
                           ": the program was on its way out");
    out.points.pop_back();
    out.sites.clear(), out.types.clear(), out.nearMisses.clear();
    growthBySite(r, a, out.points, out, req.top);
  }
  growingContainers(s, a, out.points, req, out);
  return out;
}

}  // namespace heapman::leaks
