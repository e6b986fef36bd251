// Queries over the heap graph of a dumped GC, for heapman's objects / object / refs / retained
// verbs. They compute rows; heapman formats them.
//
// GraphSession keeps the graph and dominator tree of the last GC asked for (the shell asks many
// questions of one point: the graph is built once). A point names a dumped GC when it resolves to
// just after that GC ("gc:N", or an event or seq that falls exactly there), or when that GC is
// the first collection to end after it (`--at level_end#2` for a log recorded with --ram-dumps
// event:level_end, whose dump is the next collection's); the verbs print the GC they used.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>
#include <cstring>

#include "heapman/graph/dominators.h"
#include "heapman/graph/export.h"
#include "heapman/graph/heap_graph.h"
#include "heapman/replay/frames.h"

namespace heapman::graph {

class GraphSession {
 public:
  explicit GraphSession(replay::Replay& r) : r_(r), store_(r.reader()) {
    if (r.tables().dumpCopiesIndexed) store_.useIndexedCopies(r.tables().dumpCopies);
  }
  // The graph of the dumped GC that `limit` (a resolved point) names; GraphError otherwise.
  const HeapGraph& at(uint64_t limit);
  // Dominators of the current graph (computed on first use).
  const DominatorTree& dominatorTree();
  // In-degree of every node of the current graph (computed on first use).
  const std::vector<uint32_t>& inDegrees();
  // The nodes that point to n, ascending, once per pointer: a reverse CSR of the current graph,
  // built on first use (O(edges)), then O(in-degree) a query.
  std::span<const uint32_t> incoming(uint32_t n);
  // The current graph (precondition: at() succeeded).
  const HeapGraph& graph() const { return *cur().graph; }
  replay::Replay& replay() { return r_; }
  DumpStore& store() { return store_; }

