// The holders that may grow, over the dumped points: persistent objects (present at every point,
// with the same birth), the words of the program's static roots, root ranges of the runtime as a
// whole, and the thread stacks as one holder; each with its retained size at every point, from
// a dominator tree without transient references.
#include <map>
#include <unordered_map>

#include "heapman/graph/graph_queries.h"
#include "heapman/replay/queries.h"
#include "holders.h"
#include "static_names.h"

namespace heapman::leaks {

namespace {

using graph::HeapGraph;
using graph::kNoNode;

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

}  // namespace

HolderSeries holderSeries(graph::GraphSession& s, replay::Attribution& a,
                          const std::vector<const LeakPoint*>& dumped) {
  HolderSeries out;
  replay::Replay& r = s.replay();
  const size_t k = dumped.size();
  Persistent& per = out.per;
  StaticNames statics(r.tables().modules);
  std::unordered_map<uint64_t, size_t> slotIndex;
  std::unordered_map<std::string, size_t> rangeIndex;  // root ranges as holders, by label
  std::vector<Slot>& slots = out.slots;
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
      out.birth.assign(n, 0);
      for (uint32_t v = first; v < n; ++v) out.birth[v] = birthOf(v);
      out.dom = std::move(dom);
      out.leader = std::move(leader);
      out.strong = std::move(strong);
      out.stacks = stacks;
    }
  }
  return out;
}

}  // namespace heapman::leaks
