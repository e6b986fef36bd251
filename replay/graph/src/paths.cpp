// rootPaths (paths.h): shortest paths from the root ranges to an object or a type's objects.
#include "heapman/graph/paths.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>

#include "heapman/replay/frames.h"
#include "heapman/replay/queries.h"

namespace heapman::graph {

PathsResult rootPaths(GraphSession& s, replay::Attribution& a, uint64_t limit,
                      const PathsRequest& req) {
  std::optional<replay::Regex> typeRe;
  if (!req.typeRegex.empty()) typeRe = replay::compileRegex(req.typeRegex, "", "--type");
  const HeapGraph& g = s.at(limit);
  const DominatorTree& dom = s.dominatorTree();
  PathsResult res;
  res.gc = g.gc();
  const uint32_t n = g.nodeCount();

  std::vector<uint32_t> targets;
  if (typeRe) {
    for (uint32_t x = g.firstObject(); x < n; ++x) {
      uint32_t info = g.objectInfo(x);
      std::string type =
          info ? replay::typeLabel(s.replay().tables(), s.replay().info(info - 1)) : "(untracked)";
      if (typeRe->search(type)) targets.push_back(x);
    }
    if (targets.empty())
      throw GraphError("no object of a type matching '" + req.typeRegex + "' is alive at gc:" +
                       std::to_string(g.gc()) + " (heapman types LOG --at gc:" +
                       std::to_string(g.gc()) + " lists the types)");
  } else {
    uint32_t t = g.objectAt(req.address, true);
    if (t == kNoNode)
      throw GraphError(hexAddress(req.address) + " is in no object at gc:" + std::to_string(g.gc()) +
                       " (heapman object LOG --at gc:" + std::to_string(g.gc()) + " " +
                       hexAddress(req.address) + " shows the nearest ones)");
    targets.push_back(t);
  }
  for (uint32_t t : targets) res.targetBytes += g.size(t);
  res.targets = targets.size();

  // Backwards from the targets: dist[v] = pointers from v to the nearest target, next[v] = the
  // node one step closer. A breadth-first search, so the first discovery is the shortest.
  std::vector<uint32_t> dist(n, UINT32_MAX), next(n, kNoNode);
  std::vector<uint32_t> queue;
  queue.reserve(targets.size());
  for (uint32_t t : targets) dist[t] = 0, queue.push_back(t);
  for (size_t head = 0; head < queue.size(); ++head) {
    uint32_t v = queue[head];
    for (uint32_t p : s.incoming(v)) {
      if (dist[p] != UINT32_MAX || p == 0) continue;  // the super-root starts no path
      dist[p] = dist[v] + 1;
      next[p] = v;
      queue.push_back(p);
    }
  }
  // Where paths start: root ranges, and objects the collector keeps whatever points to them.
  std::vector<uint32_t> starts;
  for (uint32_t r = 1; r <= g.rootCount(); ++r)
    if (dist[r] != UINT32_MAX) starts.push_back(r);
  for (uint32_t x = g.firstObject(); x < n; ++x)
    if ((g.objectFlags(x) & kRootObject) && dist[x] != UINT32_MAX) starts.push_back(x);
  std::stable_sort(starts.begin(), starts.end(),
                   [&](uint32_t x, uint32_t y) { return dist[x] < dist[y]; });
  res.rootsReaching = starts.size();
  std::vector<uint32_t> depth;  // type mode: pointers from the super-root

  // The picture: the nodes and edges of every start's path (as many as fit), objects merged per
  // type when the targets are a type's.
  ExportGraph& pic = res.picture;
  std::map<std::string, uint32_t> nodeOf;                   // node key -> picture node
  std::map<std::pair<uint32_t, uint32_t>, size_t> edgeOf;  // (from, to) -> picture edge
  std::vector<std::vector<uint32_t>> merged;               // picture node -> graph nodes in it
  // Merged per type and distance from the roots: the merged paths stay a graph that flows from
  // the roots to the targets (merging by type alone folds a chain A -> B -> A into a loop).
  auto keyOf = [&](const NodeFacts& f) {
    if (typeRe && f.kind == "object") return "type " + f.type + " @" + std::to_string(depth[f.node]);
    return "node " + std::to_string(f.node);
  };
  auto pictureNode = [&](const NodeFacts& f) {
    std::string key = keyOf(f);
    auto it = nodeOf.find(key);
    if (it != nodeOf.end()) {
      std::vector<uint32_t>& in = merged[it->second];
      if (std::find(in.begin(), in.end(), f.node) == in.end()) {
        in.push_back(f.node);
        ExportNode& e = pic.nodes[it->second];
        ++e.count;
        e.size += f.size;
        e.retained += f.retained;
        e.address = 0;
      }
      return it->second;
    }
    ExportNode e;
    e.label = f.type;
    e.type = f.kind == "object" ? f.type : "";
    e.site = f.function;
    e.rootKind = f.kind == "object" ? ((g.objectFlags(f.node) & kRootObject) ? "uncollectable" : "")
                                    : log::rootSourceName(g.root(f.node).source);
    e.address = f.kind == "object" ? f.address : 0;
    e.size = f.size;
    e.retained = f.retained;
    pic.nodes.push_back(e);
    merged.push_back({f.node});
    return nodeOf[key] = static_cast<uint32_t>(pic.nodes.size() - 1);
  };
  // The paths: for an address, each start's shortest path to it; for a type, each target's
  // shortest path from the roots (a forward breadth-first search from the super-root), so that
  // every holder of the type's objects shows when the paths are merged. `ends` holds the start
  // (address) or the target (type) of each path, shortest first.
  std::vector<uint32_t> ends, parent;
  auto lengthOf = [&](uint32_t e) { return typeRe ? depth[e] : dist[e] + 1; };
  if (!typeRe) {
    ends = starts;
  } else {
    parent.assign(n, kNoNode);
    depth.assign(n, UINT32_MAX);
    std::vector<uint32_t> fwd{0};
    depth[0] = 0;
    for (size_t head = 0; head < fwd.size(); ++head)
      for (uint32_t w : g.out(fwd[head]))
        if (depth[w] == UINT32_MAX) depth[w] = depth[fwd[head]] + 1, parent[w] = fwd[head],
                                    fwd.push_back(w);
    for (uint32_t t : targets)
      if (depth[t] != UINT32_MAX) ends.push_back(t);
    std::stable_sort(ends.begin(), ends.end(),
                     [&](uint32_t x, uint32_t y) { return depth[x] < depth[y]; });
  }
  // Only the paths listed (the first maxPaths) or drawn (while they fit in maxNodes) are made:
  // a type matching every object of a big heap has millions of paths. The paths come shortest
  // first and the picture only grows, so once one is neither listed nor fits, none after it does.
  size_t drawnPaths = 0;
  for (uint32_t e : ends) {
    bool listed = res.paths.size() < req.maxPaths;
    bool fits = pic.nodes.size() + lengthOf(e) <= req.maxNodes;
    if (!listed && !fits) break;
    std::vector<uint32_t> nodes;
    if (!typeRe) {
      for (uint32_t v = e; v != kNoNode; v = dist[v] == 0 ? kNoNode : next[v]) nodes.push_back(v);
    } else {
      for (uint32_t v = e; v != 0 && v != kNoNode; v = parent[v]) nodes.push_back(v);
      std::reverse(nodes.begin(), nodes.end());
    }
    std::vector<uint32_t> infos;
    for (uint32_t v : nodes)
      if (g.isObject(v) && g.objectInfo(v)) infos.push_back(g.objectInfo(v) - 1);
    a.prepareInfos(infos);
    std::vector<PathStep> path;
    uint32_t prev = kNoNode;
    for (uint32_t v : nodes) {
      PathStep step;
      step.node = factsOf(s, a, v, true);
      step.node.retained = dom.retained[v];
      if (prev != kNoNode)  // the first word of prev that points into v
        forEachPointer(g, prev, [&](uint64_t off, uint64_t, uint32_t t) {
          if (t == v && step.offset < 0) step.offset = static_cast<int64_t>(off);
        });
      path.push_back(std::move(step));
      prev = v;
    }
    if (fits) {
      ++drawnPaths;
      uint32_t from = kNoNode;
      for (const PathStep& st : path) {
        uint32_t to = pictureNode(st.node);
        if (from != kNoNode && from != to) {
          auto [it, fresh] = edgeOf.emplace(std::make_pair(from, to), pic.edges.size());
          if (fresh)
            pic.edges.push_back({from, to, st.offset, 1});
          else if (pic.edges[it->second].offset != st.offset)
            pic.edges[it->second].offset = -1, ++pic.edges[it->second].count;
          else
            ++pic.edges[it->second].count;
        }
        from = to;
      }
    }
    if (listed) res.paths.push_back(std::move(path));
  }
  std::string what = typeRe ? std::to_string(res.targets) + " objects of types matching '" +
                                  req.typeRegex + "'"
                            : hexAddress(g.address(targets[0]));
  pic.title = "paths from the roots to " + what + " at gc:" + std::to_string(g.gc());
  std::string each = typeRe ? "objects" : "roots";
  if (drawnPaths < ends.size())
    pic.note = "shortest paths of " + std::to_string(drawnPaths) + " of " +
               std::to_string(ends.size()) + " " + each + " drawn (at most " +
               std::to_string(req.maxNodes) + " nodes)";
  else
    pic.note = "shortest path of each of the " + std::to_string(ends.size()) + " " + each;
  if (typeRe) pic.note += ", merged per type";
  return res;
}

}  // namespace heapman::graph
