// Churn: per charged site, what was allocated in a range and what died in it (collected by GCs,
// or freed explicitly): which functions make the most garbage.
#include <algorithm>

#include "heapman/replay/queries.h"

namespace heapman::replay {

ChurnResult churn(Replay& r, Attribution& a, uint64_t from, uint64_t to, SortBy sort, size_t top) {
  if (to < from)
    throw ReplayError("the range ends (" + r.describe(to) + ") before it starts (" +
                      r.describe(from) + ")");
  return churn(r, a, countGarbage(r, from, to), from, to, sort, top);
}

void GarbageCounter::add(const ChurnSpan& s) {
  for (size_t k = 0; k < s.infos.size(); ++k) {
    const uint64_t* c = &s.counts[k * ChurnSpan::kColumns];
    births.add(s.infos[k], c[0], c[1]);
    collected.add(s.infos[k], c[2], c[3]);
    freed.add(s.infos[k], c[4], c[5]);
  }
}

GarbageCounter countGarbage(Replay& r, uint64_t from, uint64_t to) {
  const LogTables& t = r.tables();
  GarbageCounter c(t);
  const std::vector<ChurnSpan>& spans = t.churnSpans;
  // Span boundaries: b(i) = spans[i].from for i < n, and b(n) = the log's end. [from, to) covers
  // the spans [first, last): first, the first boundary at or after `from` (0 when nothing happens
  // before `from`); last, the last one at or before `to` (n when nothing happens from `to` on).
  const size_t n = spans.size();
  if (t.churnSpansIndexed && n > 0) {
    size_t first = 0;
    if (from > t.firstSeq)
      while (first < n && spans[first].from < from) ++first;
    size_t last = n;
    if (to < t.endSeq) {
      last = 0;  // spans[0].from is 0
      while (last + 1 < n && spans[last + 1].from <= to) ++last;
    }
    if (first < last) {
      r.seek(from);
      r.seek(spans[first].from > from ? spans[first].from : from, &c);
      for (size_t i = first; i < last; ++i) c.add(spans[i]);
      if (last < n) {
        r.seek(spans[last].from);
        r.seek(to, &c);
      }
      return c;
    }
  }
  r.seek(from);
  r.seek(to, &c);
  return c;
}

ChurnResult churn(Replay& r, Attribution& a, const GarbageCounter& counted, uint64_t from,
                  uint64_t to, SortBy sort, size_t top) {
  ChurnResult out;
  out.from = r.describe(from);
  out.to = r.describe(to);
  out.warnings = warnings(r);
  const LogTables& t = r.tables();
  GarbageCounter c = counted;
  std::vector<uint32_t> ids;
  size_t n = std::max({c.births.objects.size(), c.collected.objects.size(), c.freed.objects.size()});
  for (InfoCounts* x : {&c.births, &c.collected, &c.freed}) x->objects.resize(n), x->bytes.resize(n);
  for (size_t i = 0; i < n; ++i)
    if (c.births.objects[i] || c.collected.objects[i] || c.freed.objects[i])
      ids.push_back(static_cast<uint32_t>(i));
  a.prepareInfos(ids);
  std::vector<ChurnRow> rows;
  std::vector<int64_t> rowOfSite;
  for (uint32_t i : ids) {
    uint32_t s = a.siteOf(t.infos[i].stackId);
    if (s >= rowOfSite.size()) rowOfSite.resize(s + 1, -1);
    if (rowOfSite[s] < 0) {
      rowOfSite[s] = static_cast<int64_t>(rows.size());
      rows.push_back(ChurnRow{a.site(s)});
    }
    ChurnRow& row = rows[static_cast<size_t>(rowOfSite[s])];
    row.allocatedObjects += c.births.objects[i];
    row.allocatedBytes += c.births.bytes[i];
    row.collectedObjects += c.collected.objects[i];
    row.collectedBytes += c.collected.bytes[i];
    row.freedObjects += c.freed.objects[i];
    row.freedBytes += c.freed.bytes[i];
    out.collectedObjects += c.collected.objects[i];
    out.collectedBytes += c.collected.bytes[i];
    out.freedObjects += c.freed.objects[i];
    out.freedBytes += c.freed.bytes[i];
  }
  std::sort(rows.begin(), rows.end(), [&](const ChurnRow& x, const ChurnRow& y) {
    if (sort == SortBy::kBytes && x.garbageBytes() != y.garbageBytes())
      return x.garbageBytes() > y.garbageBytes();
    if (sort == SortBy::kObjects && x.garbageObjects() != y.garbageObjects())
      return x.garbageObjects() > y.garbageObjects();
    return x.site.function != y.site.function ? x.site.function < y.site.function
                                              : x.site.module < y.site.module;
  });
  if (top && rows.size() > top) rows.resize(top);
  out.rows = std::move(rows);
  return out;
}

}  // namespace heapman::replay
