// Pieces every query shares: sorting names, warnings for the output header, type labels.
#include <cinttypes>

#include "heapman/replay/queries.h"

namespace heapman::replay {

SortBy parseSortBy(const std::string& s) {
  if (s == "bytes") return SortBy::kBytes;
  if (s == "objects") return SortBy::kObjects;
  if (s == "name") return SortBy::kName;
  throw ReplayError("unknown sort key '" + s + "' (bytes, objects, name)");
}

std::vector<std::string> warnings(const Replay& r) {
  std::vector<std::string> w;
  const LogTables& t = r.tables();
  if (t.lostEvents) {
    std::string reasons;
    for (const LostRecord& l : t.lost)
      if (reasons.find(l.reason) == std::string::npos)
        reasons += (reasons.empty() ? "" : "; ") + l.reason;
    w.push_back("the recorder lost " + std::to_string(t.lostEvents) + " events (" + reasons +
                "): results may be incomplete");
  }
  if (const auto& d = r.damage()) {
    w.push_back(std::string("the log is damaged: ") + d->what() +
                "; results cover only the events before it (up to seq " +
                (t.eventCount ? std::to_string(t.endSeq - 1) : std::string("-")) +
                "); `heapman verify` checks the whole log");
  } else if (!r.reader().end().complete) {
    w.push_back("the log is truncated (" + r.reader().end().reason +
                "): it ends at seq " + std::to_string(t.endSeq));
  }
  return w;
}

std::string typeLabel(const LogTables& t, const AllocInfo& info) {
  if (info.typeId) return t.typeName(info.typeId);
  return std::string("(") + log::heapKindName(info.heap) + ")";
}

std::vector<uint32_t> InfoCounts::ids() const {
  std::vector<uint32_t> out;
  for (size_t i = 0; i < objects.size(); ++i)
    if (objects[i]) out.push_back(static_cast<uint32_t>(i));
  return out;
}

InfoCounts countLive(const Replay& r) {
  InfoCounts c;
  c.objects.resize(r.tables().infos.size());
  c.bytes.resize(r.tables().infos.size());
  const auto& infos = r.tables().infos;
  r.live().forEach([&](const LiveObject& o) {
    uint32_t i = o.info();
    ++c.objects[i];
    c.bytes[i] += infos[i].size;
  });
  return c;
}

}  // namespace heapman::replay
