// dominators() (dominators.h): iterative semi-NCA.
#include "heapman/graph/dominators.h"

#include <algorithm>
#include <utility>

namespace heapman::graph {

DominatorTree dominators(std::span<const uint32_t> offsets, std::span<const uint32_t> targets,
                         uint32_t root, const std::vector<uint64_t>& sizes) {
  constexpr uint32_t kNone = UINT32_MAX;
  const uint32_t n = static_cast<uint32_t>(offsets.size() - 1);
  DominatorTree t;
  t.idom.assign(n, kNone);
  t.retained.assign(n, 0);
  if (root >= n) return t;

  // 1. Predecessor lists by node id, sized by in-degree (edges from unreachable nodes leave
  // their slots unused: predEnd marks how far each list was filled). One sequential pass over
  // the targets; the increments land near each other where the heap's pointers are local.
  std::vector<uint32_t> predOff(n + 1, 0);
  for (uint32_t w : targets) ++predOff[w + 1];
  for (uint32_t i = 0; i < n; ++i) predOff[i + 1] += predOff[i];
  std::vector<uint32_t> predEnd(predOff.begin(), predOff.end() - 1);
  std::vector<uint32_t> preds(targets.size());

  // 2. Preorder numbers by an iterative DFS whose stack holds (node, parent's number) entries:
  // a node is numbered when an entry for it is popped first, and its edges are read then, once,
  // in one run (LLVM's runDFS; a stack of (node, next edge) re-reads each node's edge cursor
  // after every child, a cache miss each on a big heap). Pushing the successors after the
  // parent's number is known yields a depth-first tree: an entry is popped only when every entry
  // pushed after it is done. The visited set is a bitmap (n / 8 bytes: it stays in cache).
  std::vector<uint64_t> visited((n + 63) / 64, 0);
  auto seen = [&](uint32_t v) { return (visited[v >> 6] >> (v & 63)) & 1; };
  std::vector<uint32_t> vertex, parent;  // by number: the node, its DFS parent's number
  std::vector<uint32_t> num(n, kNone);    // by node: its number
  vertex.reserve(n);
  parent.reserve(n);
  {
    std::vector<std::pair<uint32_t, uint32_t>> stack{{root, 0}};
    while (!stack.empty()) {
      auto [v, p] = stack.back();
      stack.pop_back();
      if (seen(v)) continue;
      visited[v >> 6] |= uint64_t{1} << (v & 63);
      uint32_t i = static_cast<uint32_t>(vertex.size());
      vertex.push_back(v);
      parent.push_back(p);
      num[v] = i;
      for (uint32_t e = offsets[v]; e < offsets[v + 1]; ++e) {
        uint32_t w = targets[e];
        if (!seen(w)) {
          stack.push_back({w, i});
          __builtin_prefetch(&offsets[w]);
        }
      }
      // The next node visited is the one on top: start loading its edges; and those of the one
      // below it, next when the top has no unvisited successor (a heap has many leaves).
      size_t depth = stack.size();
      if (depth) __builtin_prefetch(&targets[offsets[stack[depth - 1].first]]);
      if (depth > 1) __builtin_prefetch(&targets[offsets[stack[depth - 2].first]]);
    }
  }
  const uint32_t m = static_cast<uint32_t>(vertex.size());
  t.reachable = m;
  // The predecessor lists, in node order: the edges are read in sequence and, where the heap's
  // pointers are local, the lists written lie near each other (in the DFS they did not).
  for (uint32_t v = 0; v < n; ++v) {
    uint32_t i = num[v];
    if (i == kNone) continue;
    for (uint32_t e = offsets[v]; e < offsets[v + 1]; ++e) preds[predEnd[targets[e]]++] = i;
  }
  std::vector<uint32_t>().swap(num);

  // 3. Semidominators in reverse preorder (Semi-NCA only needs their values). Per number: the
  // ancestor link compressed by eval and the least semidominator on the compressed path, side
  // by side (one cache line per step of a path).
  struct Link {
    uint32_t anc, best;
  };
  std::vector<Link> link(m);
  std::vector<uint32_t> semi(m);
  for (uint32_t i = 0; i < m; ++i) link[i] = {parent[i], i}, semi[i] = i;
  std::vector<uint32_t> path;
  // The least semidominator on v's path of linked ancestors (numbers > w are linked).
  auto eval = [&](uint32_t v, uint32_t lastLinked) -> uint32_t {
    if (link[v].anc < lastLinked) return link[v].best;
    uint32_t u = v;
    do {
      path.push_back(u);
      u = link[u].anc;
    } while (link[u].anc >= lastLinked);
    uint32_t top = link[u].anc, best = link[u].best;  // u: first vertex not compressed further
    while (!path.empty()) {
      Link& x = link[path.back()];
      path.pop_back();
      x.anc = top;
      if (best < x.best)
        x.best = best;
      else
        best = x.best;
    }
    return link[v].best;
  };
  // The reads of a step are random (a node's predecessor list, their links): the steps ahead
  // are prefetched in stages, each once the stage before has had time to arrive.
  auto predsAt = [&](uint32_t w) { return predOff[vertex[w]]; };
  for (uint32_t w = m - 1; w >= 1; --w) {
    if (w >= 24) {
      __builtin_prefetch(&predOff[vertex[w - 24]]);
      __builtin_prefetch(&predEnd[vertex[w - 24]]);
    }
    if (w >= 12) __builtin_prefetch(&preds[predsAt(w - 12)]);
    if (w >= 4) {
      uint32_t node4 = vertex[w - 4];
      for (uint32_t e = predOff[node4], end = std::min(predEnd[node4], e + 8); e < end; ++e)
        __builtin_prefetch(&link[preds[e]]);
    }
    uint32_t s = parent[w];  // the DFS parent is a candidate
    uint32_t node = vertex[w];
    for (uint32_t e = predOff[node]; e < predEnd[node]; ++e) {
      uint32_t u = eval(preds[e], w + 1);
      if (u < s) s = u;
    }
    semi[w] = s;
    link[w].best = s;
  }
  std::vector<uint32_t>().swap(preds);
  std::vector<uint32_t>().swap(predOff);
  std::vector<uint32_t>().swap(predEnd);
  std::vector<Link>().swap(link);

  // 4. Immediate dominators: walk up from the DFS parent until at or above the semidominator.
  std::vector<uint32_t>& idom = parent;
  for (uint32_t w = 1; w < m; ++w) {
    uint32_t d = idom[w];
    while (d > semi[w]) d = idom[d];
    idom[w] = d;
  }

  // 5. Back to node ids; retained sizes bottom-up in reverse preorder.
  std::vector<uint64_t> ret(m);
  for (uint32_t i = 0; i < m; ++i) ret[i] = sizes[vertex[i]];
  for (uint32_t w = m - 1; w >= 1; --w) ret[idom[w]] += ret[w];
  for (uint32_t i = 0; i < m; ++i) {
    t.idom[vertex[i]] = vertex[idom[i]];
    t.retained[vertex[i]] = ret[i];
  }
  t.idom[root] = root;
  return t;
}

}  // namespace heapman::graph
