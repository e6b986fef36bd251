// HeapGraph::atGc (heap_graph.h): a dump joined with the replay's live set and the GC's root set.
#include <algorithm>
#include <cstdio>
#include <map>
#include <unordered_map>
#include <type_traits>

#include "heapman/graph/heap_graph.h"
#include "heapman/replay/replay.h"

namespace heapman::graph {

// Which record chunks were decoded and what they held, for the graph builder; the RootSet
// records of every GC seen and the layouts of every TypeDef seen. A session decodes each record
// chunk at most once, whatever GCs it asks for.
struct RecordFacts {
  std::vector<const log::ChunkRef*> chunks;  // the record chunks, in file order
  std::vector<uint8_t> decoded;              // per chunk: 1 once decoded
  size_t prefix = 0;                         // chunks [0, prefix) are all decoded
  std::unordered_map<uint32_t, std::vector<log::RootEntry>> rootSets;  // by GC number
  std::unordered_map<uint32_t, ObjectLayout> layouts;                   // by type id
  // What the runtime called each root range it registered (Mono's "static fields of ..."), by
  // address: the first (address, size, label) seen; bdwgc's GC_add_roots ranges have none.
  std::map<uint64_t, std::pair<uint64_t, std::string>> rangeLabels;
  std::vector<uint8_t> buffer;
};

RecordFacts& DumpStore::recordFacts() {
  if (!facts_) {
    facts_ = std::make_shared<RecordFacts>();
    for (const log::ChunkRef& c : reader_.chunks())
      if (c.header.type == static_cast<uint16_t>(log::ChunkType::kRecords))
        facts_->chunks.push_back(&c);
    facts_->decoded.assign(facts_->chunks.size(), 0);
  }
  return *facts_;
}

namespace {

// Decodes record chunk i once: its RootSets and its types' layouts go into the cache.
void decodeOnce(const replay::Replay& r, RecordFacts& f, size_t i) {
  if (f.decoded[i]) return;
  r.reader().decodeChunk(*f.chunks[i], f.buffer, [&](const auto& rec) {
    using T = std::decay_t<decltype(rec)>;
    if constexpr (std::is_same_v<T, log::RootSet>) {
      auto& v = f.rootSets[rec.gcNumber];
      v.insert(v.end(), rec.roots.begin(), rec.roots.end());
    } else if constexpr (std::is_same_v<T, log::RootRange>) {
      if (rec.added && !rec.label.empty())
        f.rangeLabels.try_emplace(rec.address, rec.size, rec.label);
    } else if constexpr (std::is_same_v<T, log::TypeDef>) {
      if (rec.layout != log::TypeLayout::kUnknown)
        f.layouts[rec.id] = {rec.layout, rec.refOffsets, rec.elementSize, rec.dataOffset};
    }
  });
  f.decoded[i] = 1;
  while (f.prefix < f.decoded.size() && f.decoded[f.prefix]) ++f.prefix;
}

// The RootSet record of GC `gc`: from the record chunks that overlap the GC's sequence range.
const std::vector<log::RootEntry>& rootSetOf(const replay::Replay& r, RecordFacts& f,
                                             uint32_t gc) {
  static const std::vector<log::RootEntry> kNone;
  const replay::GcRecord* g = r.tables().gc(gc);
  if (!g) return kNone;
  for (size_t i = 0; i < f.chunks.size(); ++i) {
    uint64_t from = f.chunks[i]->header.firstSeq;
    uint64_t to = i + 1 < f.chunks.size() ? f.chunks[i + 1]->header.firstSeq : UINT64_MAX;
    if (to < g->beginSeq || from > g->endSeq) continue;
    decodeOnce(r, f, i);
  }
  auto it = f.rootSets.find(gc);
  return it == f.rootSets.end() ? kNone : it->second;
}

// The layouts of the managed types defined before GC `gc` ended (TypeDef records, format minor
// 1): type id -> layout, from every record chunk that starts before the GC's end. The cache may
// hold types defined later (for a later GC asked before): no object of this GC has their ids,
// since a type is defined before its first allocation, so they change nothing.
const std::unordered_map<uint32_t, ObjectLayout>& managedLayouts(const replay::Replay& r,
                                                                 RecordFacts& f, uint32_t gc) {
  const replay::GcRecord* g = r.tables().gc(gc);
  if (!g) return f.layouts;
  for (size_t i = f.prefix; i < f.chunks.size() && f.chunks[i]->header.firstSeq <= g->endSeq; ++i)
    decodeOnce(r, f, i);
  return f.layouts;
}

std::string baseName(const std::string& path) {
  size_t s = path.rfind('/');
  return s == std::string::npos ? path : path.substr(s + 1);
}

RootNode describeRoot(const replay::Replay& r, const RecordFacts& f, const DumpSegment& s,
                      const std::vector<log::RootEntry>& set) {
  RootNode n;
  n.source = s.kind == log::SegmentKind::kThreadStack ? log::RootSource::kThreadStack
                                                      : log::RootSource::kStaticData;
  for (const log::RootEntry& e : set)
    if (s.address >= e.address && s.address < e.address + e.size) {
      n.source = e.source;
      n.thread = e.thread;
      break;
    }
  switch (n.source) {
    case log::RootSource::kThreadStack:
    case log::RootSource::kMonoStack: {
      n.label = "thread";
      if (n.thread != log::kRecorderThread) {
        n.label += " " + std::to_string(n.thread);
        for (const log::ThreadStart& t : r.tables().threads)
          if (t.index == n.thread && !t.name.empty()) n.label += " (" + t.name + ")";
      }
      n.label += " stack";
      break;
    }
    case log::RootSource::kRegistered: n.label = "GC_add_roots range"; break;
    // the recorder's copy of what they pushed: its address says nothing
    case log::RootSource::kMarkProcedure: n.label = "pushed by mark procedures"; break;
    case log::RootSource::kPushedRange: n.label = "range pushed by the program"; break;
    // the recorder's table of the objects awaiting their finalizer (its address says nothing)
    case log::RootSource::kFinalizeQueue: n.label = "finalization queue"; break;
    default: {
      n.label = log::rootSourceName(n.source);
      // The runtime's own name for the range, where it gave one.
      auto it = f.rangeLabels.upper_bound(s.address);
      if (it != f.rangeLabels.begin() && s.address < std::prev(it)->first + std::prev(it)->second.first) {
        n.label = std::prev(it)->second.second;
        break;
      }
      for (const log::ModuleLoad& m : r.tables().modules) {
        bool in = s.address >= m.base && s.address < m.base + m.size;
        for (const log::ModuleSegment& seg : m.segments)
          in = in || (s.address >= m.base + seg.vaddr && s.address < m.base + seg.vaddr + seg.memSize);
        if (in) {
          n.label = baseName(m.path) + " data";
          break;
        }
      }
    }
  }
  return n;
}

// Whether the recorded collector accepts interior pointers: the header option the recorder
// writes ("gc_all_interior_pointers"), else the collector's default (Debian's libgc and Mono's
// Boehm build both accept them).
bool interiorPointers(const log::Header& h) {
  for (const auto& [k, v] : h.options)
    if (k == "gc_all_interior_pointers") return v != "0";
  return true;
}

}  // namespace

std::unique_ptr<HeapGraph> HeapGraph::atGc(replay::Replay& r, DumpStore& store, uint32_t gc) {
  Dump d = store.load(gc);  // throws for a GC without a dump
  r.seek(r.resolve("gc:" + std::to_string(gc)));
  // Join the dump's objects (ascending) with the live set's objects of the collected heaps,
  // sorted by address: one merge, no lookup per object.
  std::vector<replay::LiveObject> live;
  live.reserve(r.live().size());
  r.live().forEach([&](const replay::LiveObject& o) {
    log::HeapKind h = r.info(o.info()).heap;
    if (h != log::HeapKind::kNative && h != log::HeapKind::kOther) live.push_back(o);
  });
  replay::sortByAddress(live);
  size_t n = d.objects.size();
  std::vector<uint32_t> info(n);
  std::vector<uint8_t> flags(n);
  // Managed objects are scanned through their class's layout where the log has it (the record
  // chunks before the GC's end, decoded once per session; the GC's root set comes from the
  // same pass).
  RecordFacts& facts = store.recordFacts();
  static const std::unordered_map<uint32_t, ObjectLayout> kNoLayouts;
  bool managed = false;
  for (const replay::LiveObject& o : live) managed |= r.info(o.info()).heap == log::HeapKind::kManaged;
  const std::unordered_map<uint32_t, ObjectLayout>& typeLayouts =
      managed ? managedLayouts(r, facts, gc) : kNoLayouts;
  Options opt;
  std::unordered_map<uint32_t, uint32_t> layoutIndex;  // type id -> 1 + index in opt.layouts
  if (!typeLayouts.empty()) opt.objectLayout.assign(n, 0);
  uint64_t missing = 0;
  size_t j = 0;
  for (size_t i = 0; i < n; ++i) {
    uint64_t a = d.objects[i].address;
    for (; j < live.size() && live[j].address < a; ++j) ++missing;  // live, not dumped
    if (j == live.size() || live[j].address != a) {
      flags[i] = kScan | kUntracked;  // kind unknown: scanned, as the collector's default kind
      continue;
    }
    const replay::LiveObject& o = live[j++];
    info[i] = o.info() + 1;
    const replay::AllocInfo& ai = r.info(o.info());
    switch (ai.heap) {
      case log::HeapKind::kGcAtomic: flags[i] = 0; break;
      case log::HeapKind::kGcUncollectable: flags[i] = kScan | kRootObject; break;
      default: flags[i] = kScan;
    }
    if (ai.heap != log::HeapKind::kManaged || typeLayouts.empty()) continue;
    auto t = typeLayouts.find(ai.typeId);
    if (t == typeLayouts.end()) continue;
    if (t->second.kind == log::TypeLayout::kPointerFree) {
      flags[i] = 0;  // the collector does not scan it either (atomic allocation)
      continue;
    }
    uint32_t& idx = layoutIndex[ai.typeId];
    if (!idx) {
      opt.layouts.push_back(t->second);
      idx = static_cast<uint32_t>(opt.layouts.size());
    }
    opt.objectLayout[i] = idx;
  }
  missing += live.size() - j;
  std::vector<replay::LiveObject>().swap(live);
  const std::vector<log::RootEntry>& set = rootSetOf(r, facts, gc);
  std::vector<RootNode> roots;
  roots.reserve(d.roots.size());
  for (const DumpSegment& s : d.roots) roots.push_back(describeRoot(r, facts, s, set));
  opt.interiorPointers = interiorPointers(r.reader().header());
  auto g = std::make_unique<HeapGraph>(std::move(d), std::move(info), std::move(flags),
                                       std::move(roots), std::move(opt));
  g->stats_.liveNotDumped = missing;
  return g;
}

}  // namespace heapman::graph
