// HeapGraph (heap_graph.h): the address map, the two-pass scan into CSR, reachability.
#include "heapman/graph/heap_graph.h"

#include <chrono>
#include <cstring>

namespace heapman::graph {

HeapGraph::HeapGraph(Dump dump, std::vector<uint32_t> objectInfo, std::vector<uint8_t> flags,
                     std::vector<RootNode> roots, Options options)
    : dump_(std::move(dump)),
      info_(std::move(objectInfo)),
      flags_(std::move(flags)),
      roots_(std::move(roots)),
      options_(std::move(options)) {
  size_t n = dump_.objects.size();
  if (info_.size() != n || flags_.size() != n || roots_.size() != dump_.roots.size() ||
      (!options_.objectLayout.empty() && options_.objectLayout.size() != n))
    throw GraphError("HeapGraph: per-object tables do not match the dump");
  if (n + roots_.size() + 1 >= kNoNode) throw GraphError("more than 2^32 - 2 nodes");
  auto t0 = std::chrono::steady_clock::now();
  map_.build(
      static_cast<uint32_t>(n), [&](uint32_t i) { return dump_.objects[i].address; },
      [&](uint32_t i) { return dump_.objects[i].length; });
  offsets_.assign(n + roots_.size() + 2, 0);
  scanAll<false>();
  scanAll<true>();
  stats_.scanSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  stats_.objects = n;
  stats_.rootRanges = roots_.size();
  for (uint8_t f : flags_) {
    stats_.untracked += (f & kUntracked) != 0;
    stats_.rootObjects += (f & kRootObject) != 0;
  }
  std::vector<uint8_t> seen = reachableBytes();
  for (uint32_t i = firstObject(); i < nodeCount(); ++i)
    if (!seen[i]) ++((flags_[i - firstObject()] & kUntracked) ? stats_.unreachableUntracked
                                                              : stats_.unreachable);
  stats_.graphBytes = info_.capacity() * 4 + flags_.capacity() + offsets_.capacity() * 4 +
                      targets_.capacity() * 4 + map_.memoryBytes();
}

// Pass 1 (kFill false) counts each node's edges into offsets_[n + 1]; then a prefix sum; pass 2
// writes the targets. The super-root's edges come first.
template <bool kFill>
void HeapGraph::scanAll() {
  const uint32_t first = firstObject();
  const bool interior = options_.interiorPointers;
  uint32_t* cursor = nullptr;
  std::vector<uint32_t> next;
  if constexpr (kFill) {
    for (size_t i = 1; i < offsets_.size(); ++i) {
      uint64_t s = uint64_t{offsets_[i]} + offsets_[i - 1];
      if (s > UINT32_MAX) throw GraphError("more than 2^32 edges");
      offsets_[i] = static_cast<uint32_t>(s);
    }
    targets_.resize(offsets_.back());
    next.assign(offsets_.begin(), offsets_.end() - 1);
    cursor = targets_.data();
  }
  auto edge = [&](uint32_t from, uint32_t to) {
    if constexpr (kFill)
      cursor[next[from]++] = to;
    else
      ++offsets_[from + 1];
  };
  // Super-root.
  for (uint32_t r = 1; r <= rootCount(); ++r) edge(0, r);
  for (uint32_t i = 0; i < flags_.size(); ++i)
    if (flags_[i] & kRootObject) edge(0, first + i);

  uint64_t edges = 0, rootEdges = 0, misses = 0, scanned = 0, skipped = 0, bytes = 0;
  // acceptInterior: interiorFrom(node) (the collector's setting; thread stacks always).
  auto scan = [&](uint32_t node, const DumpSegment& s, bool acceptInterior) {
    const uint8_t* p = dump_.data(s);
    uint64_t skip = (8 - (s.address & 7)) & 7;  // the collector scans aligned words only
    if (s.length < skip + 8) return uint64_t{0};
    const uint8_t* end = p + s.length - 7;
    uint64_t n = 0;
    for (const uint8_t* w = p + skip; w < end; w += 8) {
      uint64_t v;
      std::memcpy(&v, w, 8);
      uint32_t t = map_.find(v, acceptInterior);
      if (t != AddressMap::kNone) {
        edge(node, first + t);
        ++n;
      } else if (!kFill && map_.inObjectPage(v)) {
        ++misses;
      }
    }
    bytes += s.length;
    return n;
  };
  for (uint32_t r = 0; r < rootCount(); ++r)
    rootEdges += scan(r + 1, dump_.roots[r], interiorFrom(r + 1));
  edges = rootEdges;
  // A managed object with a known layout: only its reference words (the collector's own view:
  // mono-boehm scans them through the class's GC descriptor).
  uint64_t precise = 0, preciseEdges = 0;
  auto scanLayout = [&](uint32_t node, const DumpSegment& s, const ObjectLayout& l) {
    const uint8_t* p = dump_.data(s);
    uint64_t n = 0;
    auto word = [&](uint64_t off) {
      if (off + 8 > s.length) return;
      uint64_t v;
      std::memcpy(&v, p + off, 8);
      uint32_t t = map_.find(v, interior);
      if (t != AddressMap::kNone) edge(node, first + t), ++n;
    };
    if (l.kind == log::TypeLayout::kFields) {
      for (uint32_t off : l.refOffsets) word(off);
    } else if (l.elementSize) {
      for (uint64_t e = l.dataOffset; e + l.elementSize <= s.length; e += l.elementSize)
        for (uint32_t off : l.refOffsets) word(e + off);
    }
    bytes += s.length;
    return n;
  };
  for (uint32_t i = 0; i < flags_.size(); ++i) {
    if (!(flags_[i] & kScan)) {
      ++skipped;
      continue;
    }
    ++scanned;
    uint32_t layout = options_.objectLayout.empty() ? 0 : options_.objectLayout[i];
    if (layout) {
      uint64_t found = scanLayout(first + i, dump_.objects[i], options_.layouts[layout - 1]);
      ++precise;
      preciseEdges += found;
      edges += found;
    } else {
      edges += scan(first + i, dump_.objects[i], interior);
    }
  }
  if constexpr (!kFill) {
    stats_.edges = edges;
    stats_.rootEdges = rootEdges;
    stats_.hitsInNoObject = misses;
    stats_.scannedObjects = scanned;
    stats_.skippedObjects = skipped;
    stats_.scannedBytes = bytes;
    stats_.preciseObjects = precise;
    stats_.preciseEdges = preciseEdges;
  }
}

std::vector<bool> HeapGraph::reachable() const {
  std::vector<uint8_t> b = reachableBytes();
  return std::vector<bool>(b.begin(), b.end());
}

std::vector<uint8_t> HeapGraph::reachableBytes() const {
  std::vector<uint8_t> seen(nodeCount());
  std::vector<uint32_t> todo{0};
  seen[0] = 1;
  while (!todo.empty()) {
    uint32_t n = todo.back();
    todo.pop_back();
    for (uint32_t t : out(n))
      if (!seen[t]) {
        seen[t] = 1;
        todo.push_back(t);
      }
  }
  return seen;
}

}  // namespace heapman::graph
