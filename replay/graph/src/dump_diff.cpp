// Two dumped GCs compared object by object (dump_diff.h).
#include "heapman/graph/dump_diff.h"

#include <algorithm>
#include <cstdlib>
#include <unordered_map>

namespace heapman::graph {

namespace {

// Rows keyed by name (and location, for sites), shared by both points.
class Rows {
 public:
  uint32_t id(const std::string& name, const std::string& location) {
    auto [it, fresh] = ids_.try_emplace(name + '\x1f' + location, static_cast<uint32_t>(rows.size()));
    if (fresh) {
      rows.emplace_back();
      rows.back().name = name;
      rows.back().location = location;
    }
    return it->second;
  }
  std::vector<DumpDiffRow> rows;

 private:
  std::unordered_map<std::string, uint32_t> ids_;
};

struct Object {
  uint64_t address = 0, birthSeq = 0, size = 0;
  uint32_t type = 0, site = 0;
};

// The objects of the dumped GC at `limit`, by address, with their rows' retained sizes added.
std::vector<Object> objectsAt(GraphSession& s, replay::Attribution& a, uint64_t limit, Rows& types,
                              Rows& sites, bool first) {
  const HeapGraph& g = s.at(limit);
  const DominatorTree& t = s.dominatorTree();
  // Each point's groups, then their rows (shared by both points).
  auto grouped = [&](Rows& rows, RetainedBy by) {
    NodeGroups groups = groupNodes(s, a, by);
    std::vector<uint64_t> retained = retainedPerGroup(t, groups.group, groups.name.size());
    std::vector<uint32_t> rowOf(groups.name.size());
    for (size_t i = 0; i < rowOf.size(); ++i) {
      rowOf[i] = rows.id(groups.name[i], groups.location[i]);
      (first ? rows.rows[rowOf[i]].retainedA : rows.rows[rowOf[i]].retainedB) += retained[i];
    }
    for (uint32_t& x : groups.group)
      if (x != UINT32_MAX) x = rowOf[x];
    return std::move(groups.group);
  };
  std::vector<uint32_t> typeOf = grouped(types, RetainedBy::kType);
  std::vector<uint32_t> siteOf = grouped(sites, RetainedBy::kFunction);
  std::vector<Object> out;
  out.reserve(g.nodeCount() - g.firstObject());
  for (uint32_t v = g.firstObject(); v < g.nodeCount(); ++v) {
    uint64_t address = g.address(v), birth = 0;
    if (auto lo = s.replay().live().find(address)) birth = lo->birthSeq();
    out.push_back({address, birth, g.size(v), typeOf[v], siteOf[v]});
  }
  std::sort(out.begin(), out.end(),
            [](const Object& x, const Object& y) { return x.address < y.address; });
  return out;
}

void order(std::vector<DumpDiffRow>& rows, replay::SortBy sort, size_t top) {
  auto key = [sort](const DumpDiffRow& r) -> uint64_t {
    if (sort == replay::SortBy::kObjects) return std::llabs(r.deltaObjects());
    return std::llabs(r.deltaBytes());
  };
  std::stable_sort(rows.begin(), rows.end(), [&](const DumpDiffRow& x, const DumpDiffRow& y) {
    if (sort != replay::SortBy::kName && key(x) != key(y)) return key(x) > key(y);
    if (x.name != y.name) return x.name < y.name;
    return x.location < y.location;
  });
  if (top && rows.size() > top) rows.resize(top);
}

}  // namespace

DumpDiffResult dumpDiff(GraphSession& s, replay::Attribution& a, uint64_t from, uint64_t to,
                        replay::SortBy sort, size_t top) {
  DumpDiffResult res;
  Rows types, sites;
  std::vector<Object> before = objectsAt(s, a, from, types, sites, true);
  res.gcA = s.graph().gc();
  std::vector<Object> after = objectsAt(s, a, to, types, sites, false);
  res.gcB = s.graph().gc();

  auto add = [&](const Object& o, uint64_t DumpDiffRow::*objects, uint64_t DumpDiffRow::*bytes) {
    for (DumpDiffRow* r : {&types.rows[o.type], &sites.rows[o.site]}) {
      ++(r->*objects);
      r->*bytes += o.size;
    }
  };
  // Merge by address: an object survived when the same address holds the same birth.
  size_t i = 0, j = 0;
  while (i < before.size() || j < after.size()) {
    if (j == after.size() || (i < before.size() && before[i].address < after[j].address)) {
      add(before[i++], &DumpDiffRow::freedObjects, &DumpDiffRow::freedBytes);
      ++res.freedObjects;
    } else if (i == before.size() || after[j].address < before[i].address) {
      add(after[j++], &DumpDiffRow::newObjects, &DumpDiffRow::newBytes);
      ++res.newObjects;
    } else if (before[i].birthSeq == after[j].birthSeq) {
      add(after[j++], &DumpDiffRow::survivedObjects, &DumpDiffRow::survivedBytes);
      ++i;
      ++res.survivedObjects;
    } else {  // the address was freed and reused in between
      add(before[i++], &DumpDiffRow::freedObjects, &DumpDiffRow::freedBytes);
      add(after[j++], &DumpDiffRow::newObjects, &DumpDiffRow::newBytes);
      ++res.freedObjects;
      ++res.newObjects;
    }
  }
  res.types = std::move(types.rows);
  res.sites = std::move(sites.rows);
  order(res.types, sort, top);
  order(res.sites, sort, top);
  return res;
}

}  // namespace heapman::graph
