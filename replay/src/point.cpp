#include "heapman/replay/point.h"

#include <charconv>

#include "heapman/replay/replay.h"

namespace heapman::replay {

namespace {

[[noreturn]] void malformed(const std::string& text, const std::string& why) {
  throw ReplayError("malformed point '" + text + "': " + why +
                    " (points: start, end, gc:N, NAME#K, NAME, frame:F, seq:S)");
}

uint64_t number(const std::string& text, const std::string& digits, const char* what) {
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (digits.empty() || ec != std::errc() || p != digits.data() + digits.size())
    malformed(text, std::string(what) + " must be a non-negative integer, got '" + digits + "'");
  return v;
}

}  // namespace

Point parsePoint(const std::string& text) {
  Point p;
  p.text = text;
  if (text.empty()) malformed(text, "empty");
  if (text == "start") return p;
  if (text == "end") {
    p.kind = Point::Kind::kEnd;
    return p;
  }
  struct Prefix {
    const char* prefix;
    Point::Kind kind;
    const char* what;
  };
  for (Prefix x : {Prefix{"gc:", Point::Kind::kGc, "a GC number"},
                   Prefix{"frame:", Point::Kind::kFrame, "a frame number"},
                   Prefix{"seq:", Point::Kind::kSeq, "a sequence number"}}) {
    std::string pre = x.prefix;
    if (text.compare(0, pre.size(), pre) == 0) {
      p.kind = x.kind;
      p.number = number(text, text.substr(pre.size()), x.what);
      return p;
    }
  }
  p.kind = Point::Kind::kEvent;
  size_t hash = text.rfind('#');
  if (hash == std::string::npos) {
    p.name = text;
    p.number = 1;
  } else {
    p.name = text.substr(0, hash);
    p.number = number(text, text.substr(hash + 1), "the occurrence after '#'");
    if (p.number == 0) malformed(text, "occurrences count from 1");
  }
  if (p.name.empty()) malformed(text, "no event name before '#'");
  if (p.name.find(':') != std::string::npos)
    malformed(text, "unknown prefix '" + p.name.substr(0, p.name.find(':') + 1) + "'");
  return p;
}

}  // namespace heapman::replay
