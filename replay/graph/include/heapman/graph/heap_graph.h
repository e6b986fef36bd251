// HeapGraph: the objects alive after one dumped GC, the roots the collector scanned, and the
// pointers between them, found in the RAM dump's bytes.
//
// Node ids (32 bits): 0 is the super-root; 1..rootCount() are the root ranges of the dump (static
// data of a module, a GC_add_roots range, a thread's stack); then one node per object of the dump,
// in address order. The super-root points to every root range and to every uncollectable object
// (the collector marks those whatever points to them).
//
// Edges: every pointer-aligned word of a root range and of an object the collector scans (not
// atomic / pointer-free kinds) whose value lands in an object: anywhere in it when the recorded
// collector accepts interior pointers (and always from thread stacks, as bdwgc), else only at
// its start. One edge per word (two fields
// pointing to one object are two edges). Stored as CSR: offsets (one u32 per node + 1, as edge
// index) and targets (one u32 per edge), filled in one pass over the bytes in node order (a
// node's edges are complete when the scan moves to the next node).
//
// Memory beside the dump (Dump::memoryBytes): per object 4 bytes (AllocInfo id), 1 (flags),
// 4 (CSR offset) and its page entries in the AddressMap; 4 bytes per edge.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "heapman/graph/address_map.h"
#include "heapman/graph/dump_store.h"
#include "heapman/logformat/records.h"

namespace heapman::replay {
class Replay;
}

namespace heapman::graph {

inline constexpr uint32_t kNoNode = UINT32_MAX;

struct RootNode {
  log::RootSource source = log::RootSource::kOther;
  uint32_t thread = log::kRecorderThread;  // thread stacks: the recorder's thread index
  std::string label;                        // module file, "thread 3 (audio)", "GC_add_roots"
};

// Per object: what the scan needs to know.
enum ObjectFlags : uint8_t {
  kScan = 1,           // the collector scans its bytes for pointers
  kRootObject = 2,     // kept whatever points to it (uncollectable): an edge from the super-root
  kUntracked = 4,      // in the dump but not in the replay's live set
};

struct GraphStats {
  uint64_t objects = 0, rootRanges = 0;
  uint64_t edges = 0;          // object and root-range edges (super-root edges not counted)
  uint64_t rootEdges = 0;      // of those, from root ranges
  uint64_t scannedObjects = 0, skippedObjects = 0;  // skipped: pointer-free kinds
  uint64_t scannedBytes = 0;
  uint64_t preciseObjects = 0;   // scanned through their type's layout (managed objects)
  uint64_t preciseEdges = 0;     // edges found that way; the rest conservatively
  uint64_t hitsInNoObject = 0;  // words landing in a page with objects, but in none of them
                                // (or inside one, not at its start, without interior pointers)
  uint64_t untracked = 0;       // dump objects the live set does not have
  uint64_t liveNotDumped = 0;   // collected-heap objects of the live set missing from the dump
  uint64_t rootObjects = 0;     // uncollectable objects
  uint64_t unreachable = 0;     // live-set objects no root reaches: 0 on correct data
  uint64_t unreachableUntracked = 0;  // untracked ones (a runtime's free lists held from its
                                      // thread-local storage, which is no recorded root)
  double scanSeconds = 0;
  uint64_t graphBytes = 0;      // memory beside the dump
};

// Where a managed type's objects hold references (the log's TypeDef layout, log::TypeLayout):
// their words are the only ones scanned, precisely.
struct ObjectLayout {
  log::TypeLayout kind = log::TypeLayout::kUnknown;  // kFields or kArray here
  std::vector<uint32_t> refOffsets;
  uint32_t elementSize = 0, dataOffset = 0;
};

class HeapGraph {
 public:
  struct Options {
    bool interiorPointers = false;
    // Precise scanning: objectLayout[i] is 1 + an index into layouts for object i, 0 to scan it
    // conservatively (every aligned word). Empty: every object conservatively.
    std::vector<ObjectLayout> layouts;
    std::vector<uint32_t> objectLayout;
  };

  // Builds the graph from a dump. `objectInfo[i]` is the replay's AllocInfo id of
  // dump.objects[i] plus 1 (0: untracked), `flags[i]` its ObjectFlags; `roots[i]` describes
  // dump.roots[i].
  HeapGraph(Dump dump, std::vector<uint32_t> objectInfo, std::vector<uint8_t> flags,
            std::vector<RootNode> roots, Options options);

