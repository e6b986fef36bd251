// dominators() (dominators.h): iterative semi-NCA over the graph renumbered in DFS preorder.
#include "heapman/graph/dominators.h"

#include <algorithm>
#include <cstddef>
#include <memory>
#include <utility>

#include "phase_timer.h"

namespace heapman::graph {

DominatorTree dominators(std::span<const uint32_t> offsets, std::span<const uint32_t> targets,
                         uint32_t root, const std::vector<uint64_t>& sizes) {
  constexpr uint32_t kNone = UINT32_MAX;
  const uint32_t n = static_cast<uint32_t>(offsets.size() - 1);
  DominatorTree t;
  HEAPMAN_PHASE_START;
  if (root >= n) {
    t.idom.assign(n, kNone);
    t.retained.assign(n, 0);
    return t;
  }

  // 1. Preorder numbers by an iterative DFS whose stack holds (node, parent's number) entries:
  // a node is numbered when an entry for it is popped first, and its edges are read then, once,
  // in one run (LLVM's runDFS; a stack of (node, next edge) re-reads each node's edge cursor
  // after every child, a cache miss each on a big heap). Pushing the successors after the
  // parent's number is known yields a depth-first tree: an entry is popped only when every entry
  // pushed after it is done. The visited set is a bitmap (n / 8 bytes: it stays in cache).
  //
  // Past the caches each step of a DFS is a miss, and through the CSR two in a row (the node's
  // offset, then its edges). Where the graph's pointers are scattered the DFS reads instead one
  // 32-byte record per node, at an address computed from the node id alone, holding its first
  // kInline edges (most heap objects have no more) and where the rest are: one miss per step,
  // prefetched when the node is pushed. The records are written in one sequential pass and freed
  // after the DFS. Where the pointers are local (most point to objects allocated shortly before,
  // as on a real collector's heap) the CSR's lines are in cache already and the pass would cost
  // more than it saves: a sample of the edges decides.
  constexpr uint32_t kInline = 6;
  struct alignas(32) Record {
    uint32_t start, count;
    uint32_t edge[kInline];
  };
  std::vector<uint64_t> visited((n + 63) / 64, 0);
  auto seen = [&](uint32_t v) { return (visited[v >> 6] >> (v & 63)) & 1; };
  std::vector<uint32_t> vertex, parent;  // by number: the node, its DFS parent's number
  std::vector<uint32_t> num(n, kNone);  // by node: its number
  std::vector<uint64_t> ret;  // by number: the node's size, then what it retains
  vertex.reserve(n);
  parent.reserve(n);
  ret.reserve(n);
  // The DFS, reading each node's edges through readEdges(v, visit) and prefetching a pushed
  // node's through prefetch(w).
  auto dfs = [&](auto&& readEdges, auto&& prefetch) {
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
      ret.push_back(sizes[v]);  // a read off the DFS's chain of misses: it overlaps them
      readEdges(v, [&](uint32_t w) {
        if (!seen(w)) {
          stack.push_back({w, i});
          prefetch(w);
        }
      });
    }
  };
  // Edges within 256 node ids of their source, among those of 256 nodes spread over the graph:
  // 61% on bench/graph_bench_heap's (the real collector's) heap, 7% on graph_bench's --local
  // one (pointers anywhere within 2 048 objects), none on its random one.
  uint32_t sampled = 0, near = 0;
  for (uint64_t at = 0; at < n; at += std::max(1u, n / 256)) {
    uint32_t v = static_cast<uint32_t>(at);
    for (uint32_t e = offsets[v]; e < offsets[v + 1]; ++e, ++sampled)
      near += (targets[e] > v ? targets[e] - v : v - targets[e]) < 256;
  }
  if (near * 2 >= sampled) {
    dfs([&](uint32_t v, auto&& visit) {
          for (uint32_t e = offsets[v]; e < offsets[v + 1]; ++e) visit(targets[e]);
        },
        [&](uint32_t w) { __builtin_prefetch(&offsets[w]); });
  } else {
    std::unique_ptr<Record[]> records(new Record[n]);  // uninitialized: every one is written
    for (uint32_t v = 0; v < n; ++v) {
      Record& r = records[v];
      r.start = offsets[v];
      r.count = offsets[v + 1] - offsets[v];
      for (uint32_t k = 0; k < kInline; ++k) r.edge[k] = k < r.count ? targets[r.start + k] : 0;
    }
    HEAPMAN_PHASE("records");
    dfs([&](uint32_t v, auto&& visit) {
          const Record& r = records[v];
          if (r.count <= kInline) {
            for (uint32_t k = 0; k < r.count; ++k) visit(r.edge[k]);
          } else {
            for (uint32_t e = r.start, end = r.start + r.count; e < end; ++e) visit(targets[e]);
          }
        },
        [&](uint32_t w) { __builtin_prefetch(&records[w]); });
  }
  std::vector<uint64_t>().swap(visited);
  const uint32_t m = static_cast<uint32_t>(vertex.size());
  t.reachable = m;
  HEAPMAN_PHASE("dfs");

