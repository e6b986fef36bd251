// Steps 2-4: the holders that grow at every dumped point (persistent objects, words of static
// roots), the accumulation point under each, its entries, root path and sentence.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <span>
#include <unordered_map>
#include <unordered_set>

#include "heapman/graph/export.h"
#include "heapman/graph/paths.h"
#include "heapman/leaks/leaks.h"
#include "heapman/replay/queries.h"
#include "static_names.h"

namespace heapman::leaks {

namespace {

using graph::HeapGraph;
using graph::hexAddress;
using graph::kNoNode;

// Objects present at the first dumped point, kept while they are present (same address, same
// birth) at every later one: columns, in address order.
struct Persistent {
  std::vector<uint64_t> address, birth;
  std::vector<uint32_t> node;  // at the current point; kNoNode once gone
  std::vector<uint64_t> retained;  // [i * k + j]
  std::vector<uint64_t> degree;
};

// A pointer-holding word of a static root range, keyed by its address.
struct Slot {
  std::string label;  // "static data of prog", "Mono statics"
  std::string symbol;  // the static variable ("g_history", "g_registry+0x8"), or ""
  std::string module;  // the root's label ("prog data")
  uint64_t rootAddress = 0, offset = 0;
  std::vector<uint64_t> retained;  // of the object it points to, at each point (0: none)
  uint32_t node = kNoNode;         // its target at the last point
  bool stack = false;              // a thread's stack as a whole (label "thread 2 (ai) stack")
  bool range = false;              // a root range (its group of one label) as a whole
  log::RootSource source = log::RootSource::kStaticData;  // a range's
  size_t seen = 0;                 // a stack: the points it was found at, in a row
};

bool stackRoot(log::RootSource s) {
  return s == log::RootSource::kThreadStack || s == log::RootSource::kMonoStack;
}

std::string rootKindText(const graph::RootNode& root) {
  switch (root.source) {
    case log::RootSource::kStaticData: return "static data of " + root.label;
    case log::RootSource::kMonoStatic: return "static field (" + root.label + ")";
    case log::RootSource::kMonoThreadStatic: return "thread-static field (" + root.label + ")";
    case log::RootSource::kRegistered: return "registered root " + root.label;
    case log::RootSource::kFinalizeQueue: return root.label;  // "finalization queue"
    default: return std::string(log::rootSourceName(root.source)) + " " + root.label;
  }
}

// The field a Mono static block's word belongs to, from the recorder's label of the block
// ("static fields of Game.Program: ScoreChanged +0x0, levels +0x8"): "Game.Program.ScoreChanged",
// or "" when the label does not list it.
std::string monoStaticField(const std::string& label, uint64_t offset) {
  const std::string prefix = "static fields of ";
  size_t colon = label.find(": ");
  if (label.rfind(prefix, 0) != 0 || colon == std::string::npos) return {};
  std::string type = label.substr(prefix.size(), colon - prefix.size());
  char at[24];
  std::snprintf(at, sizeof at, " +0x%llx", static_cast<unsigned long long>(offset));
  for (size_t from = colon + 2; from < label.size();) {
    size_t end = label.find(", ", from);
    std::string field = label.substr(from, end == std::string::npos ? std::string::npos : end - from);
    size_t space = field.rfind(' ');
    if (space != std::string::npos && field.substr(space) == at)
      return type + "." + field.substr(0, space);
    if (end == std::string::npos) break;
    from = end + 2;
  }
  return {};
}

std::string sizeText(uint64_t b) {
  char buf[32];
  if (b >= 10 * 1024 * 1024)
    std::snprintf(buf, sizeof buf, "%.0f MiB", b / 1048576.0);
  else if (b >= 10 * 1024)
    std::snprintf(buf, sizeof buf, "%.0f KiB", b / 1024.0);
  else
    std::snprintf(buf, sizeof buf, "%llu bytes", static_cast<unsigned long long>(b));
  return buf;
}

std::string countText(double v) {
  char buf[32];
  if (std::fabs(v - std::round(v)) < 0.05)
    std::snprintf(buf, sizeof buf, "%.0f", v);
  else
    std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

// Names of objects: type and site through the attribution (stacks prepared beforehand).
struct Namer {
  const HeapGraph& g;
  replay::Replay& r;
  replay::Attribution& a;
  uint32_t info(uint32_t n) const { return g.isObject(n) ? g.objectInfo(n) : 0; }
  std::string type(uint32_t n) const {
    uint32_t i = info(n);
    return i ? replay::typeLabel(r.tables(), r.info(i - 1)) : "(untracked)";
  }
  const replay::Site* site(uint32_t n) const {
    uint32_t i = info(n);
    return i ? &a.site(a.siteOf(r.info(i - 1).stackId)) : nullptr;
  }
  std::string function(uint32_t n) const {
    const replay::Site* s = site(n);
    return s ? s->function : "";
  }
  // One type and one allocating site: a link of the same chain.
  bool sameKind(uint32_t x, uint32_t y) const {
    uint32_t i = info(x), j = info(y);
    if (!i || !j) return false;
    const replay::AllocInfo &p = r.info(i - 1), &q = r.info(j - 1);
    return p.typeId == q.typeId && p.heap == q.heap &&
           a.siteOf(p.stackId) == a.siteOf(q.stackId);
  }
};

// Dominators of the graph without its transient references. Strong roots: root ranges other
// than thread stacks and the static data of the runtime's own modules (those the leaf-exclusion
// list names: libgc, libc, Mono...), and uncollectable objects. An edge from a node no strong
// root reaches to one a strong root reaches is dropped: a stale word on a stack, or in the
// collector's own tables, pointing into a static list would otherwise make the super-root the
// list's dominator at that point, and the static's retained size would dip for no reason.
// Objects only transient roots reach keep their edges (they still get a dominator).
//
// Root ranges of one group count as one holder: each root's `leader` (itself, or the group's
// first root) takes the super-root's edges to the others, so that what only the group keeps is
// dominated by the leader. The thread stacks are one group (a worker's local list that the main
// thread's stack also points into is theirs); so are the ranges of one table (Mono registers its
// string intern table's keys and values as two ranges of one label, both pointing to every
// interned string).
graph::DominatorTree steadyDominators(const HeapGraph& g, const std::vector<uint8_t>& strongRoot,
                                      const std::vector<uint32_t>& leader,
                                      std::vector<uint8_t>& steady) {
  const uint32_t n = g.nodeCount();
  steady.assign(n, 0);  // reached from a strong root
  std::vector<uint32_t> queue;
  for (uint32_t t : g.out(0))
    if ((g.isRoot(t) && strongRoot[t]) || g.isObject(t))
      if (!steady[t]) steady[t] = 1, queue.push_back(t);
  for (size_t i = 0; i < queue.size(); ++i)
    for (uint32_t t : g.out(queue[i]))
      if (!steady[t]) steady[t] = 1, queue.push_back(t);
  std::vector<std::vector<uint32_t>> followers(leader.size());
  for (uint32_t root = 1; root < leader.size(); ++root)
    if (leader[root] != root) followers[leader[root]].push_back(root);
  auto follower = [&](uint32_t t) { return g.isRoot(t) && leader[t] != t; };
  std::vector<uint32_t> offsets(n + 1, 0), targets;
  targets.reserve(g.targets().size());
  for (uint32_t u = 0; u < n; ++u) {
    for (uint32_t t : g.out(u))
      if ((u == 0 && !follower(t)) || (u != 0 && (steady[u] || !steady[t])))
        targets.push_back(t);
    if (u < followers.size())
      for (uint32_t t : followers[u]) targets.push_back(t);
    offsets[u + 1] = static_cast<uint32_t>(targets.size());
  }
  std::vector<uint64_t> sizes(n, 0);
  for (uint32_t v = g.firstObject(); v < n; ++v) sizes[v] = g.size(v);
  return graph::dominators(offsets, targets, 0, sizes);
}

// The function whose frame holds the word at `offset` of a thread's stack (root `root`): stacks
// grow down, so the first return address below the word is the one into that function (pushed
// by the call it was making). A word in a runtime frame (the collector's or Mono's, named by the
// leaf exclusions: a callee-saved register spilled there) belongs to the program's frame that
// called into the runtime: the first program function among the return addresses above it.
// "" when none is found within 64 KiB.
std::string frameHolding(const HeapGraph& g, uint32_t root, uint64_t offset,
                         replay::Attribution& a) {
  std::span<const uint8_t> b = g.bytes(root);
  constexpr uint64_t kReach = 64 * 1024;
  auto function = [&](uint64_t off, bool* runtime) -> std::string {
    uint64_t w;
    std::memcpy(&w, b.data() + off, 8);
    std::vector<replay::NamedFrame> fs = a.namer().codeAt(w);
    if (fs.empty()) return {};
    const replay::NamedFrame& f = fs.back();  // the function itself, not what it inlined
    // The runtime: what the leaf exclusions name, and on Mono the class library and wrappers
    // (a thread blocked in Monitor.Wait holds its caller's locals in registers spilled there),
    // JIT'ed ("System.Threading.Monitor:Wait") or compiled ahead of time (mscorlib.dll.so's
    // symbols spell the dots as '_': "System_Threading_Monitor_Wait").
    auto endsWith = [](const std::string& x, const char* tail) {
      const size_t t = std::strlen(tail);
      return x.size() >= t && x.compare(x.size() - t, t, tail) == 0;
    };
    *runtime = a.exclusions().excluded(f) || f.function.rfind("System.", 0) == 0 ||
               f.function.rfind("Mono.", 0) == 0 || f.function.rfind("(wrapper", 0) == 0 ||
               f.function.rfind("System_", 0) == 0 || f.function.rfind("Mono_", 0) == 0 ||
               endsWith(f.module, ".dll.so");
    return f.function;
  };
  const uint64_t first = (8 - (g.address(root) & 7)) & 7;
  for (uint64_t off = offset; off >= first + 8 && offset - off < kReach;) {
    off -= 8;
    bool runtime = false;
    std::string f = function(off, &runtime);
    if (f.empty()) continue;
    if (!runtime) return f;
    break;
  }
  for (uint64_t off = offset + 8; off + 8 <= b.size() && off - offset < kReach; off += 8) {
    bool runtime = false;
    std::string f = function(off, &runtime);
    if (!f.empty() && !runtime) return f;
  }
  return {};
}

}  // namespace

void growingContainers(graph::GraphSession& s, replay::Attribution& a,
                       const std::vector<LeakPoint>& points, const LeaksRequest& req,
                       LeaksResult& out) {
  std::vector<const LeakPoint*> dumped;
  for (const LeakPoint& p : points)
    if (p.dumped) dumped.push_back(&p);
  out.dumpedPoints = dumped.size();
  if (s.replay().tables().gcs.empty()) {
    out.graphNote = "the log has no collections: growing containers and their root paths need "
                    "a collector's RAM dumps (bdwgc, Mono: heaprec run --ram-dumps event:NAME)";
    return;
  }
  if (dumped.size() < std::max<size_t>(req.minPoints, 2)) {
    out.graphNote = std::to_string(dumped.size()) + " of the " + std::to_string(points.size()) +
                    " points have a RAM dump: record with heaprec run --ram-dumps " +
                    (out.event.empty() ? std::string("every") : "event:" + out.event) +
                    " for the growing containers and their root paths";
    return;
  }
  replay::Replay& r = s.replay();
  const size_t k = dumped.size();
  const uint64_t firstLimit = dumped[0]->eventLimit;  // born from here on: new
  Persistent per;
  StaticNames statics(r.tables().modules);
  std::unordered_map<uint64_t, size_t> slotIndex;
  std::unordered_map<std::string, size_t> rangeIndex;  // root ranges as holders, by label
  std::vector<Slot> slots;
  std::vector<uint64_t> birthLast;  // per node at the last point

  graph::DominatorTree domLast;
  std::vector<uint32_t> leaderLast;  // the root groups at the last point
  std::vector<uint8_t> strongLast;   // its strong roots (the root paths start there first)
  uint32_t stacksLast = kNoNode;
  for (size_t j = 0; j < k; ++j) {
    const HeapGraph& g = s.at(dumped[j]->limit);
    std::vector<uint8_t> strong(g.rootCount() + 1, 0);
    for (uint32_t root = 1; root <= g.rootCount(); ++root) {
      const graph::RootNode& rn = g.root(root);
      strong[root] = !stackRoot(rn.source);
      if (rn.source == log::RootSource::kStaticData) {
        replay::NamedFrame f;
        f.module = statics.moduleFile(g.address(root));
        strong[root] = f.module.empty() || !a.exclusions().excluded(f);
      }
    }
    // Groups of roots (steadyDominators): the thread stacks; the strong ranges of one source and
    // label.
    std::vector<uint32_t> leader(g.rootCount() + 1, 0);
    std::map<std::pair<int, std::string>, uint32_t> groups;
    uint32_t stacks = kNoNode;
    for (uint32_t root = 1; root <= g.rootCount(); ++root) {
      const graph::RootNode& rn = g.root(root);
      leader[root] = root;
      if (stackRoot(rn.source)) {
        if (stacks == kNoNode) stacks = root;
        leader[root] = stacks;
      } else if (strong[root]) {
        leader[root] =
            groups.emplace(std::make_pair(static_cast<int>(rn.source), rn.label), root).first->second;
      }
    }
    std::vector<uint8_t> steady;
    graph::DominatorTree dom = steadyDominators(g, strong, leader, steady);
    r.seek(dumped[j]->limit);
    const replay::LiveSet& live = r.live();
    const uint32_t first = g.firstObject(), n = g.nodeCount();
    auto birthOf = [&](uint32_t v) -> uint64_t {
      if (!g.objectInfo(v)) return 0;
      auto lo = live.find(g.address(v));
      return lo ? lo->birthSeq() : 0;
    };
    if (j == 0) {
      for (uint32_t v = first; v < n; ++v) {
        if (!g.objectInfo(v)) continue;  // untracked: no birth to match
        per.address.push_back(g.address(v));
        per.birth.push_back(birthOf(v));
        per.node.push_back(v);
      }
      per.retained.assign(per.address.size() * k, 0);
      per.degree.assign(per.address.size() * k, 0);
    } else {
      // One merge of the holders (address order) with this graph's objects (address order).
      uint32_t v = first;
      for (size_t i = 0; i < per.address.size(); ++i) {
        if (per.node[i] == kNoNode) continue;
        while (v < n && g.address(v) < per.address[i]) ++v;
        if (v < n && g.address(v) == per.address[i] && g.objectInfo(v) &&
            birthOf(v) == per.birth[i])
          per.node[i] = v;
        else
          per.node[i] = kNoNode;
      }
    }
    for (size_t i = 0; i < per.address.size(); ++i)
      if (uint32_t v = per.node[i]; v != kNoNode) {
        per.retained[i * k + j] = dom.retained[v];
        per.degree[i * k + j] = g.out(v).size();
      }
    for (uint32_t root = 1; root <= g.rootCount(); ++root) {
      if (stackRoot(g.root(root).source)) continue;  // below, as one holder
      if (!strong[root]) continue;  // the runtime's own statics
      const log::RootSource source = g.root(root).source;
      if (leader[root] == root && source != log::RootSource::kStaticData &&
          source != log::RootSource::kMonoStatic) {
        // A root range of the runtime as a whole is a holder too: a table whose every word is
        // filled once and then kept (a GC handle a level, an interned string a level, the
        // finalization queue) grows though none of its words does. Keyed by its group (source
        // and label). The program's statics are judged word by word (each a named holder).
        const std::string label = rootKindText(g.root(root));
        auto it = rangeIndex.find(label);
        if (it == rangeIndex.end()) {
          it = rangeIndex.emplace(label, slots.size()).first;
          Slot sl;
          sl.range = true;
          sl.label = label;
          sl.source = g.root(root).source;
          sl.retained.assign(k, 0);
          slots.push_back(std::move(sl));
        }
        Slot& sl = slots[it->second];
        sl.retained[j] = dom.retained[root];
        if (j + 1 == k) sl.node = root;
      }
      graph::forEachPointer(g, root, [&](uint64_t off, uint64_t, uint32_t target) {
        uint64_t key = g.address(root) + off;
        auto [it, added] = slotIndex.emplace(key, slots.size());
        if (added) {
          Slot sl;
          sl.label = rootKindText(g.root(root));
          sl.rootAddress = g.address(root);
          sl.offset = off;
          if (g.root(root).source == log::RootSource::kStaticData) {
            sl.symbol = statics.name(key);
            sl.module = g.root(root).label;
          } else if (g.root(root).source == log::RootSource::kMonoStatic) {
            sl.symbol = monoStaticField(g.root(root).label, off);
          }
          sl.retained.assign(k, 0);
          slots.push_back(std::move(sl));
        }
        Slot& sl = slots[it->second];
        sl.retained[j] = dom.retained[target];
        if (j + 1 == k) sl.node = target;
      });
    }
    // The thread stacks as one holder, like a static: what only they keep (a long-lived loop's
    // local list). Its words are no holders (a local moves between registers and spill slots as
    // the frames change), and its retained size swings with what the frames hold at the moment
    // (a level's scratch): the series counts only the bytes it keeps that were born before the
    // previous point, those that lived through a whole repetition (0 at the first point).
    if (stacks != kNoNode) {
      constexpr uint64_t kStacksKey = ~uint64_t{0};
      auto it = slotIndex.find(kStacksKey);
      if (it == slotIndex.end() && j == 0) {
        it = slotIndex.emplace(kStacksKey, slots.size()).first;
        Slot sl;
        sl.stack = true;
        sl.label = "thread stacks";
        sl.retained.assign(k, 0);
        slots.push_back(std::move(sl));
      }
      if (it != slotIndex.end() && slots[it->second].seen == j) {
        Slot& sl = slots[it->second];
        ++sl.seen;
        if (j + 1 == k) sl.node = stacks;
        if (j > 0) {
          const uint64_t before = dumped[j - 1]->limit;
          std::vector<uint8_t> under(n, 0);  // 1: stacks dominates it, 2: it does not
          std::vector<uint32_t> walk;
          for (uint32_t v = first; v < n; ++v) {
            if (steady[v] || dom.idom[v] == UINT32_MAX) continue;
            uint32_t u = v;
            while (!under[u]) {
              if (u < first) {  // the super-root or a root: a stack's is the stacks' own
                under[u] = u != 0 && leader[u] == stacks ? 1 : 2;
                break;
              }
              walk.push_back(u);
              u = dom.idom[u];
            }
            for (uint32_t w : walk) under[w] = under[u];
            walk.clear();
            if (under[v] == 1) {
              uint64_t b = birthOf(v);
              if (b && b < before) sl.retained[j] += g.size(v);
            }
          }
        }
      }
    }
    if (j + 1 == k) {
      birthLast.assign(n, 0);
      for (uint32_t v = first; v < n; ++v) birthLast[v] = birthOf(v);
      domLast = std::move(dom);
      leaderLast = leader;
      strongLast = strong;
      stacksLast = stacks;
    }
  }

  // The last point: dominator children, preorder, bytes born since the first point per subtree.
  const HeapGraph& g = s.graph();
  const graph::DominatorTree& dom = domLast;
  const uint32_t n = g.nodeCount();
  std::vector<uint32_t> childStart(n + 1, 0), children;
  for (uint32_t v = 1; v < n; ++v)
    if (dom.idom[v] != UINT32_MAX && dom.idom[v] != v) ++childStart[dom.idom[v] + 1];
  for (uint32_t v = 0; v < n; ++v) childStart[v + 1] += childStart[v];
  children.resize(childStart[n]);
  {
    std::vector<uint32_t> fill(childStart.begin(), childStart.end() - 1);
    for (uint32_t v = 1; v < n; ++v)
      if (dom.idom[v] != UINT32_MAX && dom.idom[v] != v) children[fill[dom.idom[v]]++] = v;
  }
  std::vector<uint32_t> pre;  // preorder from the super-root
  pre.reserve(n);
  {
    std::vector<uint32_t> stack{0};
    while (!stack.empty()) {
      uint32_t v = stack.back();
      stack.pop_back();
      pre.push_back(v);
      for (uint32_t c = childStart[v]; c < childStart[v + 1]; ++c) stack.push_back(children[c]);
    }
  }
  std::vector<uint64_t> fresh(n, 0);  // bytes born since the first point, per dominator subtree
  std::vector<uint32_t> subtree(n, 1), preIndex(n, UINT32_MAX), depth(n, 0);
  for (uint32_t i = 0; i < pre.size(); ++i) {
    preIndex[pre[i]] = i;
    if (i) depth[pre[i]] = depth[dom.idom[pre[i]]] + 1;
  }
  for (uint32_t v = g.firstObject(); v < n; ++v)
    if (birthLast[v] >= firstLimit) fresh[v] = g.size(v);
  for (size_t i = pre.size(); i-- > 1;) {
    uint32_t v = pre[i], p = dom.idom[v];
    fresh[p] += fresh[v];
    subtree[p] += subtree[v];
  }

  // Growing holders, by their node at the last point.
  std::vector<uint32_t> infos;
  for (uint32_t v = g.firstObject(); v < n; ++v)
    if (g.objectInfo(v)) infos.push_back(g.objectInfo(v) - 1);
  std::sort(infos.begin(), infos.end());
  infos.erase(std::unique(infos.begin(), infos.end()), infos.end());
  a.prepareInfos(infos);
  Namer name{g, r, a};

  struct Holder {
    uint32_t node = kNoNode;
    int64_t growth = 0;  // bytes over the points
    Trend trend;
    std::vector<uint64_t> retained, degree;
    std::string slot;  // the static (or stack) word that holds it, when it was found that way
    bool stack = false;  // that word is a thread stack's (a static's is preferred)
    bool range = false;  // a root range as a whole (a word of it, a static, is preferred)
    log::RootSource source = log::RootSource::kStaticData;  // a range's
  };
  std::unordered_map<uint32_t, Holder> growing;
  struct Miss {
    uint64_t step;  // the largest gain between two points: how near misses are ranked
    uint32_t node;  // named only if listed
    std::string slot, why;
  };
  std::vector<Miss> misses;
  auto bestStep = [](const std::vector<uint64_t>& v) {
    uint64_t b = 0;
    for (size_t i = 1; i < v.size(); ++i)
      if (v[i] > v[i - 1]) b = std::max(b, v[i] - v[i - 1]);
    return b;
  };
  auto consider = [&](uint32_t node, std::vector<uint64_t> ret, std::vector<uint64_t> deg,
                      const std::string& slot, const Slot* from) {
    const bool stack = from && from->stack;
    Trend tr = classify(ret), td = deg.empty() ? Trend{} : classify(deg);
    if (!tr.grows && !td.grows) {
      if (uint64_t b = bestStep(ret); b > 0)
        misses.push_back({b, node, slot, "retained size " + tr.why});
      return;
    }
    int64_t growth = tr.grows ? static_cast<int64_t>(ret.back()) - static_cast<int64_t>(ret.front())
                              : static_cast<int64_t>(fresh[node]);
    if (growth <= 0) return;
    Holder& h = growing[node];
    bool betterSlot = !slot.empty() && (h.slot.empty() || (h.stack && !stack));
    if (h.node == kNoNode || growth > h.growth || betterSlot) {
      std::string keepSlot = h.slot;
      bool keepStack = h.stack;
      h.node = node;
      h.growth = std::max(growth, h.growth);
      h.trend = tr.grows ? tr : td;
      h.retained = std::move(ret);
      if (!deg.empty()) h.degree = std::move(deg);
      h.slot = betterSlot || keepSlot.empty() ? slot : keepSlot;
      h.stack = betterSlot || keepSlot.empty() ? stack : keepStack;
      h.range = from && from->range;
      if (h.range) h.source = from->source;
    }
  };
  for (size_t i = 0; i < per.address.size(); ++i) {
    if (per.node[i] == kNoNode) continue;
    uint32_t v = per.node[i];
    std::vector<uint64_t> ret(per.retained.begin() + i * k, per.retained.begin() + (i + 1) * k);
    std::vector<uint64_t> deg(per.degree.begin() + i * k, per.degree.begin() + (i + 1) * k);
    consider(v, std::move(ret), std::move(deg), "", nullptr);
  }
  std::unordered_set<uint32_t> steadyWord;  // targets of static words judged not to grow
  for (const Slot& sl : slots) {
    if (sl.node == kNoNode || (sl.stack && sl.seen != k)) continue;
    if (!sl.stack && !sl.range && !classify(sl.retained).grows) steadyWord.insert(sl.node);
    std::string where = sl.stack || sl.range ? sl.label
                        : sl.symbol.empty()   ? sl.label + " +" + hexAddress(sl.offset)
                        : sl.module.empty() ? "static " + sl.symbol
                                            : "static " + sl.symbol + " (" + sl.module + ")";
    consider(sl.node, sl.retained, {}, where, &sl);
  }

  // A holder is dropped when a growing holder it dominates has most (80%) of its growth; a root
  // range as a whole also when the growing holders below it (its words' lists: a static block
  // with two growing fields) have most of it together: the range is a holder for what grows
  // through none of its words alone.
  std::vector<uint32_t> nearest(n, kNoNode);  // nearest growing proper ancestor
  std::unordered_map<uint32_t, uint32_t> explainedBy;
  std::unordered_map<uint32_t, int64_t> grownBelow;  // a range's: its nearest growing holders'
  for (size_t i = 1; i < pre.size(); ++i) {
    uint32_t v = pre[i], p = dom.idom[v];
    nearest[v] = growing.count(p) ? p : nearest[p];
    if (growing.count(v) && nearest[v] != kNoNode) {
      const Holder& up = growing[nearest[v]];
      if (growing[v].growth * 5 >= up.growth * 4) explainedBy[nearest[v]] = v;
      if (up.range) grownBelow[nearest[v]] += growing[v].growth;
    }
  }
  for (const auto& [node, below] : grownBelow)
    if (below * 5 >= growing[node].growth * 4) explainedBy.emplace(node, node);

  std::vector<Suspect> found;
  std::vector<std::vector<std::pair<uint64_t, uint64_t>>> foundEntries;  // per suspect
  std::map<uint32_t, size_t> byContainer;
  // Repetitions between the first and the last dumped point (a point without a dump between
  // them is still a repetition).
  const double steps = static_cast<double>(dumped.back() - dumped.front());
  // The descent from a node to its accumulation point: down to the child holding 80% of the
  // bytes born since the first point; a list's first link is the container, however its growth
  // splits between the next link and what the link holds (with few points, about half and half).
  auto descend = [&](uint32_t cur, bool* chain) {
    *chain = false;
    for (;;) {
      uint32_t best = kNoNode;
      for (uint32_t c = childStart[cur]; c < childStart[cur + 1]; ++c) {
        uint32_t v = children[c];
        if (fresh[v] && name.sameKind(v, cur)) *chain = true;  // the next link of a list
        if (best == kNoNode || fresh[v] > fresh[best]) best = v;
      }
      if (*chain) break;
      if (best == kNoNode || fresh[best] == 0 || fresh[best] * 5 < fresh[cur] * 4) break;
      cur = best;
    }
    return cur;
  };
  // The dumped steps in which objects a node dominates were born: a container gains at many
  // steps, an entry (or what replaced the last level's) at one.
  auto stepsWithBirths = [&](uint32_t v) {
    std::vector<uint8_t> seen(k, 0);
    size_t count = 0;
    for (uint32_t i = preIndex[v], end = preIndex[v] + subtree[v]; i < end; ++i) {
      uint64_t b = birthLast[pre[i]];
      if (b < firstLimit) continue;
      size_t j = std::upper_bound(dumped.begin(), dumped.end(), b,
                                  [](uint64_t x, const LeakPoint* p) { return x < p->limit; }) -
                 dumped.begin();
      if (j < k && !seen[j]) seen[j] = 1, ++count;
    }
    return count;
  };
  struct Part {
    uint32_t cur;
    bool chain;
    uint64_t fresh;
  };
  for (auto& [node, h] : growing) {
    if (explainedBy.count(node)) continue;
    // Accumulation point; where no child holds 80% of the new bytes, every child of another
    // kind that gains at most steps and holds at least 1/32 of them is a container of its own
    // (several lists under one World): a suspect each.
    std::vector<Part> parts;
    bool topChain = false;
    const uint32_t at = descend(node, &topChain);
    if (!topChain && fresh[at]) {
      std::vector<uint32_t> split;
      for (uint32_t c = childStart[at]; c < childStart[at + 1]; ++c) {
        uint32_t v = children[c];
        if (!g.isObject(v) || fresh[v] * 32 < fresh[at] || fresh[v] <= g.size(v)) continue;
        if (stepsWithBirths(v) * 2 < std::max<size_t>(k - 1, 3)) continue;
        split.push_back(v);
      }
      // Children of one kind are entries of this container, not containers of their own.
      for (size_t i = 0; i < split.size(); ++i)
        for (size_t j = i + 1; j < split.size(); ++j)
          if (name.sameKind(split[i], split[j])) split.clear();
      // The thread stacks hold their one container among the frames' scratch.
      // Under a root range, a child a word of it holds is judged by that word: one that does
      // not grow (a list cleared now and then) is no part, however the range's sum grows.
      if (h.range)
        std::erase_if(split, [&](uint32_t v) { return steadyWord.count(v) > 0; });
      if (split.size() >= 2 || (split.size() == 1 && !g.isObject(at)))
        for (uint32_t v : split) {
          bool ch = false;
          uint32_t c = descend(v, &ch);
          parts.push_back({c, ch, fresh[v]});
        }
    }
    if (parts.empty()) parts.push_back({at, topChain, fresh[node]});
    for (const Part& part : parts) {
      uint32_t cur = part.cur;
      // The thread stacks as the container (their words are the entries): where another
      // thread's stack has words pointing to the entries too (on Mono the main thread's holds
      // stale copies of a worker's list array), they hang from the stacks directly, not from
      // the list. The object that points to over half of them is the container then: its
      // root path starts at the stack, and the frame, of the thread that keeps it.
      if (h.stack && !g.isObject(cur)) {
        std::unordered_map<uint32_t, size_t> parents;
        size_t born = 0;
        for (uint32_t c = childStart[cur]; c < childStart[cur + 1]; ++c) {
          uint32_t e = children[c];
          if (!g.isObject(e) || birthLast[e] < firstLimit) continue;
          ++born;
          std::unordered_set<uint32_t> once;
          for (uint32_t p : s.incoming(e))
            if (p >= g.firstObject() && p != e && once.insert(p).second) ++parents[p];
        }
        uint32_t best = kNoNode;
        for (const auto& [p, count] : parents)
          if (best == kNoNode || count > parents[best] || (count == parents[best] && p < best))
            best = p;
        if (best != kNoNode && parents[best] * 2 > born) cur = best;
      }
      const bool chain = part.chain;
      Suspect sp;
      sp.holderKind = h.slot.empty() ? "object" : h.stack ? "stack" : h.range ? "root" : "static";
      // An object only the thread stacks keep (a loop's local list, found as a holder of its
      // own), where the stacks grew as a holder too: the stacks hold it. (Kept by a stack at the
      // last point only, it is no stack's: a list a static dropped, still in a local.)
      if (h.slot.empty() && stacksLast != kNoNode && growing.count(stacksLast)) {
        uint32_t u = node;
        while (u >= g.firstObject() && dom.idom[u] != UINT32_MAX) u = dom.idom[u];
        if (u != 0 && u < g.firstObject() && leaderLast[u] == stacksLast) sp.holderKind = "stack";
      }
      sp.holderSource = h.range ? h.source : log::RootSource::kStaticData;
      sp.holderType = g.isObject(node) ? name.type(node) : "";
      sp.holderSite = name.function(node);
      sp.holderAddress = g.address(node);
      // An untyped object (a native block on bdwgc) is named by the function that made it.
      const bool untypedHolder = sp.holderType.empty() || sp.holderType[0] == '(';
      sp.holder = !h.slot.empty() ? h.slot
                  : untypedHolder && !sp.holderSite.empty()
                      ? "a block allocated by " + sp.holderSite + " at " + hexAddress(sp.holderAddress)
                      : sp.holderType + " at " + hexAddress(sp.holderAddress);
      sp.containerType = g.isObject(cur) ? name.type(cur) : "";
      sp.containerSite = name.function(cur);
      sp.containerAddress = g.address(cur);
      sp.chain = chain;
      sp.retained = h.retained;
      sp.degree = h.degree;
      sp.gainedBytes = part.fresh;
      // The retained size's growth, but no more than what was born since the first point: a
      // holder that did not dominate its list yet at the first point (a stale pointer on a stack
      // shared it) would otherwise count the old part as growth.
      sp.bytesPerStep =
          static_cast<double>(std::min<uint64_t>(static_cast<uint64_t>(h.growth), part.fresh)) /
          steps;
      // Entries: the links of a chain, else the children born since the first point.
      std::vector<uint32_t> entries;
      if (chain) {
        // The links: along the pointers to objects of the same kind (a link held from elsewhere
        // too is not dominated by the one before it, but still in the list).
        std::unordered_map<uint32_t, bool> seen;
        for (uint32_t v = cur; v != kNoNode;) {
          seen[v] = true;
          if (birthLast[v] >= firstLimit) entries.push_back(v);
          uint32_t next = kNoNode;
          for (uint32_t t : g.out(v))
            if (!seen.count(t) && name.sameKind(t, v)) {
              next = t;
              break;
            }
          v = next;
        }
      } else if (!g.isObject(cur)) {
        // A root range (group) as the container: what it alone keeps, born since the first point.
        for (uint32_t c = childStart[cur]; c < childStart[cur + 1]; ++c)
          if (g.isObject(children[c]) && birthLast[children[c]] >= firstLimit)
            entries.push_back(children[c]);
      } else {
        // What it points to, born since the first point (a shared entry is still an entry).
        for (uint32_t v : g.out(cur))
          if (g.isObject(v) && birthLast[v] >= firstLimit) entries.push_back(v);
        std::sort(entries.begin(), entries.end());
        entries.erase(std::unique(entries.begin(), entries.end()), entries.end());
      }
      // Which function added the entries of each step (born between two dumped points).
      for (size_t j = 1; j < k; ++j) {
        std::map<std::string, size_t> bySite;
        for (uint32_t e : entries)
          if (birthLast[e] >= dumped[j - 1]->limit && birthLast[e] < dumped[j]->limit)
            ++bySite[name.function(e)];
        std::string text;
        for (const auto& [site, count] : bySite)
          text += (text.empty() ? "" : ", ") + site + " x" + std::to_string(count);
        sp.stepSites.push_back(text.empty() ? "-" : text);
      }
      // The entries proper: those of the commonest kind (type and allocating function; of as
      // many, the one retaining more): a dictionary's array also points to its keys.
      std::map<std::pair<std::string, std::string>, std::pair<size_t, uint64_t>> kinds;
      for (uint32_t e : entries) {
        auto& kd = kinds[{name.type(e), name.function(e)}];
        ++kd.first;
        kd.second += dom.retained[e];
      }
      if (!kinds.empty()) {
        auto top = std::max_element(kinds.begin(), kinds.end(), [](const auto& x, const auto& y) {
          return x.second < y.second;  // (count, retained bytes)
        });
        sp.entryType = top->first.first;
        sp.entrySite = top->first.second;
        std::erase_if(entries, [&](uint32_t e) {
          return name.type(e) != sp.entryType || name.function(e) != sp.entrySite;
        });
      }
      sp.entries = entries.size();
      // A root range (or the stacks) as the container: the path goes on to its first entry.
      sp.pathAddress = g.isObject(cur) || entries.empty() ? sp.containerAddress
                                                          : g.address(entries.front());
      sp.entriesPerStep = static_cast<double>(entries.size()) / steps;
      struct Kept {
        uint64_t bytes = 0, objects = 0;
        uint32_t depth = UINT32_MAX;  // the shallowest one's in the dominator tree
      };
      std::map<std::string, Kept> kept;
      uint64_t keeps = 0;
      std::map<std::string, uint64_t> mains;  // the biggest dominated child's type -> entries
      std::sort(entries.begin(), entries.end(),
                [&](uint32_t x, uint32_t y) { return preIndex[x] < preIndex[y]; });
      for (size_t ei = 0; ei < entries.size(); ++ei) {
        uint32_t e = entries[ei];
        if (preIndex[e] == UINT32_MAX) continue;  // no root reaches it
        // What it mainly keeps: its dominated child retaining most, through closure classes the
        // compiler made (Foo.<Bar>c__AnonStorey0, <>c__DisplayClass) to what they captured.
        for (uint32_t m = e, guard = 0; guard < 8; ++guard) {
          uint32_t best = kNoNode;
          for (uint32_t c = childStart[m]; c < childStart[m + 1]; ++c) {
            uint32_t v = children[c];
            if (chain && name.sameKind(v, e)) continue;  // the next link is not what it keeps
            if (best == kNoNode || dom.retained[v] > dom.retained[best]) best = v;
          }
          if (best == kNoNode || !g.isObject(best)) break;
          std::string ty = name.type(best);
          if (ty.find(">c__") == std::string::npos) {
            // An untyped object (C: "(gc)") is told by where it was made.
            if (ty.rfind('(', 0) == 0 && !name.function(best).empty())
              ty += " from " + name.function(best);
            ++mains[ty];
            break;
          }
          m = best;
        }
        // A link's own part: its subtree up to the next link (entries are in preorder).
        uint32_t end = preIndex[e] + subtree[e];
        for (uint32_t i = preIndex[e]; i < end; ++i) {
          uint32_t v = pre[i];
          if (chain && v != e && name.sameKind(v, e)) {
            i += subtree[v] - 1;  // the next link's subtree is its own
            continue;
          }
          keeps += g.size(v);
          if (v != e && g.isObject(v)) {
            Kept& kk = kept[name.type(v)];
            kk.bytes += g.size(v);
            ++kk.objects;
            kk.depth = std::min(kk.depth, depth[v]);
          }
        }
      }
      if (!entries.empty()) {
        for (uint32_t e : entries)
          if (name.type(e) == sp.entryType && name.function(e) == sp.entrySite) {
            if (const replay::Site* site = name.site(e)) sp.entryLocation = site->location;
            break;
          }
        sp.entryKeeps = keeps / entries.size();
        for (const auto& [ty, count] : mains)
          if (count * 2 > entries.size()) sp.keptMain = ty;
        if (!kept.empty()) {
          // What an entry keeps most of: the most objects; of as many, the type nearer the entry
          // (enemies rather than their names), then the more bytes.
          auto kt = std::max_element(kept.begin(), kept.end(), [](const auto& x, const auto& y) {
            if (x.second.objects != y.second.objects) return x.second.objects < y.second.objects;
            if (x.second.depth != y.second.depth) return x.second.depth > y.second.depth;
            return x.second.bytes < y.second.bytes;
          });
          if (sp.keptMain.rfind(kt->first, 0) != 0) sp.keptType = kt->first;
          sp.keptCount = (kt->second.objects + entries.size() / 2) / entries.size();
        }
      }
      if (entries.empty()) {
        misses.push_back({static_cast<uint64_t>(h.growth), node, h.slot,
                          "its retained size grows, but it gains no object born since the first "
                          "point (what it holds grew in place)"});
        continue;
      }
      std::vector<std::pair<uint64_t, uint64_t>> held;  // (address, birth) of each entry
      for (uint32_t e : entries) held.emplace_back(g.address(e), birthLast[e]);
      auto dup = byContainer.find(cur);
      if (dup != byContainer.end()) {
        // Found through a word and through its range as a whole: the word names it better.
        const bool rangeOld = found[dup->second].holderKind == "root",
                   rangeNew = sp.holderKind == "root";
        if (rangeNew && !rangeOld) continue;
        if (rangeOld == rangeNew && found[dup->second].bytesPerStep >= sp.bytesPerStep) continue;
        found[dup->second] = std::move(sp);
        foundEntries[dup->second] = std::move(held);
      } else {
        byContainer[cur] = found.size();
        found.push_back(std::move(sp));
        foundEntries.push_back(std::move(held));
      }
    }
  }
  // Growth freed at the end is no leak (a session recording saved, then dropped, when the game
  // is over): where the log goes on after the last point, a suspect most (over half) of whose
  // entries are freed by its end is a near miss. A program that exits holding them keeps them;
  // so does a thread's stack (what it keeps goes when the thread ends, at shutdown too), and the
  // finalization queue (what waits there is garbage the program dropped, kept while no finalizer
  // runs: that they run at shutdown does not make the wait any shorter).
  if (!found.empty() && r.resolve("end") > dumped.back()->limit) {
    r.seek(r.resolve("end"));
    const replay::LiveSet& live = r.live();
    std::vector<Suspect> still;
    for (size_t i = 0; i < found.size(); ++i) {
      size_t gone = 0;
      for (const auto& [address, birth] : foundEntries[i]) {
        auto lo = live.find(address);
        if (!lo || lo->birthSeq() != birth) ++gone;
      }
      const bool keeps = found[i].holderKind == "stack" ||
                         (found[i].holderKind == "root" &&
                          found[i].holderSource == log::RootSource::kFinalizeQueue);
      if (!keeps && gone * 2 > foundEntries[i].size()) {
        out.nearMisses.push_back(
            {"holder " + found[i].holder + " -> " + found[i].containerType,
             "grew at every point, but " + std::to_string(gone) + " of its " +
                 std::to_string(foundEntries[i].size()) +
                 " entries are freed before the log ends: freed at the end"});
        continue;
      }
      still.push_back(std::move(found[i]));
    }
    found = std::move(still);
  }
  std::stable_sort(found.begin(), found.end(), [](const Suspect& x, const Suspect& y) {
    return x.bytesPerStep > y.bytesPerStep;
  });
  if (req.top && found.size() > req.top) found.resize(req.top);

  // Root paths and sentences.
  const std::string per1 = out.event.empty() ? std::string("collection") : out.event;
  constexpr size_t kPathsCompared = 64;  // root ranges whose paths are weighed, shortest first
  for (Suspect& sp : found) {
    std::unordered_map<std::string, uint64_t> rootRetained;  // the paths' roots, by label
    graph::PathsRequest pr;
    pr.address = sp.pathAddress;
    pr.maxPaths = kPathsCompared;
    pr.maxNodes = req.pathNodes;
    if (uint32_t cn = g.objectAt(sp.pathAddress, false); cn != kNoNode && g.isObject(cn)) {
      graph::PathsResult paths = graph::rootPaths(s, a, dumped.back()->limit, pr);
      // The path starts at the root that will still hold the container later: the holder's
      // own range (a static word, a root table), else any strong root (statics, GC handles,
      // the finalization queue, registered roots, uncollectable objects), before a thread's
      // stack, whose words go when its frames return; of those, the shortest (rootPaths lists
      // them shortest first). A stack that holds it too is said.
      auto startOf = [](const std::vector<graph::PathStep>& p) { return p.front().node.node; };
      auto rank = [&](const std::vector<graph::PathStep>& p) {
        const uint32_t root = startOf(p);
        if (sp.holderKind == "stack")  // what only stacks keep: the stack that keeps it
          return root && root <= g.rootCount() && stackRoot(g.root(root).source) ? 0 : 1;
        if (root == 0 || root > g.rootCount()) return 0;  // an uncollectable object
        if (root < strongLast.size() && strongLast[root]) return 0;
        return stackRoot(g.root(root).source) ? 2 : 1;  // 1: the runtime's own static data
      };
      const std::vector<graph::PathStep>* chosen = nullptr;
      for (const auto& p : paths.paths)
        if (!p.empty() && (!chosen || rank(p) < rank(*chosen))) chosen = &p;
      if (chosen) {
        sp.path = *chosen;
        std::unordered_set<std::string> said;
        for (const auto& p : paths.paths) {
          const uint32_t root = p.empty() ? 0 : startOf(p);
          if (&p == chosen || root == 0 || root > g.rootCount() ||
              !stackRoot(g.root(root).source) || startOf(*chosen) == root)
            continue;
          if (said.insert(p.front().node.type).second) sp.stacksToo.push_back(p.front().node.type);
        }
      }
      for (const auto& p : paths.paths)
        if (!p.empty() && startOf(p) <= g.rootCount() && dom.idom[startOf(p)] != UINT32_MAX)
          rootRetained[p.front().node.type] = dom.retained[startOf(p)];
      sp.picture = std::move(paths.picture);
    }
    // One size: the path's retained sizes from the dominator tree the holders are judged by
    // (without transient references), so that the holder's step shows the last of its
    // retained sizes at the points; the picture's nodes too (objects by address, roots by
    // label), so that the DOT says the numbers the table and the JSON do.
    for (graph::PathStep& st : sp.path)
      if (uint32_t v = st.node.node; v < n && dom.idom[v] != UINT32_MAX)
        st.node.retained = dom.retained[v];
    for (graph::ExportNode& en : sp.picture.nodes) {
      if (en.address) {
        if (uint32_t v = g.objectAt(en.address, false); v != kNoNode && dom.idom[v] != UINT32_MAX)
          en.retained = dom.retained[v];
      } else if (auto it = rootRetained.find(en.label); it != rootRetained.end() && en.count <= 1) {
        en.retained = it->second;
      }
    }
    // The thread stacks: named by the stack the path starts at and the frame that holds the
    // word ("thread 2 (ai) frame ai_worker_loop").
    if (sp.holderKind == "stack" && !sp.path.empty() && sp.path.front().node.kind == "root") {
      sp.holder = sp.path.front().node.type;
      const uint32_t root = sp.path.front().node.node;
      if (root < n && g.isRoot(root) && sp.path.size() > 1 && sp.path[1].offset >= 0) {
        sp.holderFrame = frameHolding(g, root, static_cast<uint64_t>(sp.path[1].offset), a);
        const std::string tail = " stack";
        if (!sp.holderFrame.empty()) {
          if (sp.holder.size() > tail.size() &&
              sp.holder.compare(sp.holder.size() - tail.size(), tail.size(), tail) == 0)
            sp.holder.resize(sp.holder.size() - tail.size());
          sp.holder += " frame " + sp.holderFrame;
        }
      }
    }
    sp.picture.title =
        "leak suspect: " + sp.containerType + " at " + hexAddress(sp.containerAddress);
    // Untyped objects (native blocks on bdwgc, "(gc)") are named by the function that made them.
    auto untyped = [](const std::string& type) { return type.empty() || type[0] == '('; };
    std::string container;
    if (untyped(sp.containerType))
      container = (sp.chain ? "a linked list of blocks" : "a block") +
                  (sp.containerSite.empty() ? std::string() : " allocated by " + sp.containerSite);
    else
      container = (sp.chain ? "a linked list of " : "") + sp.containerType +
                  (sp.containerSite.empty() ? std::string() : " (allocated by " + sp.containerSite + ")");
    std::string text;
    if (sp.holderAddress == sp.containerAddress && sp.holderType.empty()) {
      text = sp.holder;  // a root range or the stacks: its words are the entries
    } else if (sp.holderKind != "object") {
      text = sp.holder + " holds ";
      if (sp.holderAddress != sp.containerAddress && !sp.holderType.empty())
        text += (untyped(sp.holderType) ? "a block" : sp.holderType) + " -> ";
      text += container;
    } else if (sp.holderAddress == sp.containerAddress) {
      text = container + " at " + hexAddress(sp.containerAddress);
    } else {
      text = sp.holder + " holds " + container;
    }
    double e = sp.entriesPerStep;
    text += (text.find(" holds ") != std::string::npos ? ", which gains " : " gains ") + countText(e) + (std::fabs(e - 1) < 0.05 ? " entry" : " entries") +
            " per " + per1 + " (" + sizeText(static_cast<uint64_t>(sp.bytesPerStep)) + ")";
    if (!sp.entryType.empty()) {
      // "each entry (System.Action) keeps a Game.Level and 50 Game.Enemy (12 KiB in all) alive"
      text += "; each " + std::string(sp.chain ? "link" : "entry");
      if (!untyped(sp.entryType)) text += " (" + sp.entryType + ")";
      text += " keeps ";
      std::string what, more;
      if (!sp.keptMain.empty()) {
        size_t from = sp.keptMain.find(" from ");
        what = untyped(sp.keptMain)
                   ? "a block" + (from == std::string::npos
                                      ? std::string()
                                      : " allocated by " + sp.keptMain.substr(from + 6))
                   : "a " + sp.keptMain;
      }
      if (!sp.keptType.empty() && sp.keptCount > 0)
        more = std::to_string(sp.keptCount) + " " +
               (untyped(sp.keptType) ? (sp.keptCount == 1 ? "block" : "blocks") : sp.keptType);
      if (!what.empty() && !more.empty())
        text += what + " and " + more + " (" + sizeText(sp.entryKeeps) + " in all)";
      else if (!what.empty() || !more.empty())
        text += what + more + " (" + sizeText(sp.entryKeeps) + ")";
      else
        text += sizeText(sp.entryKeeps);
      text += " alive";
      if (!sp.entrySite.empty()) text += "; entries added by " + sp.entrySite;
    }
    if (!sp.stacksToo.empty()) {
      std::string also;
      for (size_t i = 0; i < sp.stacksToo.size(); ++i)
        also += (i == 0 ? "" : i + 1 == sp.stacksToo.size() ? " and " : ", ") + sp.stacksToo[i];
      text += "; " + also + " also point" + (sp.stacksToo.size() == 1 ? "s" : "") + " to it";
    }
    sp.sentence = text;
  }
  out.suspects = std::move(found);
  std::stable_sort(misses.begin(), misses.end(),
                   [](const Miss& x, const Miss& y) { return x.step > y.step; });
  for (size_t i = 0; i < misses.size() && i < std::max<size_t>(req.top, 5); ++i) {
    const Miss& m = misses[i];
    std::string what = m.slot.empty() ? name.type(m.node) + " at " + hexAddress(g.address(m.node)) +
                                            " (" + name.function(m.node) + ")"
                                      : m.slot + " -> " + name.type(m.node);
    out.nearMisses.push_back({"holder " + what, m.why});
  }
}

}  // namespace heapman::leaks
