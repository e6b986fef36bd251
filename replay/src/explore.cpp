// Exploration: allocations and frees of a type or function in a range, and per-type alive counts
// at a point or two (the generation born between them, as FBAllocationTracker shows it).
#include <algorithm>
#include <map>

#include "heapman/replay/queries.h"

namespace heapman::replay {

namespace {

struct Collector : Observer {
  Replay& r;
  Attribution& a;
  const AllocFilter& f;
  Regex typeRe, funcRe;
  std::vector<int8_t> match;  // per info: -1 unknown, 0 no, 1 yes
  AllocsResult& out;
  Collector(Replay& rr, Attribution& aa, const AllocFilter& ff, AllocsResult& o)
      : r(rr), a(aa), f(ff), out(o) {
    if (!f.typeRegex.empty()) typeRe = compileRegex(f.typeRegex, "", "type");
    if (!f.functionRegex.empty()) funcRe = compileRegex(f.functionRegex, "", "function");
    match.assign(r.tables().infos.size(), -1);
  }
  bool matches(uint32_t i) {
    if (match[i] >= 0) return match[i];
    const AllocInfo& info = r.tables().infos[i];
    bool ok = true;
    if (!f.typeRegex.empty()) ok = typeRe.search(typeLabel(r.tables(), info));
    if (ok && !f.functionRegex.empty())
      ok = funcRe.search(a.site(a.siteOf(info.stackId)).function);
    match[i] = ok;
    return ok;
  }
  void add(const LiveObject& o, const char* kind, uint64_t seq) {
    if (!matches(o.info())) return;
    ++out.matched;
    if (f.limit && out.events.size() >= f.limit) return;
    const AllocInfo& info = r.tables().infos[o.info()];
    out.events.push_back({seq, kind, o.address, info.size, log::heapKindName(info.heap),
                          typeLabel(r.tables(), info), a.site(a.siteOf(info.stackId)).function,
                          info.thread});
  }
  void born(const LiveObject& o) override {
    if (f.allocs) add(o, "alloc", o.birthSeq());
  }
  void died(const LiveObject& o, Death how, uint64_t seq) override {
    if (f.frees) add(o, deathName(how), seq);
  }
};

}  // namespace

AllocsResult listAllocs(Replay& r, Attribution& a, uint64_t from, uint64_t to,
                        const AllocFilter& filter) {
  if (to < from)
    throw ReplayError("the range ends (" + r.describe(to) + ") before it starts (" +
                      r.describe(from) + ")");
  AllocsResult out;
  out.from = r.describe(from);
  out.to = r.describe(to);
  out.warnings = warnings(r);
  Collector c(r, a, filter, out);
  r.seek(from);
  r.seek(to, &c);
  return out;
}

TypesResult typeCounts(Replay& r, uint64_t at, const uint64_t* against, SortBy sort, size_t top) {
  TypesResult out;
  out.at = r.describe(at);
  out.warnings = warnings(r);
  const LogTables& t = r.tables();
  std::map<std::string, TypeRow> rows;
  if (against) {
    out.compareTo = r.describe(*against);
    r.seek(*against);
    r.live().forEach([&](const LiveObject& o) {
      const AllocInfo& info = t.infos[o.info()];
      TypeRow& row = rows[typeLabel(t, info)];
      ++row.objectsA;
      row.bytesA += info.size;
    });
  }
  r.seek(at);
  r.live().forEach([&](const LiveObject& o) {
    const AllocInfo& info = t.infos[o.info()];
    TypeRow& row = rows[typeLabel(t, info)];
    ++row.objectsB;
    row.bytesB += info.size;
    if (against && o.birthSeq() >= *against) {
      ++row.bornBetween;
      row.bornBetweenBytes += info.size;
    }
  });
  for (auto& [name, row] : rows) {
    row.type = name;
    out.rows.push_back(row);
  }
  auto key = [&](const TypeRow& x) -> int64_t {
    if (against)
      return sort == SortBy::kObjects ? std::llabs(int64_t(x.objectsB) - int64_t(x.objectsA))
                                      : std::llabs(int64_t(x.bytesB) - int64_t(x.bytesA));
    return sort == SortBy::kObjects ? int64_t(x.objectsB) : int64_t(x.bytesB);
  };
  std::sort(out.rows.begin(), out.rows.end(), [&](const TypeRow& x, const TypeRow& y) {
    if (sort != SortBy::kName && key(x) != key(y)) return key(x) > key(y);
    return x.type < y.type;
  });
  if (top && out.rows.size() > top) out.rows.resize(top);
  return out;
}

}  // namespace heapman::replay
