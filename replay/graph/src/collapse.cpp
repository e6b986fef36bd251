// collapsedGraph (collapse.h).
#include "heapman/graph/collapse.h"

#include <algorithm>
#include <map>
#include <unordered_map>

namespace heapman::graph {

ExportGraph collapsedGraph(GraphSession& s, replay::Attribution& a, uint64_t limit,
                           const CollapseRequest& req) {
  RetainedBy by = req.by == Collapse::kType ? RetainedBy::kType : RetainedBy::kFunction;
  RetainedResult rows = retainedBy(s, a, limit, by, 0);  // also builds the graph and dominators
  const HeapGraph& g = s.graph();
  const DominatorTree& dom = s.dominatorTree();
  const uint32_t n = g.nodeCount();

  // Candidate nodes: each root range, each row; kept by retained size.
  struct Candidate {
    ExportNode node;
    bool keep = false;
  };
  std::vector<Candidate> cand;
  std::vector<uint32_t> keyOf(n, UINT32_MAX);  // graph node -> candidate
  for (uint32_t r = 1; r <= g.rootCount(); ++r) {
    ExportNode e;
    e.label = g.root(r).label;
    e.rootKind = log::rootSourceName(g.root(r).source);
    e.size = g.size(r);
    e.retained = dom.retained[r];
    keyOf[r] = static_cast<uint32_t>(cand.size());
    cand.push_back({e});
  }
  std::unordered_map<std::string, uint32_t> rowOf;
  for (const RetainedRow& row : rows.rows) {
    ExportNode e;
    e.label = row.name;
    e.type = req.by == Collapse::kType ? row.name : "";
    e.site = req.by == Collapse::kFunction ? row.name : "";
    e.size = row.bytes;
    e.retained = row.retained;
    e.count = static_cast<uint32_t>(std::min<uint64_t>(row.objects, UINT32_MAX));
    std::string key = req.by == Collapse::kType ? row.name : row.name + "\x1f" + row.location;
    rowOf.emplace(key, static_cast<uint32_t>(cand.size()));
    cand.push_back({e});
  }
  for (uint32_t v = g.firstObject(); v < n; ++v) {
    NodeFacts f = factsOf(s, a, v, false);
    std::string key = req.by == Collapse::kType
                          ? f.type
                          : (f.function.empty() ? "(untracked)" : f.function) + "\x1f" + f.location;
    auto it = rowOf.find(key);
    if (it != rowOf.end()) keyOf[v] = it->second;
  }
  std::vector<uint32_t> order;
  for (uint32_t c = 0; c < cand.size(); ++c)
    if (cand[c].node.retained >= req.minRetained) order.push_back(c);
  size_t belowMin = cand.size() - order.size();
  std::stable_sort(order.begin(), order.end(), [&](uint32_t x, uint32_t y) {
    return cand[x].node.retained > cand[y].node.retained;
  });
  size_t overMax = order.size() > req.maxNodes ? order.size() - req.maxNodes : 0;
  if (overMax) order.resize(req.maxNodes);

  ExportGraph pic;
  std::vector<uint32_t> picOf(cand.size(), UINT32_MAX);
  std::sort(order.begin(), order.end());  // roots first, then rows by retained size
  for (uint32_t c : order) {
    picOf[c] = static_cast<uint32_t>(pic.nodes.size());
    pic.nodes.push_back(cand[c].node);
  }
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> edges;  // (from, to) -> pointers
  uint64_t cutEdges = 0;
  for (uint32_t v = 1; v < n; ++v) {
    if (keyOf[v] == UINT32_MAX) continue;
    for (uint32_t w : g.out(v)) {
      if (keyOf[w] == UINT32_MAX) continue;
      uint32_t from = picOf[keyOf[v]], to = picOf[keyOf[w]];
      if (from == UINT32_MAX || to == UINT32_MAX) {
        ++cutEdges;
        continue;
      }
      ++edges[{from, to}];
    }
  }
  for (const auto& [fromTo, count] : edges)
    pic.edges.push_back({fromTo.first, fromTo.second, -1, count});
  pic.title = std::string("heap at gc:") + std::to_string(g.gc()) + ", " +
              std::to_string(rows.totalObjects) + " objects, one node per " +
              (req.by == Collapse::kType ? "type" : "allocating function") + " and root range";
  if (belowMin || overMax)
    pic.note = std::to_string(belowMin + overMax) + " of " + std::to_string(cand.size()) +
               " nodes left out (" + std::to_string(belowMin) + " retaining less than " +
               std::to_string(req.minRetained) + " bytes, " + std::to_string(overMax) +
               " beyond the " + std::to_string(req.maxNodes) + " that retain most), with " +
               std::to_string(cutEdges) + " pointers";
  return pic;
}

}  // namespace heapman::graph
