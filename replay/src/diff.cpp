// Growth diff: per site and per type, objects and bytes at two points of one log.
#include <algorithm>
#include <cstdlib>
#include <map>

#include "heapman/replay/queries.h"

namespace heapman::replay {

void sortDiffRows(std::vector<DiffRow>& rows, SortBy sort, size_t top) {
  std::sort(rows.begin(), rows.end(), [&](const DiffRow& x, const DiffRow& y) {
    if (sort == SortBy::kBytes && std::llabs(x.deltaBytes()) != std::llabs(y.deltaBytes()))
      return std::llabs(x.deltaBytes()) > std::llabs(y.deltaBytes());
    if (sort == SortBy::kObjects && std::llabs(x.deltaObjects()) != std::llabs(y.deltaObjects()))
      return std::llabs(x.deltaObjects()) > std::llabs(y.deltaObjects());
    return x.name != y.name ? x.name < y.name : x.module < y.module;
  });
  if (top && rows.size() > top) rows.resize(top);
}

namespace {

std::vector<DiffRow> values(std::map<std::string, DiffRow>& m) {
  std::vector<DiffRow> v;
  for (auto& [k, row] : m) v.push_back(std::move(row));
  return v;
}

}  // namespace

void accumulateDiff(const LogTables& t, Attribution& a, const InfoCounts& c, bool sideB,
                std::map<std::string, DiffRow>& functions, std::map<std::string, DiffRow>& types) {
  std::vector<uint32_t> ids = c.ids();
  a.prepareInfos(ids);
  for (uint32_t i : ids) {
    const AllocInfo& info = t.infos[i];
    const Site& s = a.site(a.siteOf(info.stackId));
    DiffRow& f = functions[s.function + '\0' + s.module];
    if (f.name.empty()) f.name = s.function, f.module = s.module, f.location = s.location;
    std::string tl = typeLabel(t, info);
    DiffRow& ty = types[tl];
    ty.name = tl;
    for (DiffRow* row : {&f, &ty}) {
      (sideB ? row->objectsB : row->objectsA) += c.objects[i];
      (sideB ? row->bytesB : row->bytesA) += c.bytes[i];
    }
  }
}

DiffResult diff(Replay& r, Attribution& a, uint64_t from, uint64_t to, bool listBorn, SortBy sort,
                size_t top, size_t bornLimit) {
  DiffResult out;
  out.from = r.describe(from);
  out.to = r.describe(to);
  out.warnings = warnings(r);
  const LogTables& t = r.tables();
  std::map<std::string, DiffRow> functions, types;
  r.seek(from);
  accumulateDiff(t, a, countLive(r), false, functions, types);
  r.seek(to);
  accumulateDiff(t, a, countLive(r), true, functions, types);
  out.functions = values(functions);
  out.types = values(types);
  sortDiffRows(out.functions, sort, top);
  sortDiffRows(out.types, sort, top);
  if (listBorn) {
    std::vector<LiveObject> born;
    r.live().forEach([&](const LiveObject& o) {
      if (o.birthSeq() >= from) born.push_back(o);
    });
    std::sort(born.begin(), born.end(), [](const LiveObject& x, const LiveObject& y) {
      return x.birthSeq() < y.birthSeq();
    });
    if (bornLimit && born.size() > bornLimit) born.resize(bornLimit);
    std::vector<uint32_t> ids;
    for (const LiveObject& o : born) ids.push_back(o.info());
    a.prepareInfos(ids);
    for (const LiveObject& o : born) {
      const AllocInfo& info = t.infos[o.info()];
      out.born.push_back({o.address, info.size, o.birthSeq(), r.epochOf(o.birthSeq()),
                          typeLabel(t, info), a.site(a.siteOf(info.stackId)).function});
    }
  }
  return out;
}

}  // namespace heapman::replay
