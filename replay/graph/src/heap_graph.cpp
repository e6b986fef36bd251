// HeapGraph (heap_graph.h): the address map, the two-pass scan into CSR, reachability.
#include "heapman/graph/heap_graph.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <new>

#include "phase_timer.h"

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
  HEAPMAN_PHASE_START;
  map_.build(dump_.objects.data(), static_cast<uint32_t>(n));
  HEAPMAN_PHASE("map");
  scan();
  HEAPMAN_PHASE("scan");
  stats_.scanSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  stats_.objects = n;
  stats_.rootRanges = roots_.size();
  for (uint8_t f : flags_) {
    stats_.untracked += (f & kUntracked) != 0;
    stats_.rootObjects += (f & kRootObject) != 0;
  }
  stats_.graphBytes = info_.capacity() * 4 + flags_.capacity() + offsets_.capacity() * 4 +
                      edgeTotal_ * 4 + map_.memoryBytes();
}

void HeapGraph::countUnreachable() const {
  std::vector<uint8_t> seen = reachableBytes();
  for (uint32_t i = firstObject(); i < nodeCount(); ++i)
    if (!seen[i]) ++((flags_[i - firstObject()] & kUntracked) ? stats_.unreachableUntracked
                                                              : stats_.unreachable);
  reachCounted_ = true;
}

namespace {

// Growable output of the scan: a buffer sized to an upper bound of the edges (one per word
// scanned), so the hot loop writes without a capacity check; pages never written are never
// touched. malloc'd, so that realloc gives it to the graph shrunk to its size: a big block is
// mmap'd by glibc and shrinks (or grows) by mremap, without a copy.
struct EdgeBuffer {
  uint32_t* data;
  uint64_t size = 0, capacity = 0;
  explicit EdgeBuffer(uint64_t n) : data(allocate(nullptr, n)), capacity(n) {}
  ~EdgeBuffer() { std::free(data); }
  void reserveMore(uint64_t more) {
    if (size + more <= capacity) return;
    capacity = std::max(capacity * 2, size + more);
    data = allocate(data, capacity);
  }
  // The buffer, exactly `size` long, for the graph to own.
  uint32_t* release() {
    uint32_t* d = allocate(data, std::max<uint64_t>(size, 1));
    data = nullptr;
    return d;
  }
  static uint32_t* allocate(uint32_t* p, uint64_t n) {
    void* q = std::realloc(p, std::max<uint64_t>(n, 1) * 4);
    if (!q) throw std::bad_alloc();
    return static_cast<uint32_t*>(q);
  }
};

}  // namespace