 private:
  // A dumped GC's graph and what was computed over it. The last kKept asked stay, most recent
  // first: questions alternating between a few dumps (heapman serve's clients) build each once.
  struct Built {
    std::unique_ptr<HeapGraph> graph;
    std::optional<DominatorTree> dom;
    std::vector<uint32_t> inDegree;
    std::vector<uint32_t> inOffsets, inSources;
  };
  static constexpr size_t kKept = 3;
  Built& cur() { return *built_.front(); }
  const Built& cur() const { return *built_.front(); }
  replay::Replay& r_;
  DumpStore store_;
  std::vector<std::unique_ptr<Built>> built_;
};

// The dumped GC that a resolved point names, by at()'s rule (just after it, or the first
// collection to end after the point), and the point just after that GC; nothing when none does.
struct DumpedPoint {
  uint32_t gc = 0;
  uint64_t limit = 0;
};
std::optional<DumpedPoint> dumpedGcAt(replay::Replay& r, DumpStore& store, uint64_t limit);

// The GraphSession of a Replay, kept until another Replay asks on the same thread (the shell's
// verbs share it; each of heapman serve's worker threads keeps its own).
// Precondition: the Replay outlives its use here.
GraphSession& graphSessionFor(replay::Replay& r);

// An address as the verbs take it: hex with or without 0x. GraphError when it is not one.
uint64_t parseAddress(const std::string& text);

// Calls f(offset, value, target) for each word of node `from` that points into an object, read
// as the graph's scan reads it (aligned words, the node's interior-pointer rule).
template <class F>
void forEachPointer(const HeapGraph& g, uint32_t from, F&& f) {
  std::span<const uint8_t> b = g.bytes(from);
  uint64_t a = g.address(from);
  bool interior = g.interiorFrom(from);
  for (uint64_t off = (8 - (a & 7)) & 7; off + 8 <= b.size(); off += 8) {
    uint64_t v;
    std::memcpy(&v, b.data() + off, 8);
    uint32_t t = g.objectAt(v, interior);
    if (t != kNoNode) f(off, v, t);
  }
}

// Labels of a node: "0x55d0c0a01230", "thread 1 stack", "(super-root)".
std::string nodeName(const HeapGraph& g, uint32_t n);

struct NodeFacts {
  uint32_t node = kNoNode;
  uint64_t address = 0, size = 0;
  std::string kind;      // "object", "root", "super-root"
  std::string type;      // type label, root label
  std::string heap;      // heap kind; "" for roots
  std::string function;  // blame site of the allocation stack
  std::string location;  // its file:line
  uint64_t birthSeq = 0;
  uint32_t birthGc = 0;  // GcEnds before its birth
  std::string birthEvent;  // the last custom event before its birth ("level_start#2"), or empty
  uint32_t thread = 0;
  uint32_t inDegree = 0;
  uint64_t retained = 0;
};
NodeFacts factsOf(GraphSession& s, replay::Attribution& a, uint32_t n, bool withRetained);

// ---- objects: filtered by type or blame function, by retained size ------------------------------
struct ObjectsFilter {
  std::string typeRegex, functionRegex;  // empty: any; ReplayError when one does not compile
  size_t top = 0;                        // 0: all
  bool unreachableOnly = false;          // only objects no root reaches (should be none)
};
struct ObjectsResult {
  uint32_t gc = 0;
  uint64_t matched = 0, matchedBytes = 0;
  std::vector<NodeFacts> rows;  // by retained size, descending
};
ObjectsResult listObjects(GraphSession& s, replay::Attribution& a, uint64_t limit,
                          const ObjectsFilter& f);

// ---- object: the allocation containing an address ------------------------------------------------
struct Reference {
  NodeFacts other;       // the node pointing (in) or pointed to (out)
  uint64_t offset = 0;   // of the word in the pointing node's bytes
  uint64_t target = 0;   // the word's value
};
struct WordView {
  uint64_t offset = 0;
  uint64_t value = 0;
  std::string ascii;     // 8 characters, '.' for unprintable
  std::string pointsTo;  // "0x... (+16) type" when the word lands in an object
};
struct ObjectResult {
  uint32_t gc = 0;
  uint64_t address = 0;
  bool found = false;
  NodeFacts object;
  std::vector<NodeFacts> nearest;  // when not found: the objects just below and above
  std::vector<std::string> stack;  // allocation stack, leaf first ("function (file:line)")
  std::vector<WordView> words;     // up to 64 words
  std::vector<Reference> in, out;  // up to `limit` each
  uint64_t inTotal = 0, outTotal = 0;
};
ObjectResult describeObject(GraphSession& s, replay::Attribution& a, uint64_t limit,
                            uint64_t address, size_t refLimit);

// ---- refs: references in or out, to a depth --------------------------------------------------------
struct RefRow {
  uint32_t depth = 0;
  NodeFacts from, to;
  uint64_t offset = 0;  // of the pointer word in `from`
};
// Breadth-first from the object containing `address`; `incoming`: who points to it, else what it
// points to. At most `maxRows` rows.
std::vector<RefRow> references(GraphSession& s, replay::Attribution& a, uint64_t limit,
                               uint64_t address, bool incoming, uint32_t depth, size_t maxRows);

// ---- retained: by object, type or blame function ------------------------------------------------
enum class RetainedBy { kObject, kType, kFunction };
struct RetainedRow {
  std::string name, module, location;  // object rows: address in name, type in module
  uint64_t objects = 0, bytes = 0;      // own
  uint64_t retained = 0;                // no double counting within the row (MAT's rule)
};
struct RetainedResult {
  uint32_t gc = 0;
  uint64_t totalObjects = 0, totalBytes = 0, reachable = 0;
  std::vector<RetainedRow> rows;
};
RetainedResult retainedBy(GraphSession& s, replay::Attribution& a, uint64_t limit, RetainedBy by,
                          size_t top);

// The objects of the current graph grouped by type label (kType) or blame site (kFunction; the
// name "(untracked)" when the site has no function): group[v] per node (UINT32_MAX for the roots
// and the super-root), groups numbered in node order, each with its name (and file:line for
// sites). Worked out once per AllocInfo, not per object.
struct NodeGroups {
  std::vector<uint32_t> group;
  std::vector<std::string> name, location;
};
NodeGroups groupNodes(GraphSession& s, replay::Attribution& a, RetainedBy by);

// The retained size of each group of nodes: group[v] is node v's group (< groups) or UINT32_MAX
// for none. An object dominated by another object of its group is counted inside that one (MAT's
// rule), so a group's figure never counts a byte twice. One walk of the dominator tree.
std::vector<uint64_t> retainedPerGroup(const DominatorTree& t, std::span<const uint32_t> group,
                                       size_t groups);

}  // namespace heapman::graph
