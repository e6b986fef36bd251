// Queries over the heap graph (graph_queries.h).
#include "heapman/graph/graph_queries.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <optional>
#include <unordered_map>

#include "heapman/replay/queries.h"

namespace heapman::graph {

namespace {

// The replay's rules for a user's regex (length bound, RE2 syntax): "bad --type regex 'R': why".
replay::Regex compile(const std::string& text, const char* option) {
  return replay::compileRegex(text, "", option);
}

}  // namespace

std::optional<DumpedPoint> dumpedGcAt(replay::Replay& r, DumpStore& store, uint64_t limit) {
  for (uint32_t n : store.dumpedGcs()) {
    const replay::GcRecord* g = r.tables().gc(n);
    if (g && g->ended && g->endSeq + 1 == limit) return DumpedPoint{n, limit};
  }
  // A point just before a dumped collection (a custom event recorded with --ram-dumps
  // event:NAME, whose dump is the next collection's): that collection's graph, the first
  // collection to end after the point. Never a later one.
  const replay::GcRecord* next = nullptr;
  for (const replay::GcRecord& g : r.tables().gcs)
    if (g.ended && g.endSeq + 1 > limit && (!next || g.endSeq < next->endSeq)) next = &g;
  if (next && store.has(next->number)) return DumpedPoint{next->number, next->endSeq + 1};
  return std::nullopt;
}

const HeapGraph& GraphSession::at(uint64_t limit) {
  std::optional<DumpedPoint> p = dumpedGcAt(r_, store_, limit);
  if (!p)
    throw GraphError(r_.describe(limit) + " has no RAM dump: the heap graph exists only just after "
                     "a dumped collection (--at gc:N); dumps in this log: " +
                     store_.describeDumped() +
                     ". Record with `heaprec run --ram-dumps every` (or every:N, or event:NAME "
                     "for the collection after a custom event)");
  uint32_t gc = p->gc;
  limit = p->limit;
  auto it = std::find_if(built_.begin(), built_.end(), [&](const auto& b) { return b->graph->gc() == gc; });
  if (it != built_.end()) {
    std::rotate(built_.begin(), it, it + 1);
  } else {
    if (built_.size() >= kKept) built_.pop_back();  // before the new one is built: its memory
    auto b = std::make_unique<Built>();
    b->graph = HeapGraph::atGc(r_, store_, gc);
    built_.insert(built_.begin(), std::move(b));
  }
  r_.seek(limit);
  return *cur().graph;
}

const DominatorTree& GraphSession::dominatorTree() {
  Built& b = cur();
  if (!b.dom) {
    const HeapGraph& g = *b.graph;
    std::vector<uint64_t> sizes(g.nodeCount());
    for (uint32_t n = g.firstObject(); n < g.nodeCount(); ++n) sizes[n] = g.size(n);
    b.dom = dominators(g.offsets(), g.targets(), 0, sizes);
  }
  return *b.dom;
}

std::span<const uint32_t> GraphSession::incoming(uint32_t n) {
  Built& b = cur();
  const HeapGraph& g = *b.graph;
  if (b.inOffsets.empty()) {
    b.inOffsets.assign(g.nodeCount() + 1, 0);
    for (uint32_t t : g.targets()) ++b.inOffsets[t + 1];
    for (uint32_t i = 0; i < g.nodeCount(); ++i) b.inOffsets[i + 1] += b.inOffsets[i];
    b.inSources.resize(g.targets().size());
    std::vector<uint32_t> fill(b.inOffsets.begin(), b.inOffsets.end() - 1);
    for (uint32_t v = 0; v < g.nodeCount(); ++v)
      for (uint32_t t : g.out(v)) b.inSources[fill[t]++] = v;
  }
  return {b.inSources.data() + b.inOffsets[n], b.inSources.data() + b.inOffsets[n + 1]};
}

const std::vector<uint32_t>& GraphSession::inDegrees() {
  Built& b = cur();
  if (b.inDegree.empty()) {
    b.inDegree.assign(b.graph->nodeCount(), 0);
    for (uint32_t t : b.graph->targets()) ++b.inDegree[t];
  }
  return b.inDegree;
}

GraphSession& graphSessionFor(replay::Replay& r) {
  // The session of the last Replay this thread asked for, by serial: a Replay made where a
  // destroyed one was must not get that one's dump store, and a destroyed one's graph must not
  // stay in memory. One per thread: heapman serve's workers each query a Replay of their own.
  thread_local std::unique_ptr<GraphSession> session;
  thread_local uint64_t serial = 0;
  if (!session || serial != r.serial()) {
    session.reset();
    session = std::make_unique<GraphSession>(r);
    serial = r.serial();
  }
  return *session;
}

uint64_t parseAddress(const std::string& text) {
  std::string t = text;
  if (t.size() > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X')) t = t.substr(2);
  size_t used = 0;
  uint64_t v = 0;
  try {
    v = std::stoull(t, &used, 16);
  } catch (const std::exception&) {
    used = 0;
  }
  if (t.empty() || used != t.size())
    throw GraphError("'" + text + "' is not an address (hex, e.g. 0x55d0c0a01230)");
  return v;
}

std::string nodeName(const HeapGraph& g, uint32_t n) {
  if (n == 0) return "(super-root)";
  if (g.isRoot(n)) return g.root(n).label;
  return hexAddress(g.address(n));
}

NodeFacts factsOf(GraphSession& s, replay::Attribution& a, uint32_t n, bool withRetained) {
  const HeapGraph& g = s.graph();
  NodeFacts f;
  f.node = n;
  f.address = g.address(n);
  f.size = g.size(n);
  f.inDegree = s.inDegrees()[n];
  if (withRetained) f.retained = s.dominatorTree().retained[n];
  if (n == 0) {
    f.kind = "super-root";
    f.type = "(super-root)";
    return f;
  }
  if (g.isRoot(n)) {
    f.kind = "root";
    f.type = g.root(n).label;
    f.heap = log::rootSourceName(g.root(n).source);
    f.thread = g.root(n).thread;
    return f;
  }
  f.kind = "object";
  uint32_t infoId = g.objectInfo(n);
  if (!infoId) {
    f.type = "(untracked)";
    f.heap = "?";
    return f;
  }
  const replay::AllocInfo& info = s.replay().info(infoId - 1);
  f.type = replay::typeLabel(s.replay().tables(), info);
  f.heap = log::heapKindName(info.heap);
  const replay::Site& site = a.site(a.siteOf(info.stackId));
  f.function = site.function;
  f.location = site.location;
  if (auto lo = s.replay().live().find(f.address)) f.birthSeq = lo->birthSeq();
  f.birthGc = s.replay().epochOf(f.birthSeq);
  const auto& events = s.replay().tables().events;  // in seq order
  auto ev = std::upper_bound(events.begin(), events.end(), f.birthSeq,
                             [](uint64_t seq, const replay::EventRecord& e) { return seq < e.seq; });
  if (ev != events.begin()) {
    --ev;
    f.birthEvent = s.replay().tables().eventName(ev->nameId) + "#" + std::to_string(ev->occurrence);
  }
  f.thread = info.thread;
  return f;
}

namespace {

void prepareAll(GraphSession& s, replay::Attribution& a) {
  const HeapGraph& g = s.graph();
  std::vector<bool> seen(s.replay().tables().infos.size());
  std::vector<uint32_t> ids;
  for (uint32_t n = g.firstObject(); n < g.nodeCount(); ++n)
    if (uint32_t p = g.objectInfo(n)) {
      uint32_t i = p - 1;
      if (i < seen.size() && !seen[i]) seen[i] = true, ids.push_back(i);
    }
  a.prepareInfos(ids);
}

}  // namespace

ObjectsResult listObjects(GraphSession& s, replay::Attribution& a, uint64_t limit,
                          const ObjectsFilter& filter) {
  std::optional<replay::Regex> typeRe, fnRe;
  if (!filter.typeRegex.empty()) typeRe = compile(filter.typeRegex, "--type");
  if (!filter.functionRegex.empty()) fnRe = compile(filter.functionRegex, "--function");
  const HeapGraph& g = s.at(limit);
  prepareAll(s, a);
  ObjectsResult res;
  res.gc = g.gc();
  std::vector<uint8_t> seen;
  if (filter.unreachableOnly) seen = g.reachableBytes();
  for (uint32_t n = g.firstObject(); n < g.nodeCount(); ++n) {
    if (filter.unreachableOnly && seen[n]) continue;
    NodeFacts f = factsOf(s, a, n, true);
    if (typeRe && !typeRe->search(f.type)) continue;
    if (fnRe && !fnRe->search(f.function)) continue;
    ++res.matched;
    res.matchedBytes += f.size;
    res.rows.push_back(std::move(f));
  }
  std::stable_sort(res.rows.begin(), res.rows.end(), [](const NodeFacts& x, const NodeFacts& y) {
    return x.retained != y.retained ? x.retained > y.retained : x.address < y.address;
  });
  if (filter.top && res.rows.size() > filter.top) res.rows.resize(filter.top);
  return res;
}

ObjectResult describeObject(GraphSession& s, replay::Attribution& a, uint64_t limit,
                            uint64_t address, size_t refLimit) {
  const HeapGraph& g = s.at(limit);
  ObjectResult res;
  res.gc = g.gc();
  res.address = address;
  uint32_t n = g.objectAt(address, true);
  if (n == kNoNode) {
    const auto& objs = g.dump().objects;
    auto it = std::lower_bound(objs.begin(), objs.end(), address,
                               [](const DumpSegment& d, uint64_t x) { return d.address < x; });
    size_t i = static_cast<size_t>(it - objs.begin());
    if (i > 0) res.nearest.push_back(factsOf(s, a, g.firstObject() + static_cast<uint32_t>(i - 1), true));
    if (i < objs.size()) res.nearest.push_back(factsOf(s, a, g.firstObject() + static_cast<uint32_t>(i), true));
    return res;
  }
  res.found = true;
  res.object = factsOf(s, a, n, true);
  if (uint32_t p = g.objectInfo(n)) {
    uint32_t stack = s.replay().info(p - 1).stackId;
    for (uint32_t node : s.replay().tables().stackNodes(stack))
      for (const replay::NamedFrame& f : a.namer().frames(node))
        res.stack.push_back(f.function + (f.location().empty() ? "" : " (" + f.location() + ")"));
  }
  std::span<const uint8_t> b = g.bytes(n);
  for (uint64_t off = 0; off + 8 <= b.size() && res.words.size() < 64; off += 8) {
    WordView w;
    w.offset = off;
    std::memcpy(&w.value, b.data() + off, 8);
    for (int i = 0; i < 8; ++i) {
      char c = static_cast<char>(b[off + static_cast<uint64_t>(i)]);
      w.ascii += c >= 32 && c < 127 ? c : '.';
    }
    uint32_t t = g.objectAt(w.value);
    if (t != kNoNode) {
      NodeFacts tf = factsOf(s, a, t, false);
      w.pointsTo = hexAddress(tf.address) + (w.value != tf.address ? " (+" + std::to_string(w.value - tf.address) + ")" : "") +
                   " " + tf.type;
    }
    res.words.push_back(std::move(w));
  }
  forEachPointer(g, n, [&](uint64_t off, uint64_t v, uint32_t t) {
    ++res.outTotal;
    if (res.out.size() < refLimit) res.out.push_back({factsOf(s, a, t, false), off, v});
  });
  uint32_t previous = kNoNode;
  for (uint32_t from : s.incoming(n)) {
    if (from == previous || from == 0) continue;  // one pass per pointing node
    previous = from;
    forEachPointer(g, from, [&](uint64_t off, uint64_t v, uint32_t t) {
      if (t != n) return;
      ++res.inTotal;
      if (res.in.size() < refLimit) res.in.push_back({factsOf(s, a, from, false), off, v});
    });
  }
  return res;
}

std::vector<RefRow> references(GraphSession& s, replay::Attribution& a, uint64_t limit,
                               uint64_t address, bool incoming, uint32_t depth, size_t maxRows) {
  const HeapGraph& g = s.at(limit);
  uint32_t start = g.objectAt(address, true);
  if (start == kNoNode)
    throw GraphError(hexAddress(address) + " is in no object alive at GC " + std::to_string(g.gc()) +
                     " (heapman object shows the nearest ones)");
  std::vector<RefRow> rows;
  std::vector<uint32_t> level{start};
  std::unordered_map<uint32_t, bool> seen{{start, true}};
  for (uint32_t d = 1; d <= depth && !level.empty() && rows.size() < maxRows; ++d) {
    std::vector<uint32_t> next;
    for (uint32_t v : level) {
      std::vector<uint32_t> others;
      if (incoming)
        others.assign(s.incoming(v).begin(), s.incoming(v).end());
      else
        others.assign(g.out(v).begin(), g.out(v).end());
      std::sort(others.begin(), others.end());
      others.erase(std::unique(others.begin(), others.end()), others.end());
      for (uint32_t o : others) {
        if (o == 0 || rows.size() >= maxRows) continue;
        uint32_t from = incoming ? o : v, to = incoming ? v : o;
        RefRow row;
        row.depth = d;
        row.from = factsOf(s, a, from, false);
        row.to = factsOf(s, a, to, false);
        bool got = false;
        forEachPointer(g, from, [&](uint64_t off, uint64_t, uint32_t t) {
          if (t == to && !got) row.offset = off, got = true;
        });
        rows.push_back(std::move(row));
        if (!seen[o]) {
          seen[o] = true;
          if (g.isObject(o)) next.push_back(o);
        }
      }
    }
    level = std::move(next);
  }
  return rows;
}

RetainedResult retainedBy(GraphSession& s, replay::Attribution& a, uint64_t limit, RetainedBy by,
                          size_t top) {
  const HeapGraph& g = s.at(limit);
  const DominatorTree& t = s.dominatorTree();
  RetainedResult res;
  res.gc = g.gc();
  res.reachable = t.reachable;
  const uint32_t first = g.firstObject(), n = g.nodeCount();
  res.totalObjects = n - first;
  for (uint32_t v = first; v < n; ++v) res.totalBytes += g.size(v);

  if (by == RetainedBy::kObject) {
    prepareAll(s, a);  // (groupNodes prepares the infos for the other two)
    std::vector<uint32_t> order;
    for (uint32_t v = first; v < n; ++v) order.push_back(v);
    std::stable_sort(order.begin(), order.end(),
                     [&](uint32_t x, uint32_t y) { return t.retained[x] > t.retained[y]; });
    if (top && order.size() > top) order.resize(top);
    for (uint32_t v : order) {
      NodeFacts f = factsOf(s, a, v, true);
      res.rows.push_back({hexAddress(f.address), f.type, f.function, 1, f.size, f.retained});
    }
    return res;
  }
  NodeGroups groups = groupNodes(s, a, by);
  res.rows.resize(groups.name.size());
  for (size_t i = 0; i < res.rows.size(); ++i) {
    res.rows[i].name = groups.name[i];
    res.rows[i].location = groups.location[i];
  }
  for (uint32_t v = first; v < n; ++v) {
    RetainedRow& row = res.rows[groups.group[v]];
    row.objects += 1;
    row.bytes += g.size(v);
  }
  std::vector<uint64_t> retained = retainedPerGroup(t, groups.group, res.rows.size());
  for (size_t i = 0; i < res.rows.size(); ++i) res.rows[i].retained = retained[i];
  std::stable_sort(res.rows.begin(), res.rows.end(), [](const RetainedRow& x, const RetainedRow& y) {
    return x.retained != y.retained ? x.retained > y.retained : x.name < y.name;
  });
  if (top && res.rows.size() > top) res.rows.resize(top);
  return res;
}

NodeGroups groupNodes(GraphSession& s, replay::Attribution& a, RetainedBy by) {
  const HeapGraph& g = s.graph();
  replay::Replay& r = s.replay();
  prepareAll(s, a);
  NodeGroups out;
  out.group.assign(g.nodeCount(), UINT32_MAX);
  std::unordered_map<std::string, uint32_t> ids;  // name '\x1f' location -> group
  std::unordered_map<uint32_t, uint32_t> ofInfo;  // AllocInfo id (0: untracked) -> group
  for (uint32_t v = g.firstObject(); v < g.nodeCount(); ++v) {
    uint32_t infoId = g.objectInfo(v);
    auto [at, fresh] = ofInfo.try_emplace(infoId);
    if (fresh) {
      std::string name = "(untracked)", location;
      if (infoId) {
        const replay::AllocInfo& info = r.info(infoId - 1);
        if (by == RetainedBy::kType) {
          name = replay::typeLabel(r.tables(), info);
        } else {
          const replay::Site& site = a.site(a.siteOf(info.stackId));
          if (!site.function.empty()) name = site.function;
          location = site.location;
        }
      }
      auto [it, added] = ids.try_emplace(name + '\x1f' + location,
                                         static_cast<uint32_t>(out.name.size()));
      if (added) {
        out.name.push_back(std::move(name));
        out.location.push_back(std::move(location));
      }
      at->second = it->second;
    }
    out.group[v] = at->second;
  }
  return out;
}

std::vector<uint64_t> retainedPerGroup(const DominatorTree& t, std::span<const uint32_t> group,
                                       size_t groups) {
  // The retained sizes of a group's objects that no other object of the group dominates: a DFS
  // of the dominator tree counting the group's objects on the current path.
  const uint32_t n = static_cast<uint32_t>(t.idom.size());
  std::vector<uint64_t> out(groups, 0);
  std::vector<uint32_t> childOff(n + 1, 0), child;
  for (uint32_t v = 1; v < n; ++v)
    if (t.idom[v] != UINT32_MAX) ++childOff[t.idom[v] + 1];
  for (uint32_t v = 0; v < n; ++v) childOff[v + 1] += childOff[v];
  child.resize(childOff[n]);
  {
    std::vector<uint32_t> fill(childOff.begin(), childOff.end() - 1);
    for (uint32_t v = 1; v < n; ++v)
      if (t.idom[v] != UINT32_MAX) child[fill[t.idom[v]]++] = v;
  }
  std::vector<uint32_t> active(groups, 0);
  std::vector<std::pair<uint32_t, uint32_t>> stack{{0, childOff[0]}};
  while (!stack.empty()) {
    auto& [v, e] = stack.back();
    if (e == childOff[v + 1]) {
      if (v < group.size() && group[v] != UINT32_MAX) --active[group[v]];
      stack.pop_back();
      continue;
    }
    uint32_t c = child[e++];
    if (c < group.size() && group[c] != UINT32_MAX && active[group[c]]++ == 0)
      out[group[c]] += t.retained[c];
    stack.push_back({c, childOff[c]});
  }
  return out;
}

}  // namespace heapman::graph
