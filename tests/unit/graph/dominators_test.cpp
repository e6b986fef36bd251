// Dominators and retained sizes against a brute-force reference: node x dominates y when removing
// x makes y unreachable from the root. 1 000 random graphs (seeded) with cycles, self loops,
// duplicate edges and unreachable parts; and a chain a million nodes deep (no recursion).
#include <catch2/catch.hpp>

#include <random>
#include <vector>

#include "heapman/graph/dominators.h"

using heapman::graph::dominators;

namespace {

struct Csr {
  std::vector<uint32_t> offsets, targets;
};

Csr toCsr(uint32_t n, const std::vector<std::pair<uint32_t, uint32_t>>& edges) {
  Csr c;
  c.offsets.assign(n + 1, 0);
  for (auto [a, b] : edges) ++c.offsets[a + 1], (void)b;
  for (uint32_t i = 0; i < n; ++i) c.offsets[i + 1] += c.offsets[i];
  c.targets.resize(edges.size());
  std::vector<uint32_t> fill(c.offsets.begin(), c.offsets.end() - 1);
  for (auto [a, b] : edges) c.targets[fill[a]++] = b;
  return c;
}

// Reachable from root without passing through `removed` (kNone: nothing removed).
std::vector<bool> reach(const Csr& c, uint32_t root, uint32_t removed) {
  std::vector<bool> seen(c.offsets.size() - 1);
  if (root == removed) return seen;
  std::vector<uint32_t> todo{root};
  seen[root] = true;
  while (!todo.empty()) {
    uint32_t v = todo.back();
    todo.pop_back();
    for (uint32_t e = c.offsets[v]; e < c.offsets[v + 1]; ++e) {
      uint32_t w = c.targets[e];
      if (w != removed && !seen[w]) seen[w] = true, todo.push_back(w);
    }
  }
  return seen;
}

// Checks dominators() on c from root against the brute-force reference.
void checkAgainstBruteForce(const Csr& c, uint32_t root, const std::vector<uint64_t>& sizes,
                            int label) {
  const uint32_t n = static_cast<uint32_t>(c.offsets.size() - 1);
  auto t = dominators(c.offsets, c.targets, root, sizes);

  std::vector<bool> all = reach(c, root, UINT32_MAX);
  // dom[x][y]: x dominates y (x != y).
  std::vector<std::vector<bool>> dom(n, std::vector<bool>(n));
  for (uint32_t x = 0; x < n; ++x) {
    if (!all[x]) continue;
    std::vector<bool> without = reach(c, root, x);
    for (uint32_t y = 0; y < n; ++y) dom[x][y] = y != x && all[y] && !without[y];
  }
  uint32_t reachable = 0;
  for (uint32_t y = 0; y < n; ++y) {
    INFO("graph " << label << " node " << y << " root " << root);
    if (!all[y]) {
      REQUIRE(t.idom[y] == UINT32_MAX);
      REQUIRE(t.retained[y] == 0);
      continue;
    }
    ++reachable;
    // The idom chain is exactly the set of dominators.
    std::vector<bool> chain(n);
    if (y != root)
      for (uint32_t d = t.idom[y];; d = t.idom[d]) {
        REQUIRE(d < n);
        chain[d] = true;
        if (d == root) break;
      }
    uint32_t wrong = 0;  // one REQUIRE per node: a graph has millions of pairs
    for (uint32_t x = 0; x < n; ++x) wrong += chain[x] != dom[x][y];
    REQUIRE(wrong == 0);
    uint64_t retained = sizes[y];
    for (uint32_t z = 0; z < n; ++z)
      if (dom[y][z]) retained += sizes[z];
    REQUIRE(t.retained[y] == retained);
  }
  REQUIRE(t.reachable == reachable);
}

}  // namespace

TEST_CASE("dominators and retained sizes equal the brute-force reference on random graphs",
          "[graph][dominators]") {
  std::mt19937 rng(1414);
  for (int g = 0; g < 1000; ++g) {
    uint32_t n = 1 + rng() % 40;
    std::vector<std::pair<uint32_t, uint32_t>> edges;
    uint32_t m = rng() % (3 * n + 1);
    int shape = g % 3;
    for (uint32_t i = 0; i < m; ++i) {
      uint32_t a = rng() % n, b = rng() % n;
      if (shape == 1 && rng() % 2) b = a + 1 < n ? a + 1 : 0;  // long chains and cycles
      edges.push_back({a, b});
    }
    if (shape == 2 && n > 3)  // a separate component pointing into the reachable part
      edges.push_back({n - 1, 1});
    Csr c = toCsr(n, edges);
    uint32_t root = rng() % n;
    std::vector<uint64_t> sizes(n);
    for (auto& s : sizes) s = 1 + rng() % 1000;
    checkAgainstBruteForce(c, root, sizes, g);
  }
}

// Bigger graphs: predecessor lists longer than the prefetch distances, nodes with more edges
// than the DFS keeps inline, deep path compression. Heap-like (mostly local pointers: the DFS
// reads the CSR) and scattered (one graph in three: the DFS reads its per-node records).
TEST_CASE("dominators and retained sizes equal the brute-force reference on graphs of 2 000 nodes",
          "[graph][dominators]") {
  std::mt19937 rng(2026);
  for (int g = 0; g < 12; ++g) {
    uint32_t n = 500 + rng() % 1500;
    std::vector<std::pair<uint32_t, uint32_t>> edges;
    for (uint32_t a = 0; a < n; ++a) {
      uint32_t out = g % 4 == 3 && a % 50 == 0 ? 40 : rng() % 7;  // a few hubs
      for (uint32_t k = 0; k < out; ++k) {
        bool local = g % 3 != 0 && rng() % 8 != 0;
        uint32_t b = local ? (a + n - 16 + rng() % 32) % n : rng() % n;
        edges.push_back({a, b});
      }
    }
    Csr c = toCsr(n, edges);
    uint32_t root = g % 2 ? 0 : rng() % n;
    std::vector<uint64_t> sizes(n);
    for (auto& s : sizes) s = 16 + rng() % 100;
    checkAgainstBruteForce(c, root, sizes, g);
  }
}

TEST_CASE("dominators of a chain a million nodes deep", "[graph][dominators]") {
  const uint32_t n = 1'000'000;
  std::vector<std::pair<uint32_t, uint32_t>> edges;
  for (uint32_t i = 0; i + 1 < n; ++i) edges.push_back({i, i + 1});
  edges.push_back({n - 1, 0});  // a cycle back to the root
  Csr c = toCsr(n, edges);
  std::vector<uint64_t> sizes(n, 16);
  auto t = dominators(c.offsets, c.targets, 0, sizes);
  REQUIRE(t.reachable == n);
  REQUIRE(t.retained[0] == uint64_t{16} * n);
  REQUIRE(t.retained[n / 2] == uint64_t{16} * (n - n / 2));
  REQUIRE(t.idom[n - 1] == n - 2);
}
