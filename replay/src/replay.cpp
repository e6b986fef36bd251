// The replay engine's small parts: Death's names and the LogTables lookups. Its construction and
// index pass are in index_pass.cpp, with the record applier in applier.h; seeking in seek.cpp.
// Elsewhere: the decode pipeline that feeds the appliers (decode_pipeline.h), the AllocInfo
// dictionary (info_dict.h), checkpoints (checkpoint.cpp), points (point.cpp).
#include "heapman/replay/replay.h"

#include <algorithm>
#include <string>
#include <vector>

#include "heapman/logformat/format.h"

namespace heapman::replay {

using namespace heapman::log;

// The live set packs what LogCheck lets through: the log format's limits are the replay's.
static_assert(kMaxSeq == log::kMaxSeq && LiveSet::kAddressLimit == log::kAddressLimit);

const char* deathName(Death d) {
  switch (d) {
    case Death::kFree: return "free";
    case Death::kRealloc: return "realloc";
    case Death::kCollected: return "collected";
    case Death::kReplaced: return "replaced";
  }
  return "?";
}

// ---- LogTables ------------------------------------------------------------------------------

std::vector<uint32_t> LogTables::stackNodes(uint32_t stackId) const {
  std::vector<uint32_t> out;
  uint32_t id = stackId;
  while (id != 0 && id < stacks.size() && out.size() <= stacks.size()) {
    out.push_back(id);
    id = stacks[id].parent;
  }
  return out;
}

const GcRecord* LogTables::gc(uint32_t number) const {
  auto it = std::lower_bound(gcs.begin(), gcs.end(), number,
                             [](const GcRecord& g, uint32_t n) { return g.number < n; });
  if (it != gcs.end() && it->number == number) return &*it;
  for (const GcRecord& g : gcs)  // numbers out of order (should not happen)
    if (g.number == number) return &g;
  return nullptr;
}

std::string LogTables::eventName(uint32_t nameId) const {
  auto it = strings.find(nameId);
  return it != strings.end() ? it->second : "string#" + std::to_string(nameId);
}

std::string LogTables::typeName(uint32_t typeId) const {
  if (typeId == 0) return "";
  auto it = types.find(typeId);
  return it != types.end() ? it->second : "type#" + std::to_string(typeId);
}

}  // namespace heapman::replay
