// The points a leak search compares (each occurrence of a repeated event, or listed GCs), the
// growth rule every series goes through, and findLeaks, which runs the steps in order.
#include <algorithm>
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
  t.steps = series.size() - 1;
  uint64_t gain = 0, maxFall = 0;
  size_t fallAt = 0;
  for (size_t i = 1; i < series.size(); ++i) {
    if (series[i] > series[i - 1]) {
      ++t.rises;
      gain += series[i] - series[i - 1];
    } else if (series[i] < series[i - 1] && series[i - 1] - series[i] > maxFall) {
      maxFall = series[i - 1] - series[i];
      fallAt = i;
    }
  }
  int64_t net = static_cast<int64_t>(series.back()) - static_cast<int64_t>(series.front());
  t.perStep = net / static_cast<int64_t>(t.steps);
  // All steps rise, or all but one when there are 3 steps or more (two points may show the
  // same state: a program that collects just before the event is dumped at the next
  // repetition's collection, and its last two points can be one state).
  size_t need = t.steps <= 2 ? t.steps : t.steps - 1;
  uint64_t avgRise = t.rises ? gain / t.rises : 0;
  if (t.rises == 0) {
    t.why = maxFall ? "only shrinks" : "the same at every point (reused, or of a fixed size)";
  } else if (net <= 0) {
    t.why = "grew at " + std::to_string(t.rises) + " of " + std::to_string(t.steps) +
            " steps but lost it again (" + bytesText(-net) + " less at the end: cleared)";
  } else if (maxFall > avgRise) {
    t.why = "lost " + std::to_string(maxFall) + " at step " + std::to_string(fallAt) +
            ", more than a step gains on average (" + std::to_string(avgRise) + "): cleared";
  } else if (t.rises < need) {
    size_t flatFrom = series.size() - 1;
    while (flatFrom > 0 && series[flatFrom] <= series[flatFrom - 1]) --flatFrom;
    t.why = "grew at " + std::to_string(t.rises) + " of " + std::to_string(t.steps) + " steps";
    if (flatFrom < series.size() - 1)
      t.why += ", flat from point " + std::to_string(flatFrom + 1) + " on (it fills up, then stops)";
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
  growingContainers(s, a, out.points, req, out);
  return out;
}

}  // namespace heapman::leaks
