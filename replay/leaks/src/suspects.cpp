// Steps 2-4: of the holders that grow at every dumped point (holders.cpp), the accumulation
// point under each (several under one holder when no child has most of its growth), its entries
// and what each keeps alive; growth freed at the end dropped; then each suspect's root path
// (root_path.cpp) and sentence (sentence.cpp).
#include <algorithm>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "heapman/graph/graph_queries.h"
#include "heapman/leaks/leaks.h"
#include "heapman/replay/queries.h"
#include "holders.h"

namespace heapman::leaks {

namespace {

using graph::HeapGraph;
using graph::hexAddress;
using graph::kNoNode;

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
  const HolderSeries hs = holderSeries(s, a, dumped);
  const Persistent& per = hs.per;
  const std::vector<Slot>& slots = hs.slots;
  const std::vector<uint64_t>& birthLast = hs.birth;
  const std::vector<uint32_t>& leaderLast = hs.leader;
  const uint32_t stacksLast = hs.stacks;

  // The last point: dominator children, preorder, bytes born since the first point per subtree.
  const HeapGraph& g = s.graph();
  const graph::DominatorTree& dom = hs.dom;
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
  // In node order (roots, then objects by address): suspects of as many bytes per step rank in
  // that order, not in the hash table's.
  std::vector<uint32_t> holderNodes;
  for (const auto& [node, h] : growing) holderNodes.push_back(node);
  std::sort(holderNodes.begin(), holderNodes.end());
  for (uint32_t node : holderNodes) {
    const Holder& h = growing[node];
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
  for (Suspect& sp : found) {
    chooseRootPath(sp, s, a, dumped.back()->limit, hs, req.pathNodes);
    sp.sentence = suspectSentence(sp, per1);
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
