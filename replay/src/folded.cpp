// Folded stacks ("root;...;leaf BYTES", flamegraph.pl and speedscope) of the live set at a point
// and of the garbage made over a range.
#include <algorithm>
#include <map>

#include "heapman/replay/queries.h"

namespace heapman::replay {

namespace {

std::vector<FoldedLine> fold(Replay& r, Attribution& a, const InfoCounts& c) {
  std::vector<uint32_t> ids = c.ids();
  a.prepareInfos(ids);
  std::map<std::string, FoldedLine> lines;
  for (uint32_t i : ids) {
    std::string s = a.folded(r.tables().infos[i].stackId);
    FoldedLine& l = lines[s];
    l.stack = s;
    l.bytes += c.bytes[i];
    l.objects += c.objects[i];
  }
  std::vector<FoldedLine> out;
  for (auto& [k, l] : lines) out.push_back(std::move(l));
  return out;
}

struct Garbage : Observer {
  const std::vector<AllocInfo>& infos;
  InfoCounts dead;
  explicit Garbage(const std::vector<AllocInfo>& i) : infos(i) {}
  void died(const LiveObject& o, Death, uint64_t) override {
    dead.add(o.info(), 1, infos[o.info()].size);
  }
};

}  // namespace

std::vector<FoldedLine> foldedLive(Replay& r, Attribution& a) { return fold(r, a, countLive(r)); }

std::vector<FoldedLine> foldedChurn(Replay& r, Attribution& a, uint64_t from, uint64_t to) {
  if (to < from)
    throw ReplayError("the range ends (" + r.describe(to) + ") before it starts (" +
                      r.describe(from) + ")");
  r.seek(from);
  Garbage g(r.tables().infos);
  r.seek(to, &g);
  return fold(r, a, g.dead);
}

}  // namespace heapman::replay
