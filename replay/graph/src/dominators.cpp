// dominators() (dominators.h): iterative semi-NCA.
#include "heapman/graph/dominators.h"

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

  // 1. Preorder numbers by an iterative DFS (an explicit stack of (node, next edge)).
  std::vector<uint32_t> num(n, kNone), vertex, parent;  // parent: DFS parent's number
  vertex.reserve(n);
  parent.reserve(n);
  {
    std::vector<std::pair<uint32_t, uint32_t>> stack;
    num[root] = 0;
    vertex.push_back(root);
    parent.push_back(0);
    stack.push_back({root, offsets[root]});
    while (!stack.empty()) {
      auto& [v, e] = stack.back();
      if (e == offsets[v + 1]) {
        stack.pop_back();
        continue;
      }
      uint32_t w = targets[e++];
      if (num[w] != kNone) continue;
      num[w] = static_cast<uint32_t>(vertex.size());
      vertex.push_back(w);
      parent.push_back(num[v]);
      stack.push_back({w, offsets[w]});
    }
  }
  const uint32_t m = static_cast<uint32_t>(vertex.size());
  t.reachable = m;

  // 2. Predecessors (by number) of the reachable nodes, in CSR.
  std::vector<uint32_t> predOff(m + 1, 0), preds;
  for (uint32_t i = 0; i < m; ++i) {
    uint32_t v = vertex[i];
    for (uint32_t e = offsets[v]; e < offsets[v + 1]; ++e) ++predOff[num[targets[e]] + 1];
  }
  for (uint32_t i = 0; i < m; ++i) predOff[i + 1] += predOff[i];
  preds.resize(predOff[m]);
  {
    std::vector<uint32_t> fill(predOff.begin(), predOff.end() - 1);
    for (uint32_t i = 0; i < m; ++i) {
      uint32_t v = vertex[i];
      for (uint32_t e = offsets[v]; e < offsets[v + 1]; ++e) preds[fill[num[targets[e]]]++] = i;
    }
  }

  // 3. Semidominators in reverse preorder. anc: ancestor links compressed by eval; label: the
  // vertex of minimal semi on the compressed path.
  std::vector<uint32_t> semi(m), label(m), anc(parent), idom(parent);
  for (uint32_t i = 0; i < m; ++i) semi[i] = label[i] = i;
  std::vector<uint32_t> stack;
  auto eval = [&](uint32_t v, uint32_t lastLinked) -> uint32_t {
    if (anc[v] < lastLinked) return label[v];
    // Collect the path of linked ancestors, then compress it top-down.
    uint32_t u = v;
    do {
      stack.push_back(u);
      u = anc[u];
    } while (anc[u] >= lastLinked);
    uint32_t p = u;  // first vertex not compressed further
    uint32_t pLabel = label[p];
    while (!stack.empty()) {
      uint32_t x = stack.back();
      stack.pop_back();
      anc[x] = anc[p];
      if (semi[pLabel] < semi[label[x]])
        label[x] = pLabel;
      else
        pLabel = label[x];
      p = x;
    }
    return label[v];
  };
  for (uint32_t w = m - 1; w >= 1; --w) {
    uint32_t s = parent[w];  // the DFS parent is a candidate
    for (uint32_t e = predOff[w]; e < predOff[w + 1]; ++e) {
      uint32_t v = preds[e];
      uint32_t u = eval(v, w + 1);
      if (semi[u] < s) s = semi[u];
    }
    semi[w] = s;
    label[w] = w;
  }
  std::vector<uint32_t>().swap(preds);
  std::vector<uint32_t>().swap(predOff);

  // 4. Immediate dominators: walk up from the DFS parent until at or above the semidominator.
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
