// A suspect's root path: of the paths from the roots to its container, the one from the root
// that will still hold it later; the sizes on it from the holders' dominator tree; a thread
// stack's holder named by the frame that holds the word.
#include <cstring>
#include <span>
#include <unordered_map>
#include <unordered_set>

#include "heapman/graph/graph_queries.h"
#include "heapman/graph/paths.h"
#include "heapman/replay/queries.h"
#include "holders.h"

namespace heapman::leaks {

namespace {

using graph::HeapGraph;
using graph::hexAddress;
using graph::kNoNode;

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

void chooseRootPath(Suspect& sp, graph::GraphSession& s, replay::Attribution& a, uint64_t limit,
                    const HolderSeries& hs, size_t pathNodes) {
  constexpr size_t kPathsCompared = 64;  // root ranges whose paths are weighed, shortest first
  const HeapGraph& g = s.graph();
  const graph::DominatorTree& dom = hs.dom;
  const std::vector<uint8_t>& strongLast = hs.strong;
  const uint32_t n = g.nodeCount();
  std::unordered_map<std::string, uint64_t> rootRetained;  // the paths' roots, by label
  graph::PathsRequest pr;
  pr.address = sp.pathAddress;
  pr.maxPaths = kPathsCompared;
  pr.maxNodes = pathNodes;
  if (uint32_t cn = g.objectAt(sp.pathAddress, false); cn != kNoNode && g.isObject(cn)) {
    graph::PathsResult paths = graph::rootPaths(s, a, limit, pr);
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
  sp.picture.title = "leak suspect: " + sp.containerType + " at " + hexAddress(sp.containerAddress);
}

}  // namespace heapman::leaks