// One pass over the nodes in id order: the super-root's edges, each root range's, each scanned
// object's. A node's edges are appended as its words are read, so offsets_[v + 1] is the edge
// count when the scan leaves v: no counting pass.
void HeapGraph::scan() {
  const uint32_t first = firstObject();
  const size_t n = flags_.size();
  offsets_.assign(n + roots_.size() + 2, 0);
  // Every word read gives at most one edge; managed layouts are checked as they are scanned.
  EdgeBuffer out(dump_.byteCount / 8 + roots_.size() + n + 1);
  uint32_t* o = out.data;
  // Super-root.
  for (uint32_t r = 1; r <= rootCount(); ++r) *o++ = r;
  for (uint32_t i = 0; i < n; ++i)
    if (flags_[i] & kRootObject) *o++ = first + i;
  offsets_[1] = static_cast<uint32_t>(o - out.data);

  uint64_t misses = 0, scanned = 0, skipped = 0, bytes = 0;
  // Look-ahead, on a heap whose page entries outgrow the caches (past 4 MiB of them: a 128 MiB
  // heap; on smaller ones the extra instructions cost more than the misses they hide): the bytes
  // of the object kBytesAhead ahead are prefetched (logs recorded before the writer sorted its
  // runs hold them out of the scan's order), and kLookupsAhead ahead, its bytes arrived, the
  // page entries its first words point into, since a pointer to anywhere in a big heap is a
  // cache miss the lookup would otherwise wait for.
    constexpr uint32_t kSegmentsAhead = 48, kBytesAhead = 24, kLookupsAhead = 12, kWordsAhead = 8;
  const bool lookAhead = map_.tableBytes() > (size_t{4} << 20);
  const uint8_t* dumpEnd = dump_.bytes.data() + dump_.bytes.size();
  // The aligned words of [p, p + len) (the collector scans aligned words only) into o.
  auto words = [&]<bool kInterior>(const uint8_t* p, uint64_t len, uint64_t address) {
    uint64_t skip = (8 - (address & 7)) & 7;
    bytes += len;
    if (len < skip + 8) return;
    const uint8_t* end = p + len - 7;
    uint32_t* w = o;
    uint64_t miss = 0;
    for (const uint8_t* q = p + skip; q < end; q += 8) {
      uint64_t v;
      std::memcpy(&v, q, 8);
      uint32_t t = map_.lookup(v, kInterior);
      if (t < AddressMap::kMiss)
        *w++ = first + t;
      else
        miss += t == AddressMap::kMiss;
    }
    o = w;
    misses += miss;
  };
  auto scanRange = [&](const DumpSegment& s, bool interior) {
    if (interior)
      words.template operator()<true>(dump_.data(s), s.length, s.address);
    else
      words.template operator()<false>(dump_.data(s), s.length, s.address);
  };
  auto edgeCount = [&] { return static_cast<uint64_t>(o - out.data); };
  auto close = [&](uint32_t node) {
    uint64_t e = edgeCount();
    if (e > UINT32_MAX) throw GraphError("more than 2^32 edges");
    offsets_[node + 1] = static_cast<uint32_t>(e);
  };
  const uint64_t superEdges = edgeCount();
  for (uint32_t r = 0; r < rootCount(); ++r) {
    scanRange(dump_.roots[r], interiorFrom(r + 1));
    close(r + 1);
  }
  const uint64_t rootEdges = edgeCount() - superEdges;
  // A managed object with a known layout: only its reference words (the collector's own view:
  // mono-boehm scans them through the class's GC descriptor).
  const bool interior = options_.interiorPointers;
  uint64_t precise = 0, preciseEdges = 0;
  auto scanLayout = [&](const DumpSegment& s, const ObjectLayout& l) {
    const uint8_t* p = dump_.data(s);
    uint64_t refs = l.refOffsets.size();
    if (l.kind != log::TypeLayout::kFields)
      refs *= l.elementSize && s.length > l.dataOffset ? (s.length - l.dataOffset) / l.elementSize
                                                         : 0;
    uint64_t at = edgeCount();
    out.size = at;
    out.reserveMore(refs);
    o = out.data + at;
    auto word = [&](uint64_t off) {
      if (off + 8 > s.length) return;
      uint64_t v;
      std::memcpy(&v, p + off, 8);
      uint32_t t = map_.find(v, interior);
      if (t != AddressMap::kNone) *o++ = first + t;
    };
    if (l.kind == log::TypeLayout::kFields) {
      for (uint32_t off : l.refOffsets) word(off);
    } else if (l.elementSize) {
      for (uint64_t e = l.dataOffset; e + l.elementSize <= s.length; e += l.elementSize)
        for (uint32_t off : l.refOffsets) word(e + off);
    }
    bytes += s.length;
    preciseEdges += edgeCount() - at;
  };
  const bool layouts = !options_.objectLayout.empty();
  for (uint32_t i = 0; i < n; ++i) {
    if (lookAhead && i + kBytesAhead < n) {
      __builtin_prefetch(dump_.objects.data() + i + kSegmentsAhead);  // read kBytesAhead on
      __builtin_prefetch(dump_.data(dump_.objects[i + kBytesAhead]));
    }
    if (lookAhead && i + kLookupsAhead < n) {
      const uint8_t* b = dump_.data(dump_.objects[i + kLookupsAhead]);
      // The same words whatever the object's length or kind: no branch to mispredict.
      if (b + 8 * kWordsAhead <= dumpEnd) {
        for (uint64_t k = 0; k < kWordsAhead; ++k) {
          uint64_t v;
          std::memcpy(&v, b + 8 * k, 8);
          map_.prefetch(v);
        }
      }
    }
    if (!(flags_[i] & kScan)) {
      ++skipped;
    } else {
      ++scanned;
      uint32_t layout = layouts ? options_.objectLayout[i] : 0;
      if (layout) {
        scanLayout(dump_.objects[i], options_.layouts[layout - 1]);
        ++precise;
      } else {
        scanRange(dump_.objects[i], interior);
      }
    }
    close(first + i);
  }
  stats_.edges = edgeCount() - superEdges;
  stats_.rootEdges = rootEdges;
  stats_.hitsInNoObject = misses;
  stats_.scannedObjects = scanned;
  stats_.skippedObjects = skipped;
  stats_.scannedBytes = bytes;
  stats_.preciseObjects = precise;
  stats_.preciseEdges = preciseEdges;
  out.size = edgeTotal_ = edgeCount();
  targets_.reset(out.release());
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
        __builtin_prefetch(&offsets_[t]);  // read when t is taken: a cache miss on a big heap
      }
    // The next node taken is the last pushed: start loading its edges.
    if (!todo.empty()) __builtin_prefetch(targets_.get() + offsets_[todo.back()]);
  }
  return seen;
}

}  // namespace heapman::graph
