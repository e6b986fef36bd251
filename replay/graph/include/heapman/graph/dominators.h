// Dominator tree and retained sizes of a graph in CSR form, from one root (for a HeapGraph: the
// super-root, node 0, which points to every root range and uncollectable object).
//
// Semi-NCA (Georgiadis, Tarjan, Werneck; the variant LLVM's dominator tree and LeakCanary use),
// laid out for a heap far bigger than the caches: an iterative depth-first numbering (a stack of
// (node, parent number) entries; each node's edges are read once, from a 32-byte record per node
// holding its first edges, one cache miss a step); then everything is indexed by preorder
// number: predecessor lists holding preorder numbers, read in one sequential sweep by the
// semidominator pass (reverse preorder, iterative path-compressing eval over (ancestor, least
// semidominator) pairs, the next steps' pairs prefetched), each node's immediate dominator as
// the nearest common ancestor of its DFS parent and its semidominator. No recursion anywhere: a
// heap's chains (linked lists) are millions deep. Time O(E log V) worst case, near-linear in
// practice; transient memory at most about 52 bytes per node (the DFS's records, where it uses
// them) plus 12 per edge (the predecessor lists and the pairs they are filled from), freed
// before returning. (Not on transparent huge pages: on this project's 10 M-object benchmark a
// fresh huge page cost so much more to fault in than 4 KiB ones that the whole ran 1.6x slower;
// docs/PERFORMANCE.md.)
//
// Retained size of a node: its own size plus that of every node it dominates, summed in reverse
// preorder (a node's dominator precedes it). Unreachable nodes have idom kNoNode and retain 0.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace heapman::graph {

struct DominatorTree {
  std::vector<uint32_t> idom;      // per node; idom[root] == root; unreachable: UINT32_MAX
  std::vector<uint64_t> retained;  // per node
  uint32_t reachable = 0;
};

// offsets: n + 1 entries (edges of node v are targets[offsets[v] .. offsets[v + 1])); sizes: n.
DominatorTree dominators(std::span<const uint32_t> offsets, std::span<const uint32_t> targets,
                         uint32_t root, const std::vector<uint64_t>& sizes);

}  // namespace heapman::graph
