// Step 1: live objects and bytes per allocating site and per type at each point, from the
// replay's live sets, and the rows that grow at every step (classify's rule).
#include <algorithm>
#include <map>

#include "heapman/leaks/leaks.h"
#include "heapman/replay/queries.h"

namespace heapman::leaks {

namespace {

// The largest gain between two neighbouring points: how near misses are ranked.
uint64_t bestStep(const std::vector<uint64_t>& s) {
  uint64_t best = 0;
  for (size_t i = 1; i < s.size(); ++i)
    if (s[i] > s[i - 1]) best = std::max(best, s[i] - s[i - 1]);
  return best;
}

void finish(std::vector<GrowthRow>& rows, std::vector<GrowthRow>& kept,
            std::vector<NearMiss>& misses, const char* kind, size_t top) {
  std::vector<GrowthRow*> missed;
  for (GrowthRow& row : rows) {
    row.trend = classify(row.bytes);
    if (row.trend.grows)
      kept.push_back(row);
    else if (bestStep(row.bytes) > 0)
      missed.push_back(&row);
  }
  std::stable_sort(kept.begin(), kept.end(), [](const GrowthRow& x, const GrowthRow& y) {
    return x.trend.perStep > y.trend.perStep;
  });
  if (top && kept.size() > top) kept.resize(top);
  std::stable_sort(missed.begin(), missed.end(), [](const GrowthRow* x, const GrowthRow* y) {
    return bestStep(x->bytes) > bestStep(y->bytes);
  });
  for (size_t i = 0; i < missed.size() && i < std::max<size_t>(top, 5); ++i) {
    std::string what = std::string(kind) + " " + missed[i]->name;
    if (!missed[i]->module.empty()) what += " (" + missed[i]->module + ")";
    misses.push_back({what, missed[i]->trend.why});
  }
}

}  // namespace

void growthBySite(replay::Replay& r, replay::Attribution& a, std::vector<LeakPoint>& points,
                  LeaksResult& out, size_t top) {
  const replay::LogTables& t = r.tables();
  const size_t k = points.size();
  std::map<uint32_t, GrowthRow> sites;      // by attribution site id
  std::map<std::string, GrowthRow> types;
  std::vector<uint32_t> prepared;
  for (size_t p = 0; p < k; ++p) {
    r.seek(points[p].limit);
    replay::InfoCounts c = replay::countLive(r);
    std::vector<uint32_t> ids = c.ids(), fresh;
    for (uint32_t id : ids)
      if (!std::binary_search(prepared.begin(), prepared.end(), id)) fresh.push_back(id);
    if (!fresh.empty()) {
      a.prepareInfos(fresh);
      prepared.insert(prepared.end(), fresh.begin(), fresh.end());
      std::sort(prepared.begin(), prepared.end());
    }
    points[p].liveObjects = r.live().size();
    points[p].liveBytes = r.counters().liveBytes;
    for (uint32_t id : ids) {
      const replay::AllocInfo& info = t.infos[id];
      uint32_t site = a.siteOf(info.stackId);
      for (GrowthRow* row : {&sites[site], &types[replay::typeLabel(t, info)]}) {
        if (row->bytes.empty()) row->objects.assign(k, 0), row->bytes.assign(k, 0);
        row->objects[p] += c.objects[id];
        row->bytes[p] += c.bytes[id];
      }
    }
  }
  std::vector<GrowthRow> siteRows, typeRows;
  for (auto& [id, row] : sites) {
    const replay::Site& s = a.site(id);
    row.name = s.function, row.module = s.module, row.location = s.location;
    siteRows.push_back(std::move(row));
  }
  for (auto& [name, row] : types) {
    row.name = name;
    typeRows.push_back(std::move(row));
  }
  finish(siteRows, out.sites, out.nearMisses, "site", top);
  finish(typeRows, out.types, out.nearMisses, "type", top);
}

}  // namespace heapman::leaks
