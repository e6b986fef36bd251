// collapsedGraph (collapse.h).
#include "heapman/graph/collapse.h"

#include <algorithm>
#include <map>
#include <unordered_map>

namespace heapman::graph {

ExportGraph collapsedGraph(GraphSession& s, replay::Attribution& a, uint64_t limit,
                           const CollapseRequest& req) {
  RetainedBy by = req.by == Collapse::kType ? RetainedBy::kType : RetainedBy::kFunction;
  const HeapGraph& g = s.at(limit);
  const DominatorTree& dom = s.dominatorTree();
  const uint32_t n = g.nodeCount();
  NodeGroups groups = groupNodes(s, a, by);
  const size_t rows = groups.name.size();
  std::vector<uint64_t> retained = retainedPerGroup(dom, groups.group, rows);
  std::vector<uint64_t> bytes(rows, 0), objects(rows, 0);
  for (uint32_t v = g.firstObject(); v < n; ++v) {
    bytes[groups.group[v]] += g.size(v);
    ++objects[groups.group[v]];
  }

  // Candidate nodes: each root range, each group (by retained size, then name); kept by
  // retained size.
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
  std::vector<uint32_t> byRetained(rows);
  for (uint32_t i = 0; i < rows; ++i) byRetained[i] = i;
  std::stable_sort(byRetained.begin(), byRetained.end(), [&](uint32_t x, uint32_t y) {
    return retained[x] != retained[y] ? retained[x] > retained[y] : groups.name[x] < groups.name[y];
  });
  std::vector<uint32_t> candOfGroup(rows);
  for (uint32_t i : byRetained) {
    ExportNode e;
    e.label = groups.name[i];
    e.type = req.by == Collapse::kType ? groups.name[i] : "";
    e.site = req.by == Collapse::kFunction ? groups.name[i] : "";
    e.size = bytes[i];
    e.retained = retained[i];
    e.count = static_cast<uint32_t>(std::min<uint64_t>(objects[i], UINT32_MAX));
    candOfGroup[i] = static_cast<uint32_t>(cand.size());
    cand.push_back({e});
  }
  for (uint32_t v = g.firstObject(); v < n; ++v) keyOf[v] = candOfGroup[groups.group[v]];
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
              std::to_string(n - g.firstObject()) + " objects, one node per " +
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
