#include "heapman/store/trend.h"

#include "heapman/replay/frames.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <unordered_map>

namespace heapman::store {

Step findStep(const std::vector<double>& v, double sigmas, double minRise) {
  Step best;
  size_t n = v.size();
  if (n < 2) return best;
  // Prefix sums: the squared error of a segment is sum(x^2) - sum(x)^2 / count.
  std::vector<double> s(n + 1, 0), q(n + 1, 0);
  for (size_t i = 0; i < n; ++i) s[i + 1] = s[i] + v[i], q[i + 1] = q[i] + v[i] * v[i];
  double bestErr = INFINITY;
  for (size_t k = 1; k < n; ++k) {
    double nl = static_cast<double>(k), nr = static_cast<double>(n - k);
    double ml = s[k] / nl, mr = (s[n] - s[k]) / nr;
    if (mr <= ml) continue;
    double err = (q[k] - s[k] * s[k] / nl) + (q[n] - q[k] - (s[n] - s[k]) * (s[n] - s[k]) / nr);
    if (err < bestErr) {
      bestErr = err;
      best.at = k, best.before = ml, best.after = mr;
    }
  }
  if (!std::isfinite(bestErr)) return best;
  // The noise: the median absolute residual about the two means, as a standard deviation
  // (x 1.4826 for normal noise). A median, so that one run far off (a spike, a slow machine)
  // does not hide the step as the squared residuals' mean would.
  std::vector<double> res;
  for (size_t i = 0; i < n; ++i) res.push_back(std::fabs(v[i] - (i < best.at ? best.before : best.after)));
  std::nth_element(res.begin(), res.begin() + static_cast<long>(n / 2), res.end());
  best.noise = 1.4826 * res[n / 2];
  double rise = best.after - best.before;
  best.found = rise > sigmas * best.noise && rise > minRise * std::fabs(best.before);
  return best;
}

bool figureOf(const RunSummary& s, const FigureQuery& q, uint64_t* value) {
  auto leaks = [&](const char* kind) {
    return static_cast<uint64_t>(std::count_if(s.leaks.begin(), s.leaks.end(),
                                               [&](const LeakRow& l) { return l.kind == kind; }));
  };
  switch (q.kind) {
    case FigureKind::kLive: break;
    case FigureKind::kGcCount: *value = s.run.gcCount; return true;
    case FigureKind::kGcPauseP99: {
      std::vector<uint64_t> pauses;
      for (const GcRow& g : s.gcs) pauses.push_back(g.pauseNs);
      *value = pauseP99(std::move(pauses));
      return true;
    }
    // The leak finder runs only with 3 repetitions or more (summarize): fewer, no figure.
    case FigureKind::kLeakSuspects: *value = leaks("suspect"); return s.run.repetitions >= 3;
    case FigureKind::kGrowingSites: *value = leaks("site"); return s.run.repetitions >= 3;
  }
  std::string point = q.point.empty() ? "peak" : q.point;
  bool allHeaps = q.heap.empty() || q.heap == "all";
  if (point == "peak" && allHeaps && q.siteRegex.empty() && q.typeRegex.empty()) {
    *value = s.run.peakBytes;
    return true;
  }
  if (!s.liveAt(point, q.heap, value)) return false;
  if (q.siteRegex.empty() && q.typeRegex.empty()) return true;
  bool site = !q.siteRegex.empty();
  replay::Regex re = replay::compileRegex(site ? q.siteRegex : q.typeRegex,
                                          site ? "--site" : "--type", site ? "function" : "type");
  *value = 0;
  if (site) {
    for (const SiteRow& x : s.sites)
      if (x.point == point && re.search(x.function)) *value += x.bytes;
  } else {
    for (const TypeRow& x : s.types)
      if (x.point == point && re.search(x.type)) *value += x.bytes;
  }
  return true;
}

namespace {

bool numeric(const std::string& s, double* out) {
  if (s.empty()) return false;
  char* end = nullptr;
  double d = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size()) return false;
  *out = d;
  return true;
}

}  // namespace

TrendResult trend(Store& st, const std::string& tagKey, const FigureQuery& q,
                  const RunSummary* current, const std::string& currentTag) {
  TrendResult res;
  res.tagKey = tagKey;
  bool leak = q.kind == FigureKind::kLeakSuspects || q.kind == FigureKind::kGrowingSites;
  std::vector<StoredRun> runs = st.runs();
  std::vector<FigureValue> fig = st.figure(q);
  std::unordered_map<std::string, const FigureValue*> byId;
  for (const FigureValue& f : fig) byId[f.logId] = &f;
  struct Item {
    std::string tag;
    double number = 0;
    int64_t start = 0;
    std::string id;
    uint64_t value = 0;
  };
  std::vector<Item> items;
  size_t untagged = 0, without = 0;
  bool allNumeric = true;
  for (const StoredRun& r : runs) {
    auto t = r.tags.find(tagKey);
    if (t == r.tags.end()) {
      ++untagged;
      continue;
    }
    auto f = byId.find(r.logId);
    if (f == byId.end() || !f->second->present) {
      ++without;
      continue;
    }
    Item it{t->second, 0, r.startWallNs, r.logId, f->second->value};
    allNumeric = allNumeric && numeric(it.tag, &it.number);
    items.push_back(std::move(it));
  }
  // Numbers (build numbers) in their order; anything else (commit hashes) in the order the runs
  // started, which the text of such tags does not tell.
  std::stable_sort(items.begin(), items.end(), [&](const Item& a, const Item& b) {
    if (allNumeric && a.number != b.number) return a.number < b.number;
    if (a.start != b.start) return a.start < b.start;
    return a.tag < b.tag;
  });
  std::vector<double> values;
  for (const Item& it : items) {
    res.rows.push_back({it.tag, it.id, it.value});
    values.push_back(static_cast<double>(it.value));
  }
  if (current) {
    uint64_t v = 0;
    if (figureOf(*current, q, &v)) {
      res.rows.push_back({currentTag, current->run.logId, v});
      values.push_back(static_cast<double>(v));
    } else {
      res.warnings.push_back(currentTag + (leak ? " has no leak figures (no custom event repeats "
                                                  "3 times): left out"
                                                : " has no point " + q.point + ": left out"));
    }
  }
  res.step = findStep(values);
  if (untagged)
    res.warnings.push_back(std::to_string(untagged) + " run(s) without a tag '" + tagKey +
                           "' left out");
  if (without && leak)
    res.warnings.push_back(std::to_string(without) +
                           " run(s) without leak figures (no custom event repeats 3 times) left "
                           "out");
  if (without && q.kind == FigureKind::kLive)
    res.warnings.push_back(std::to_string(without) + " run(s) without the point " +
                           (q.point.empty() ? std::string("peak") : q.point) + " left out");
  if (runs.empty() && !current) res.warnings.push_back("the store holds no runs yet (heapman ingest adds them)");
  return res;
}

}  // namespace heapman::store