  // The graph of GC `gc` of a replay: seeks it to gc:N for the live set and reads the root set
  // and the bdwgc/Mono interior-pointer setting from the log. Throws GraphError when GC N has
  // no dump (listing those that have).
  static std::unique_ptr<HeapGraph> atGc(replay::Replay& r, DumpStore& store, uint32_t gc);

  uint32_t gc() const { return dump_.gc; }
  uint32_t nodeCount() const { return static_cast<uint32_t>(offsets_.size() - 1); }
  uint32_t rootCount() const { return static_cast<uint32_t>(roots_.size()); }
  uint32_t firstObject() const { return rootCount() + 1; }
  bool isObject(uint32_t n) const { return n >= firstObject() && n < nodeCount(); }
  bool isRoot(uint32_t n) const { return n >= 1 && n <= rootCount(); }

  // Address and length of a node's bytes (0 for the super-root).
  uint64_t address(uint32_t n) const { return segment(n) ? segment(n)->address : 0; }
  uint64_t size(uint32_t n) const { return segment(n) ? segment(n)->length : 0; }
  std::span<const uint8_t> bytes(uint32_t n) const {
    const DumpSegment* s = segment(n);
    return s ? std::span<const uint8_t>(dump_.data(*s), s->length) : std::span<const uint8_t>();
  }
  const RootNode& root(uint32_t n) const { return roots_[n - 1]; }
  // AllocInfo id + 1, 0 when untracked (birth: the replay's live set at gc:N has it).
  uint32_t objectInfo(uint32_t n) const { return info_[n - firstObject()]; }
  uint8_t objectFlags(uint32_t n) const { return flags_[n - firstObject()]; }

  std::span<const uint32_t> out(uint32_t n) const {
    return {targets_.get() + offsets_[n], targets_.get() + offsets_[n + 1]};
  }
  std::span<const uint32_t> offsets() const { return offsets_; }
  std::span<const uint32_t> targets() const { return {targets_.get(), edgeTotal_}; }

  // The object containing an address (interior or not, as the collector), or kNoNode.
  uint32_t objectAt(uint64_t address, bool interior) const {
    uint32_t i = map_.find(address, interior);
    return i == AddressMap::kNone ? kNoNode : i + firstObject();
  }
  uint32_t objectAt(uint64_t address) const { return objectAt(address, options_.interiorPointers); }
  // Whether the words of node n count when they point inside an object: the collector's setting,
  // and always for thread stacks (bdwgc's GC_mark_and_push_stack: a register or a local may
  // point into an object).
  bool interiorFrom(uint32_t n) const {
    if (options_.interiorPointers) return true;
    if (!isRoot(n)) return false;
    log::RootSource s = root(n).source;
    return s == log::RootSource::kThreadStack || s == log::RootSource::kMonoStack;
  }
  const Options& options() const { return options_; }
  // The counts of the build; `unreachable` and `unreachableUntracked` are counted on the first
  // call (one traversal from the super-root, O(nodes + edges)), not by the build itself; that
  // first call writes them, so it must not race with another thread's.
  const GraphStats& stats() const {
    if (!reachCounted_) countUnreachable();
    return stats_;
  }
  const Dump& dump() const { return dump_; }

  // Nodes reachable from the super-root (a BFS), as a bitmap by node id.
  std::vector<bool> reachable() const;
  std::vector<uint8_t> reachableBytes() const;  // the same, a byte per node (faster)

 private:
  const DumpSegment* segment(uint32_t n) const {
    if (n == 0 || n >= nodeCount()) return nullptr;
    return n <= rootCount() ? &dump_.roots[n - 1] : &dump_.objects[n - firstObject()];
  }
  void scan();
  void countUnreachable() const;

  Dump dump_;
  std::vector<uint32_t> info_;
  std::vector<uint8_t> flags_;
  std::vector<RootNode> roots_;
  Options options_;
  AddressMap map_;
  std::vector<uint32_t> offsets_;
  // The edges' targets: the scan's own buffer, shrunk to its size in place (realloc), no copy.
  struct Free {
    void operator()(uint32_t* p) const { std::free(p); }
  };
  std::unique_ptr<uint32_t[], Free> targets_;
  size_t edgeTotal_ = 0;
  mutable GraphStats stats_;
  mutable bool reachCounted_ = false;
};

}  // namespace heapman::graph
