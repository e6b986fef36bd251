// The "across runs" page of heapman report LOG --store S: the trends of a run's main figures over
// every stored run, in the order of a tag, each with the step trend finds, and where the
// report's own log sits among them. A section for the report's page (kind "trends", drawn by
// replay/report/assets/trends.js); the store library writes its JSON, heapman adds it.
//
// The JSON (every '<' written as \u003c, so that it can sit in the page's <script>):
//   {"tag": "build", "store": "runs.sqlite",
//    "thisLog": {"logId": "...", "stored": true|false, "label": "15"|"this log"},
//    "figures": [{"id": "peak", "name": "peak live bytes", "unit": "bytes"|"count"|"ns",
//                 "point": "level_end#3" (live bytes at a custom event's occurrence only),
//                 "rows": [[tag, logId, value], ...]   (trend's rows, in the tag's order),
//                 "step": null | {"at": i, "tag", "logId", "before", "after", "rise", "noise"},
//                 "warnings": [...]}],
//    "notes": [...]}
// Figures: peak live bytes, live bytes at the end, live bytes at each custom event occurrence
// of the log (at most kMaxTrendPoints, evenly chosen), GC count, GC pause p99, leak suspects,
// growing sites.
#pragma once

#include <string>
#include <vector>

#include "heapman/store/store.h"
#include "heapman/store/summary.h"

namespace heapman::store {

inline constexpr size_t kMaxTrendPoints = 64;

struct AcrossRuns {
  std::string tagKey = "build";
  std::string logId;  // the report's log
  // Its summary when the store does not hold it (drawn after the stored runs as "this log");
  // nullptr when it is stored (its run is highlighted among them).
  const RunSummary* notStored = nullptr;
  std::vector<std::string> points;  // the log's custom event occurrences ("level_end#3")
};

// Throws StoreError.
std::string acrossRunsJson(Store& st, const AcrossRuns& a);

}  // namespace heapman::store