  // 2. Predecessor lists by preorder number, holding preorder numbers, laid out so that the
  // semidominator pass below (w from m - 1 down to 1) reads them in one descending sweep. Counted
  // by node id in node order (where the heap's pointers are local the counters touched lie near
  // each other), the counts gathered into preorder, then filled in two passes (below).
  std::vector<uint32_t> predOff(m + 1, 0);
  {
    std::vector<uint32_t> indegree(n, 0);
    for (uint32_t v = 0; v < n; ++v) {
      if (num[v] == kNone) continue;
      for (uint32_t e = offsets[v]; e < offsets[v + 1]; ++e) ++indegree[targets[e]];
    }
    HEAPMAN_PHASE("indegree");
    for (uint32_t i = 0; i < m; ++i) predOff[i + 1] = predOff[i] + indegree[vertex[i]];
    HEAPMAN_PHASE("predOff");
  }
  std::unique_ptr<uint32_t[]> preds(new uint32_t[predOff[m]]);  // uninitialized: all filled below
  {
    // Filled in two passes, so that no pass writes at random over the whole lists: the first,
    // in node order, writes each edge as a (number, predecessor's number) pair into the bucket
    // of its number (kBucketBits numbers a bucket, a bucket's pairs where its lists will be: one
    // write stream per bucket); the second reads the pairs in sequence and fills each list from
    // its end, a bucket's counters and lists in cache.
    constexpr uint32_t kBucketBits = 15;
    struct Pair {
      uint32_t to, from;
    };
    const uint32_t buckets = (m >> kBucketBits) + 1;
    std::vector<uint32_t> cursor(buckets);
    for (uint32_t b = 0; b < buckets; ++b) cursor[b] = predOff[std::min(m, b << kBucketBits)];
    std::unique_ptr<Pair[]> pairs(new Pair[predOff[m]]);  // uninitialized: every slot is written
    for (uint32_t v = 0; v < n; ++v) {
      uint32_t i = num[v];
      if (i == kNone) continue;
      for (uint32_t e = offsets[v]; e < offsets[v + 1]; ++e) {
        uint32_t j = num[targets[e]];
        pairs[cursor[j >> kBucketBits]++] = {j, i};
      }
    }
    HEAPMAN_PHASE("pairs");
    std::vector<uint32_t> fill;  // fill[j] ends at predOff[j]
    fill.reserve(m);
    fill.assign(predOff.begin() + 1, predOff.end());
    for (uint32_t k = 0, end = predOff[m]; k < end; ++k) preds[--fill[pairs[k].to]] = pairs[k].from;
  }
  HEAPMAN_PHASE("preds");

  // 3. Semidominators in reverse preorder (Semi-NCA only needs their values). Per number: the
  // ancestor link compressed by eval and the least semidominator on the compressed path, side
  // by side (one cache line per step of a path). A predecessor numbered at most w is not linked
  // yet: it is its own candidate, no read needed (tree edges, and most of a heap's edges).
  struct Link {
    uint32_t anc, best;
  };
  std::vector<Link> link;
  link.reserve(m);
  for (uint32_t i = 0; i < m; ++i) link.push_back({parent[i], i});
  std::vector<uint32_t> semi(m, 0);
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
  // The predecessors are read in one descending sweep; the links of those kAhead steps ahead are
  // prefetched, at two thirds of the way the link of their ancestor (eval's first step up, read
  // from the link prefetched before), at one third the next ancestor's.
  constexpr uint32_t kAhead = 48;
  for (uint32_t w = m - 1; w >= 1; --w) {
    uint32_t s = parent[w];  // the DFS parent is a candidate
    for (uint32_t e = predOff[w + 1]; e-- > predOff[w];) {
      if (e >= kAhead) __builtin_prefetch(&link[preds[e - kAhead]]);
      if (e >= kAhead * 2 / 3) __builtin_prefetch(&link[link[preds[e - kAhead * 2 / 3]].anc]);
      if (e >= kAhead / 3) __builtin_prefetch(&link[link[link[preds[e - kAhead / 3]].anc].anc]);
      uint32_t u = preds[e];
      if (u > w) u = eval(u, w + 1);
      if (u < s) s = u;
    }
    semi[w] = s;
    link[w].best = s;
  }
  preds.reset();
  std::vector<uint32_t>().swap(predOff);
  std::vector<Link>().swap(link);
  HEAPMAN_PHASE("semi");

  // 4. Immediate dominators: walk up from the DFS parent until at or above the semidominator.
  std::vector<uint32_t>& idom = parent;
  for (uint32_t w = 1; w < m; ++w) {
    uint32_t d = idom[w];
    while (d > semi[w]) d = idom[d];
    idom[w] = d;
  }
  HEAPMAN_PHASE("idom");

  // 5. Retained sizes bottom-up in reverse preorder (a node's dominator precedes it), then back
  // to node ids in node order: the results are written in sequence, once, and the reads by
  // number do not depend on each other.
  for (uint32_t w = m - 1; w >= 1; --w) ret[idom[w]] += ret[w];
  t.idom.reserve(n);
  t.retained.reserve(n);
  for (uint32_t v = 0; v < n; ++v) {
    uint32_t i = num[v];
    t.idom.push_back(i == kNone ? kNone : vertex[idom[i]]);
    t.retained.push_back(i == kNone ? 0 : ret[i]);
  }
  t.idom[root] = root;
  HEAPMAN_PHASE("retained");
  return t;
}

}  // namespace heapman::graph
