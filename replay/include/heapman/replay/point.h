// Points of a log the state can be rebuilt at:
//   start          before the first event
//   end            after the last event
//   gc:N           after GC #N's GcEnd (its collected objects are gone)
//   NAME#K         just after the K-th (1-based) custom event NAME; NAME alone: the first
//   frame:F        just after the first frame mark with frame number F
//   seq:S          after every event with seq <= S
// parsePoint() checks the syntax only (ReplayError "malformed point ..."); Replay::resolve()
// checks the point against the log and names the valid range when it is not there.
#pragma once

#include <cstdint>
#include <string>

namespace heapman::replay {

struct Point {
  enum class Kind { kStart, kEnd, kGc, kEvent, kFrame, kSeq };
  Kind kind = Kind::kStart;
  uint64_t number = 0;   // N, K, F or S
  std::string name;      // event name
  std::string text;      // as written
};

Point parsePoint(const std::string& text);

}  // namespace heapman::replay
