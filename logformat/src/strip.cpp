// A log copied without its RAM dumps (strip.h).
#include "heapman/logformat/strip.h"

namespace heapman::log {

StripResult stripRamDumps(const LogReader& in, Sink& out) {
  StripResult result;
  result.sourceComplete = in.end().complete;
  for (const ChunkRef& c : in.chunks())
    if (c.header.type == static_cast<uint16_t>(ChunkType::kRamDump)) {
      ++result.ramChunks;
      result.ramBytes += c.header.storedLength;
    }
  Header header = in.header();
  for (auto& [key, value] : header.options)
    if (key == "ram_dumps") value = "stripped";
  LogWriter writer(out, header);
  in.forEachRecord([&](const auto& record) {
    writer.write(record);
    ++result.records;
  });
  writer.finish();
  result.ok = writer.ok();
  result.error = writer.error();
  return result;
}

}  // namespace heapman::log
