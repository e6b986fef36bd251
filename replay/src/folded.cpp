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

}  // namespace

std::vector<FoldedLine> foldedLive(Replay& r, Attribution& a) { return fold(r, a, countLive(r)); }

std::vector<FoldedLine> foldedChurn(Replay& r, Attribution& a, uint64_t from, uint64_t to) {
  if (to < from)
    throw ReplayError("the range ends (" + r.describe(to) + ") before it starts (" +
                      r.describe(from) + ")");
  return foldedChurn(r, a, countGarbage(r, from, to));
}

std::vector<FoldedLine> foldedChurn(Replay& r, Attribution& a, const GarbageCounter& c) {
  InfoCounts dead = c.collected;  // every death, by a GC or explicitly
  for (size_t i = 0; i < c.freed.objects.size(); ++i)
    dead.add(static_cast<uint32_t>(i), c.freed.objects[i], c.freed.bytes[i]);
  return fold(r, a, dead);
}

}  // namespace heapman::replay
