// Two dumped GCs compared object by object, for heapman's diff and types verbs: which objects of
// the second dump were born after the first (new), which are in both (survived: the same address
// and the same birth; Boehm never moves an object), which of the first are gone (freed or
// collected), per type and per blame site, with the group's retained size at both points.
//
// The live-set diff (replay::diff) says how much each group grew; this says whether the growth is
// new objects piling up or old ones staying, and what the group holds through the dominator tree.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "heapman/graph/graph_queries.h"
#include "heapman/replay/queries.h"

namespace heapman::graph {

struct DumpDiffRow {
  std::string name, location;  // type label; or blame function and its file:line
  uint64_t newObjects = 0, newBytes = 0;            // in B only
  uint64_t survivedObjects = 0, survivedBytes = 0;  // in both (counted at B)
  uint64_t freedObjects = 0, freedBytes = 0;        // in A only
  uint64_t retainedA = 0, retainedB = 0;            // retainedBy()'s rule at each point
  int64_t deltaObjects() const { return int64_t(newObjects) - int64_t(freedObjects); }
  int64_t deltaBytes() const { return int64_t(newBytes) - int64_t(freedBytes); }
};

struct DumpDiffResult {
  uint32_t gcA = 0, gcB = 0;
  uint64_t newObjects = 0, survivedObjects = 0, freedObjects = 0;
  std::vector<DumpDiffRow> types, sites;  // sorted as `sort` says, each cut to `top` (0: all)
};

// Both points must name dumped GCs (GraphError otherwise, listing the dumps). Sorted by
// |deltaBytes| (kBytes), |deltaObjects| (kObjects) or name, ties by name.
DumpDiffResult dumpDiff(GraphSession& s, replay::Attribution& a, uint64_t from, uint64_t to,
                        replay::SortBy sort, size_t top);

}  // namespace heapman::graph
