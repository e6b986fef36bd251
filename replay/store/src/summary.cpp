// summarize(): one forward pass for the live bytes per heap at every custom event and the peaks,
// then the replay's queries at the repetitions (blame, types), over the run (churn) and the
// leak finder.
#include <xxhash.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <stdexcept>

#include "heapman/leaks/leaks.h"
#include "heapman/replay/queries.h"
#include "heapman/store/summary.h"

namespace heapman::store {

Tag parseTag(const std::string& text) {
  size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0)
    throw std::invalid_argument("a tag is KEY=VALUE (build=4812), not '" + text + "'");
  Tag t{text.substr(0, eq), text.substr(eq + 1)};
  for (char c : t.key)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.'))
      throw std::invalid_argument("a tag's key is letters, digits, '_', '-' and '.', not '" +
                                  t.key + "'");
  return t;
}

bool RunSummary::liveAt(const std::string& point, const std::string& heap,
                        uint64_t* bytes) const {
  bool found = false;
  uint64_t sum = 0;
  for (const PointRow& p : points) {
    if (p.point != point) continue;
    found = true;
    if (heap.empty() || heap == "all" || heap == p.heap) sum += p.liveBytes;
  }
  if (found && bytes) *bytes = sum;
  return found;
}

std::vector<std::string> RunSummary::eventPoints() const {
  std::vector<std::string> out;
  for (const PointRow& p : points)
    if (p.point != "peak" && (out.empty() || out.back() != p.point)) out.push_back(p.point);
  return out;
}

uint64_t pauseP99(std::vector<uint64_t> pauses) {
  if (pauses.empty()) return 0;
  size_t rank = static_cast<size_t>(std::ceil(0.99 * static_cast<double>(pauses.size())));
  std::nth_element(pauses.begin(), pauses.begin() + static_cast<long>(rank - 1), pauses.end());
  return pauses[rank - 1];
}

std::string logId(const log::Header& h) {
  // The fields that tell one recording from another; '\0' between them so that no two
  // different headers hash the same bytes.
  std::string key = h.executable + '\0' + std::to_string(h.pid) + '\0' + h.hostname + '\0' +
                    std::to_string(h.startWallTimeNs) + '\0' + std::to_string(h.startClockNs);
  for (const std::string& a : h.commandLine) key += '\0' + a;
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx",
                static_cast<unsigned long long>(XXH3_64bits(key.data(), key.size())));
  return hex;
}

std::string logIdOf(replay::Replay& r) {
  std::string id = logId(r.reader().header());
  if (!r.reader().end().complete) id += ".p" + std::to_string(r.tables().eventCount);
  return id;
}

std::string partialOf(const std::string& id) {
  return id.size() > 18 && id.compare(16, 2, ".p") == 0 ? id.substr(0, 16) : "";
}

namespace {

// Live bytes and objects per heap kind as seek() moves forward, and each one's peak.
class HeapTotals : public replay::Observer {
 public:
  explicit HeapTotals(const replay::LogTables& t) : t_(t) {}
  void born(const replay::LiveObject& o) override {
    const replay::AllocInfo& i = t_.infos[o.info()];
    size_t h = static_cast<size_t>(i.heap);
    bytes[h] += i.size;
    objects[h] += 1;
    total += i.size;
    if (bytes[h] > peak[h]) peak[h] = bytes[h], peakObjects[h] = objects[h];
    peakTotal = std::max(peakTotal, total);
  }
  void died(const replay::LiveObject& o, replay::Death, uint64_t) override {
    const replay::AllocInfo& i = t_.infos[o.info()];
    size_t h = static_cast<size_t>(i.heap);
    bytes[h] -= i.size;
    objects[h] -= 1;
    total -= i.size;
  }
  std::array<uint64_t, log::kHeapKindCount> bytes{}, objects{}, peak{}, peakObjects{};
  std::array<bool, log::kHeapKindCount> seen{};
  uint64_t total = 0, peakTotal = 0;

