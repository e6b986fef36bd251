// acrossRunsJson(): one trend() per figure, written as the report section's JSON.
#include "heapman/store/across_runs.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "heapman/store/trend.h"

namespace heapman::store {

std::string acrossRunsJson(Store& st, const AcrossRuns& a) {
  struct Figure {
    std::string id, name, unit;
    FigureQuery q;
  };
  std::vector<Figure> figures;
  auto live = [](const std::string& point) {
    FigureQuery q;
    q.point = point;
    return q;
  };
  auto whole = [](FigureKind k) {
    FigureQuery q;
    q.kind = k;
    return q;
  };
  figures.push_back({"peak", "peak live bytes", "bytes", live("")});
  figures.push_back({"end", "live bytes at the end", "bytes", live("end")});
  nlohmann::json notes = nlohmann::json::array();
  size_t n = a.points.size(), shown = std::min(n, kMaxTrendPoints);
  for (size_t i = 0; i < shown; ++i) {
    // Evenly chosen, the last always in.
    const std::string& p = a.points[shown == n ? i : (n - 1) * i / (shown - 1)];
    figures.push_back({"live:" + p, "live bytes at " + p, "bytes", live(p)});
  }
  if (shown < n)
    notes.push_back("live bytes at " + std::to_string(shown) + " of the log's " +
                    std::to_string(n) + " custom events, evenly chosen");
  figures.push_back({"gc-count", "GC count", "count", whole(FigureKind::kGcCount)});
  figures.push_back({"gc-pause-p99", "GC pause p99", "ns", whole(FigureKind::kGcPauseP99)});
  figures.push_back(
      {"leak-suspects", "leak suspects", "count", whole(FigureKind::kLeakSuspects)});
  figures.push_back(
      {"growing-sites", "growing sites", "count", whole(FigureKind::kGrowingSites)});

  std::string thisLabel = "this log";
  nlohmann::json out;
  out["tag"] = a.tagKey;
  out["store"] = st.describe();
  nlohmann::json figs = nlohmann::json::array();
  bool listed = a.notStored != nullptr;
  for (const Figure& f : figures) {
    TrendResult t = trend(st, a.tagKey, f.q, a.notStored, thisLabel);
    nlohmann::json rows = nlohmann::json::array();
    for (const TrendRow& r : t.rows) {
      rows.push_back({r.tag, r.logId, r.value});
      if (!a.notStored && r.logId == a.logId) listed = true, thisLabel = r.tag;
    }
    nlohmann::json step = nullptr;
    if (t.step.found) {
      const TrendRow& at = t.rows[t.step.at];
      step = {{"at", t.step.at},
              {"tag", at.tag},
              {"logId", at.logId},
              {"before", std::llround(t.step.before)},
              {"after", std::llround(t.step.after)},
              {"rise", std::llround(t.step.after - t.step.before)},
              {"noise", std::llround(t.step.noise)}};
    }
    nlohmann::json fig = {{"id", f.id}, {"name", f.name},         {"unit", f.unit},
                          {"rows", rows}, {"step", step}, {"warnings", t.warnings}};
    if (!f.q.point.empty() && f.q.point != "end") fig["point"] = f.q.point;
    figs.push_back(std::move(fig));
  }
  out["figures"] = std::move(figs);
  out["thisLog"] = {{"logId", a.logId}, {"stored", a.notStored == nullptr}, {"label", thisLabel}};
  if (!listed)
    notes.push_back("this log is in the store but has no tag '" + a.tagKey +
                    "': it is not among the runs drawn");
  out["notes"] = std::move(notes);
  // '<' only occurs inside JSON strings, where \u003c means the same: the text can sit in a
  // <script> element.
  std::string text = out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string safe;
  safe.reserve(text.size());
  for (char c : text) {
    if (c == '<') safe += "\\u003c";
    else safe += c;
  }
  return safe;
}

}  // namespace heapman::store
