// rootPaths (paths.h): shortest paths from the root ranges to an object or a type's objects.
#include "heapman/graph/paths.h"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <unordered_map>

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
    // Each AllocInfo's type is matched once (objects share a few thousand of them): 0 not yet
    // decided, 1 no, 2 yes; [0] stands for untracked objects.
    std::vector<uint8_t> verdict(s.replay().tables().infos.size() + 1, 0);
    for (uint32_t x = g.firstObject(); x < n; ++x) {
      uint32_t info = g.objectInfo(x);
      if (info >= verdict.size()) verdict.resize(info + 1, 0);
      uint8_t& v = verdict[info];
      if (!v) {
        std::string type = info ? replay::typeLabel(s.replay().tables(), s.replay().info(info - 1))
                                : "(untracked)";
        v = typeRe->search(type) ? 2 : 1;
      }
      if (v == 2) targets.push_back(x);
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
  std::unordered_map<std::string, uint32_t> nodeOf;  // node key -> picture node
  std::unordered_map<uint64_t, size_t> edgeOf;        // from << 32 | to -> picture edge
  std::vector<uint32_t> pictureOf(n, kNoNode);        // graph node -> its picture node, once drawn
  // Merged per type and distance from the roots: the merged paths stay a graph that flows from
  // the roots to the targets (merging by type alone folds a chain A -> B -> A into a loop).
  auto keyOf = [&](const NodeFacts& f) {
    if (typeRe && f.kind == "object") return "type " + f.type + " @" + std::to_string(depth[f.node]);
    return "node " + std::to_string(f.node);
  };
  auto pictureNode = [&](const NodeFacts& f) {
    uint32_t& drawn = pictureOf[f.node];
    if (drawn != kNoNode) return drawn;
    auto [it, fresh] = nodeOf.try_emplace(keyOf(f), static_cast<uint32_t>(pic.nodes.size()));
    if (!fresh) {  // another node of its type at its depth: merged
      ExportNode& e = pic.nodes[it->second];
      ++e.count;
      e.size += f.size;
      e.retained += f.retained;
      e.address = 0;
      return drawn = it->second;
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
    return drawn = it->second;
  };
  // The paths: for an address, each start's shortest path to it; for a type, each target's
  // shortest path from the roots (a forward breadth-first search from the super-root), so that
  // every holder of the type's objects shows when the paths are merged. `ends` holds the start
  // (address) or the target (type) of each path, shortest first.
  std::vector<uint32_t> ends, parent;
  std::vector<uint32_t> forward;  // type: the nodes the roots reach, breadth first
  auto lengthOf = [&](uint32_t e) { return typeRe ? depth[e] : dist[e] + 1; };
  if (!typeRe) {
    ends = starts;
  } else {
    parent.assign(n, kNoNode);
    depth.assign(n, UINT32_MAX);
    forward.push_back(0);
    depth[0] = 0;
    for (size_t head = 0; head < forward.size(); ++head)
      for (uint32_t w : g.out(forward[head]))
        if (depth[w] == UINT32_MAX) depth[w] = depth[forward[head]] + 1, parent[w] = forward[head],
                                    forward.push_back(w);
    for (uint32_t t : targets)
      if (depth[t] != UINT32_MAX) ends.push_back(t);
    std::stable_sort(ends.begin(), ends.end(),
                     [&](uint32_t x, uint32_t y) { return depth[x] < depth[y]; });
  }
  // Only the paths listed (the first maxPaths) or drawn (while they fit in maxNodes) are made:
  // a type matching every object of a big heap has millions of paths. The paths come shortest
  // first and the picture only grows, so once one is neither listed nor fits, none after it does.
  // The first word of `from` that points into `to`. Paths share their first steps (a root range
  // of hundreds of KiB starts thousands of them), so each node's words are read once, into the
  // first offset of each object they point to.
  std::unordered_map<uint32_t, std::unordered_map<uint32_t, int64_t>> offsetsFrom;
  auto firstOffset = [&](uint32_t from, uint32_t to) -> int64_t {
    auto [it, fresh] = offsetsFrom.try_emplace(from);
    if (fresh)
      forEachPointer(g, from, [&](uint64_t off, uint64_t, uint32_t t) {
        it->second.try_emplace(t, static_cast<int64_t>(off));
      });
    auto found = it->second.find(to);
    return found == it->second.end() ? -1 : found->second;
  };
  // A path is drawn in the order it runs (from a root), each graph node once: a path meets the
  // nodes drawn before it as one piece (type: from the root down to where it branches off;
  // address: from where it joins on to the target), so only its new nodes are walked and how
  // many drawn paths take each edge is summed over the tree at the end (uses). A type matching
  // every object of a list of 20 000 is then 20 000 short walks, not 20 000 long ones.
  std::vector<uint32_t> uses(n, 0);  // drawn paths that end (type) or start (address) here
  auto firstPass = [&](uint32_t from, uint32_t to, int64_t offset) {
    if (from == kNoNode || from == to) return;
    auto [it, fresh] = edgeOf.try_emplace(uint64_t{from} << 32 | to, pic.edges.size());
    if (fresh)
      pic.edges.push_back({from, to, offset, 0});
    else if (pic.edges[it->second].offset != offset)
      pic.edges[it->second].offset = -1;  // merged edges from different words
  };
  auto facts = [&](uint32_t v) {
    NodeFacts f = factsOf(s, a, v, true);
    f.retained = dom.retained[v];
    return f;
  };
  auto prepare = [&](const std::vector<uint32_t>& nodes) {
    std::vector<uint32_t> infos;
    for (uint32_t v : nodes)
      if (g.isObject(v) && g.objectInfo(v)) infos.push_back(g.objectInfo(v) - 1);
    a.prepareInfos(infos);
  };
  size_t drawnPaths = 0;
  for (uint32_t e : ends) {
    bool listed = res.paths.size() < req.maxPaths;
    bool fits = pic.nodes.size() + lengthOf(e) <= req.maxNodes;
    if (!listed && !fits) break;
    if (listed) {
      std::vector<uint32_t> nodes;
      if (!typeRe) {
        for (uint32_t v = e; v != kNoNode; v = dist[v] == 0 ? kNoNode : next[v]) nodes.push_back(v);
      } else {
        for (uint32_t v = e; v != 0 && v != kNoNode; v = parent[v]) nodes.push_back(v);
        std::reverse(nodes.begin(), nodes.end());
      }
      prepare(nodes);
      std::vector<PathStep> path;
      uint32_t prev = kNoNode;
      for (uint32_t v : nodes) {
        PathStep step;
        step.node = facts(v);
        if (prev != kNoNode) step.offset = firstOffset(prev, v);
        path.push_back(std::move(step));
        prev = v;
      }
      res.paths.push_back(std::move(path));
    }
    if (!fits) continue;
    ++drawnPaths;
    ++uses[e];
    std::vector<uint32_t> fresh;  // the path's nodes not drawn yet, in its order
    uint32_t join = kNoNode;      // the drawn node it meets
    if (typeRe) {
      for (uint32_t v = e; v != 0 && v != kNoNode; v = parent[v]) {
        if (pictureOf[v] != kNoNode) {
          join = v;
          break;
        }
        fresh.push_back(v);
      }
      std::reverse(fresh.begin(), fresh.end());
    } else {
      for (uint32_t v = e; v != kNoNode; v = dist[v] == 0 ? kNoNode : next[v]) {
        if (pictureOf[v] != kNoNode) {
          join = v;
          break;
        }
        fresh.push_back(v);
      }
    }
    prepare(fresh);
    uint32_t prev = typeRe ? join : kNoNode;
    uint32_t from = prev == kNoNode ? kNoNode : pictureOf[prev];
    for (uint32_t v : fresh) {
      uint32_t to = pictureNode(facts(v));
      if (prev != kNoNode) firstPass(from, to, firstOffset(prev, v));
      from = to, prev = v;
    }
    if (!typeRe && join != kNoNode && prev != kNoNode)
      firstPass(from, pictureOf[join], firstOffset(prev, join));
  }
  // Each drawn edge counts the drawn paths through it: the paths below its node (type: a tree
  // from the roots, deepest first) or before it (address: a tree into the target, farthest
  // first).
  const std::vector<uint32_t>& order = typeRe ? forward : queue;
  for (size_t i = order.size(); i-- > 0;) {
    uint32_t v = order[i];
    uint32_t c = uses[v];
    uint32_t up = typeRe ? parent[v] : (dist[v] == 0 ? kNoNode : next[v]);
    if (c == 0 || up == 0 || up == kNoNode) continue;
    uses[up] += c;
    uint32_t x = typeRe ? pictureOf[up] : pictureOf[v], y = typeRe ? pictureOf[v] : pictureOf[up];
    if (x != y) pic.edges[edgeOf.at(uint64_t{x} << 32 | y)].count += c;
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
