// Two logs (two runs or two builds of one level): blame and per-type deltas between them. Sites
// match by function name and module file name, so runs with different load addresses compare.
#include <map>

#include "heapman/replay/queries.h"

namespace heapman::replay {

DiffResult compareLogs(Replay& ra, Attribution& aa, uint64_t pa, Replay& rb, Attribution& ab,
                       uint64_t pb, SortBy sort, size_t top) {
  DiffResult out;
  out.from = ra.reader().name() + "@" + ra.describe(pa);
  out.to = rb.reader().name() + "@" + rb.describe(pb);
  for (const auto& w : warnings(ra)) out.warnings.push_back(ra.reader().name() + ": " + w);
  for (const auto& w : warnings(rb)) out.warnings.push_back(rb.reader().name() + ": " + w);
  std::map<std::string, DiffRow> functions, types;
  for (int side = 0; side < 2; ++side) {
    Replay& r = side ? rb : ra;
    Attribution& a = side ? ab : aa;
    r.seek(side ? pb : pa);
    accumulateDiff(r.tables(), a, countLive(r), side == 1, functions, types);
  }
  for (auto& [k, row] : functions) out.functions.push_back(row);
  for (auto& [k, row] : types) out.types.push_back(row);
  sortDiffRows(out.functions, sort, top);
  sortDiffRows(out.types, sort, top);
  return out;
}

}  // namespace heapman::replay
