// The whole heap graph of a dumped GC for `heapman graph`, collapsed so that big heaps fit a
// picture: one node per type (or per allocating function), one per root range, an edge per pair
// of nodes that any pointer joins (with the pointer count). Node sizes are the summed object
// sizes; retained sizes count each object once per node (retainedBy's rule, Eclipse MAT's).
// Nodes retaining less than `minRetained` are left out, then all but the `maxNodes` that retain
// most; the picture's note says what was cut.
#pragma once

#include <cstdint>

#include "heapman/graph/export.h"
#include "heapman/graph/graph_queries.h"

namespace heapman::graph {

enum class Collapse { kType, kFunction };

struct CollapseRequest {
  Collapse by = Collapse::kType;
  uint64_t minRetained = 0;
  size_t maxNodes = 2000;
};

ExportGraph collapsedGraph(GraphSession& s, replay::Attribution& a, uint64_t limit,
                           const CollapseRequest& request);

}  // namespace heapman::graph
