// Points (point.h): parsing their text (parsePoint) and resolving them against the log's tables
// (Replay::resolve, and Replay::describe back to a name).
#include "heapman/replay/point.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <string>
#include <vector>

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

uint64_t Replay::resolve(const Point& p) const {
  if (pass_) throw std::logic_error("Replay::resolve const on a replay being indexed lazily");
  return resolveKnown(p);
}

// From the tables as they are: the whole log's, or a paused pass's so far.
uint64_t Replay::resolveKnown(const Point& p) const {
  const LogTables& t = tables_;
  switch (p.kind) {
    case Point::Kind::kStart: return t.firstSeq;
    case Point::Kind::kEnd: return t.endSeq;
    case Point::Kind::kSeq:
      if (p.number < t.firstSeq || p.number >= t.endSeq)
        throw ReplayError("seq:" + std::to_string(p.number) + " is outside the log (" +
                          (t.eventCount ? "seq " + std::to_string(t.firstSeq) + ".." +
                                          std::to_string(t.endSeq - 1)
                                    : std::string("it has no events")) +
                          ")");
      return p.number + 1;
    case Point::Kind::kGc: {
      const GcRecord* g = p.number <= std::numeric_limits<uint32_t>::max()
                              ? t.gc(static_cast<uint32_t>(p.number))
                              : nullptr;
      if (!g || !g->ended) {
        std::string range = "log has no completed GCs";
        std::vector<uint32_t> ended;
        for (const GcRecord& x : t.gcs)
          if (x.ended) ended.push_back(x.number);
        if (!ended.empty())
          range = "log has GCs " + std::to_string(ended.front()) + ".." +
                  std::to_string(ended.back());
        if (g && !g->ended) range += "; GC " + std::to_string(p.number) + " never ended";
        // GC numbers are the collector's own count (what C#'s GC.CollectionCount returns): a Mono
        // log starts at 2, since Mono's collector runs once at start-up, before the recorder is
        // loaded as its profiler.
        if (!g && !ended.empty() && p.number < ended.front())
          range += "; GC " + std::to_string(p.number) +
                   " ran before recording started (GC numbers are the collector's own count)";
        throw ReplayError("unknown GC " + std::to_string(p.number) + " (" + range + ")");
      }
      return g->endSeq + 1;
    }
    case Point::Kind::kFrame: {
      for (const FrameRecord& f : t.frames)
        if (f.frame == p.number) return f.seq + 1;
      if (t.frames.empty()) throw ReplayError("unknown frame " + std::to_string(p.number) +
                                              " (log has no frame marks)");
      uint64_t lo = t.frames.front().frame, hi = lo;
      for (const FrameRecord& f : t.frames) lo = std::min(lo, f.frame), hi = std::max(hi, f.frame);
      throw ReplayError("unknown frame " + std::to_string(p.number) + " (log has frames " +
                        std::to_string(lo) + ".." + std::to_string(hi) + ")");
    }
    case Point::Kind::kEvent: {
      uint32_t count = 0;
      bool known = false;
      for (const EventRecord& e : t.events) {
        if (t.eventName(e.nameId) != p.name) continue;
        known = true;
        if (++count == p.number) return e.seq + 1;
      }
      if (known)
        throw ReplayError("event '" + p.name + "' occurs " + std::to_string(count) +
                          (count == 1 ? " time" : " times") + "; asked for occurrence " +
                          std::to_string(p.number));
      std::vector<std::string> names;
      for (const EventRecord& e : t.events) {
        std::string n = t.eventName(e.nameId);
        if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
      }
      std::string list;
      for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
      throw ReplayError("unknown event '" + p.name + "' (" +
                        (names.empty() ? "log has no custom events" : "known events: " + list) +
                        ")");
    }
  }
  throw ReplayError("bad point");
}

std::string Replay::describe(uint64_t limit) const {
  const LogTables& t = tables_;
  // A paused lazy pass has seen every record before its position; the footer knows the end.
  const uint64_t endSeq = pass_ ? reader_.index()->endSeq : t.endSeq;
  if (limit <= t.firstSeq) return "start";
  for (const GcRecord& g : t.gcs)
    if (g.ended && g.endSeq + 1 == limit) return "gc:" + std::to_string(g.number);
  for (const EventRecord& e : t.events)
    if (e.seq + 1 == limit) return t.eventName(e.nameId) + "#" + std::to_string(e.occurrence);
  for (const FrameRecord& f : t.frames)
    if (f.seq + 1 == limit) return "frame:" + std::to_string(f.frame);
  if (limit >= endSeq) return "end";
  return "seq:" + std::to_string(limit - 1);
}

}  // namespace heapman::replay
