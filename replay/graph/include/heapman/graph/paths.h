// Paths from the roots to objects of a dumped GC, for `heapman paths`: why is this alive?
//
// One breadth-first search backwards from the target(s) over the reversed edges gives every
// node's distance to the nearest target and its next hop towards it; each root range that
// reaches a target then has its shortest path (root -> ... -> target), the shortest first.
// For a type (--type REGEX) the targets are all its objects and the paths are merged per type
// (Eclipse MAT's "merge shortest paths to GC roots"): the objects on them collapse into one node
// per type and distance to the targets, with counts. The picture (ExportGraph) holds the nodes and edges of the paths kept,
// cut to `maxNodes`, with a note of what was left out.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "heapman/graph/export.h"
#include "heapman/graph/graph_queries.h"

namespace heapman::graph {

struct PathsRequest {
  uint64_t address = 0;   // the object containing it, or
  std::string typeRegex;  // every object whose type matches (ReplayError when it does not compile)
  size_t maxPaths = 10;   // shortest paths listed, one per root range at most
  size_t maxNodes = 2000; // nodes in the picture
};

struct PathStep {
  NodeFacts node;
  int64_t offset = -1;  // of the word in the previous step's bytes that points here; -1 first
};

struct PathsResult {
  uint32_t gc = 0;
  uint64_t targets = 0, targetBytes = 0;
  uint64_t rootsReaching = 0;        // root ranges with a path to a target
  std::vector<std::vector<PathStep>> paths;  // root first, target last; shortest first
  ExportGraph picture;
};

PathsResult rootPaths(GraphSession& s, replay::Attribution& a, uint64_t limit,
                      const PathsRequest& request);

}  // namespace heapman::graph