 private:
  const replay::LogTables& t_;
};

void addHeaps(const HeapTotals& h, const std::string& point, bool peak,
              std::vector<PointRow>& out) {
  for (int k = 0; k < log::kHeapKindCount; ++k) {
    if (!h.seen[k]) continue;
    out.push_back({point, log::heapKindName(static_cast<log::HeapKind>(k)),
                   peak ? h.peak[k] : h.bytes[k], peak ? h.peakObjects[k] : h.objects[k]});
  }
}

std::string joined(const std::vector<std::string>& v, const char* sep) {
  std::string s;
  for (const std::string& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

}  // namespace

RunSummary summarize(replay::Replay& r, replay::Attribution& a, const SummaryOptions& o) {
  const replay::LogTables& t = r.tables();
  const log::Header& h = r.reader().header();
  RunSummary s;
  RunInfo& run = s.run;
  run.logId = logIdOf(r);
  run.program = h.executable;
  run.commandLine = joined(h.commandLine, " ");
  std::vector<std::string> opts;
  for (const auto& [k, v] : h.options) opts.push_back(k + "=" + v);
  run.options = joined(opts, " ");
  run.hostname = h.hostname;
  run.pid = h.pid;
  run.startWallNs = h.startWallTimeNs;
  run.durationNs = t.endTimeNs;
  run.events = t.eventCount;
  run.allocs = t.allocs;
  run.frees = t.frees;
  run.frames = t.frames.size();
  run.gcCount = t.gcs.size();

  for (const replay::GcRecord& g : t.gcs)
    s.gcs.push_back({g.number, g.beginTimeNs, g.pauseNs, g.heapSizeBefore, g.heapSizeAfter,
                     g.liveBytes, g.collectedBytes});

  // The repeating event: the one named most often (ties: the first seen).
  std::map<uint32_t, uint64_t> counts;
  std::vector<uint32_t> order;
  for (const replay::EventRecord& e : t.events)
    if (counts[e.nameId]++ == 0) order.push_back(e.nameId);
  if (!o.repeatingEvent.empty()) {
    run.repeatingEvent = o.repeatingEvent;
  } else {
    uint64_t best = 0;
    for (uint32_t id : order)
      if (counts[id] > best) best = counts[id], run.repeatingEvent = t.eventName(id);
  }
  for (uint32_t id : order)
    if (t.eventName(id) == run.repeatingEvent) run.repetitions = counts[id];
  if (!o.repeatingEvent.empty() && run.repetitions == 0)
    throw replay::ReplayError("the log has no custom event '" + o.repeatingEvent + "'");

  // Blame and types at each repetition (and the points asked for). Events named as often as
  // the repeating one are repetitions too (level_start and level_end), unless it was given.
  std::vector<std::string> blameAt;
  for (const replay::EventRecord& e : t.events) {
    std::string name = t.eventName(e.nameId);
    if (name == run.repeatingEvent ||
        (o.repeatingEvent.empty() && counts[e.nameId] == run.repetitions))
      blameAt.push_back(name + "#" + std::to_string(e.occurrence));
  }
  size_t repetitionPoints = blameAt.size();
  for (const std::string& p : o.blamePoints)
    if (std::find(blameAt.begin(), blameAt.end(), p) == blameAt.end()) blameAt.push_back(p);
  auto blameHere = [&](const std::string& p, uint64_t at) {
    replay::BlameResult b = replay::blame(r, a, replay::SortBy::kBytes, o.top);
    for (const replay::BlameRow& row : b.rows)
      s.sites.push_back({p, row.site.function, row.site.module, row.bytes, row.objects});
    replay::TypesResult ty = replay::typeCounts(r, at, nullptr, replay::SortBy::kBytes, o.top);
    for (const replay::TypeRow& row : ty.rows)
      s.types.push_back({p, row.type, row.bytesB, row.objectsB});
  };

  // One pass forward: live bytes per heap at every custom event, the peaks, and blame at the
  // repetitions on the way (where the pass stands: no seek of their own).
  HeapTotals totals(t);
  for (const replay::AllocInfo& i : t.infos) totals.seen[static_cast<size_t>(i.heap)] = true;
  r.seek(0);
  size_t next = 0;  // the next repetition in blameAt (they come in event order)
  for (const replay::EventRecord& e : t.events) {
    std::string point = t.eventName(e.nameId) + "#" + std::to_string(e.occurrence);
    uint64_t at = r.resolve(point);
    r.seek(at, &totals);
    addHeaps(totals, point, false, s.points);
    if (next < repetitionPoints && blameAt[next] == point) blameHere(blameAt[next++], at);
  }
  // The end too: what a program without custom events (a tool, an interpreter) is followed by.
  uint64_t end = r.resolve("end");
  r.seek(end, &totals);
  addHeaps(totals, "end", false, s.points);
  blameHere("end", end);
  addHeaps(totals, "peak", true, s.points);
  run.peakBytes = totals.peakTotal;
  // The points a budget asked for besides (another event's, a GC).
  for (size_t i = repetitionPoints; i < blameAt.size(); ++i) {
    if (blameAt[i] == "end") continue;  // taken above
    uint64_t at = r.resolve(blameAt[i]);
    r.seek(at);
    blameHere(blameAt[i], at);
  }

  // Garbage over the whole run.
  replay::ChurnResult c = replay::churn(r, a, 0, end, replay::SortBy::kBytes, o.top);
  run.garbageBytes = c.collectedBytes + c.freedBytes;
  for (const replay::ChurnRow& row : c.rows)
    s.churn.push_back({row.site.function, row.site.module, row.garbageBytes(),
                       row.allocatedBytes, row.collectedBytes, row.freedBytes});

  // Leak suspects at each repetition.
  if (run.repetitions >= 3) {
    leaks::LeaksRequest req;
    req.atEach = run.repeatingEvent;
    try {
      leaks::LeaksResult res = leaks::findLeaks(r, a, req);
      for (const leaks::Suspect& sp : res.suspects)
        s.leaks.push_back({"suspect",
                           sp.holder + " -> " +
                               (sp.containerType.empty() ? sp.holder : sp.containerType),
                           static_cast<int64_t>(sp.bytesPerStep), sp.sentence});
      for (const leaks::GrowthRow& g : res.sites)
        s.leaks.push_back({"site", g.name + (g.module.empty() ? "" : " (" + g.module + ")"),
                           g.trend.perStep,
                           g.name + " grows by " + std::to_string(g.trend.perStep) +
                               " bytes per " + run.repeatingEvent + " (rises at " +
                               std::to_string(g.trend.rises) + " of " +
                               std::to_string(g.trend.steps) + " steps)"});
      for (const leaks::GrowthRow& g : res.types)
        s.leaks.push_back({"type", g.name, g.trend.perStep,
                           g.name + " grows by " + std::to_string(g.trend.perStep) +
                               " bytes per " + run.repeatingEvent + " (rises at " +
                               std::to_string(g.trend.rises) + " of " +
                               std::to_string(g.trend.steps) + " steps)"});
      if (!res.graphNote.empty()) s.notes.push_back("leaks: " + res.graphNote);
    } catch (const replay::ReplayError& e) {
      s.notes.push_back(std::string("leaks: ") + e.what());
    }
  } else {
    s.notes.push_back("leaks: no custom event repeats 3 times, so no leak suspects");
  }
  return s;
}

}  // namespace heapman::store
