// Blame: live bytes and objects per charged site at the current position.
#include <algorithm>
#include <map>

#include "heapman/replay/queries.h"

namespace heapman::replay {

const char* frameRoleName(FrameRole r) {
  switch (r) {
    case FrameRole::kExcluded: return "excluded";
    case FrameRole::kCharged: return "charged";
    case FrameRole::kCaller: return "caller";
  }
  return "?";
}

namespace {

// The frames of a stack, leaf first, each marked: excluded (skipped by blame), the charged one
// (the first frame, from the leaf, with the row's site; the leaf when every frame is excluded),
// or a caller above it.
std::vector<BlameFrame> markedStack(Attribution& a, uint32_t stackId, const Site& site) {
  std::vector<BlameFrame> out;
  bool charged = false;
  for (uint32_t node : a.tables().stackNodes(stackId)) {
    for (const NamedFrame& f : a.namer().frames(node)) {
      FrameRole role = FrameRole::kCaller;
      if (!charged && f.function == site.function && f.module == site.module) {
        role = FrameRole::kCharged;
        charged = true;
      } else if (!charged && a.exclusions().excluded(f)) {
        role = FrameRole::kExcluded;
      }
      out.push_back({f, role});
    }
  }
  return out;
}

}  // namespace

BlameResult blame(Replay& r, Attribution& a, SortBy sort, size_t top, bool stacks) {
  BlameResult out;
  out.point = r.describe(r.position());
  out.warnings = warnings(r);
  const LogTables& t = r.tables();
  InfoCounts live = countLive(r);
  std::vector<uint32_t> ids = live.ids();
  a.prepareInfos(ids);
  std::vector<BlameRow> rows;
  std::vector<std::map<std::string, TypeShare>> types;
  std::vector<int64_t> rowOfSite;
  std::vector<std::map<uint32_t, std::pair<uint64_t, uint64_t>>> byStack;  // bytes, objects
  for (uint32_t i : ids) {
    const AllocInfo& info = t.infos[i];
    uint32_t s = a.siteOf(info.stackId);
    if (s >= rowOfSite.size()) rowOfSite.resize(s + 1, -1);
    if (rowOfSite[s] < 0) {
      rowOfSite[s] = static_cast<int64_t>(rows.size());
      rows.push_back(BlameRow{a.site(s), 0, 0, 0, {}, {}, 0, 0});
      types.emplace_back();
      byStack.emplace_back();
    }
    auto k = static_cast<size_t>(rowOfSite[s]);
    if (stacks) {
      auto& st = byStack[k][info.stackId];
      st.first += live.bytes[i];
      st.second += live.objects[i];
    }
    rows[k].bytes += live.bytes[i];
    rows[k].objects += live.objects[i];
    TypeShare& ts = types[k][typeLabel(t, info)];
    ts.bytes += live.bytes[i];
    ts.objects += live.objects[i];
    out.totalBytes += live.bytes[i];
    out.totalObjects += live.objects[i];
  }
  for (size_t k = 0; k < rows.size(); ++k) {
    BlameRow& row = rows[k];
    row.share = out.totalBytes ? double(row.bytes) / double(out.totalBytes) : 0;
    for (auto& [name, ts] : types[k]) {
      ts.type = name;
      row.types.push_back(ts);
    }
    std::sort(row.types.begin(), row.types.end(), [](const TypeShare& x, const TypeShare& y) {
      return x.bytes != y.bytes ? x.bytes > y.bytes : x.type < y.type;
    });
    if (row.types.size() > 3) row.types.resize(3);
    if (!stacks) continue;
    uint32_t best = 0;
    bool have = false;
    for (const auto& [id, st] : byStack[k])  // ascending ids: the first of equal bytes wins
      if (!have || st.first > row.stackBytes) {
        have = true;
        best = id;
        row.stackBytes = st.first;
        row.stackObjects = st.second;
      }
    row.stack = markedStack(a, best, row.site);
  }
  auto byName = [](const BlameRow& x, const BlameRow& y) {
    return x.site.function != y.site.function ? x.site.function < y.site.function
                                              : x.site.module < y.site.module;
  };
  std::sort(rows.begin(), rows.end(), [&](const BlameRow& x, const BlameRow& y) {
    if (sort == SortBy::kBytes && x.bytes != y.bytes) return x.bytes > y.bytes;
    if (sort == SortBy::kObjects && x.objects != y.objects) return x.objects > y.objects;
    return byName(x, y);
  });
  if (top && rows.size() > top) rows.resize(top);
  out.rows = std::move(rows);
  return out;
}

}  // namespace heapman::replay
