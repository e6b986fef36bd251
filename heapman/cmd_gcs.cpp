// heapman gcs LOG: every GC with its sequence numbers, time, heap size, live set, what it
// collected and its pause (from the index: no rescan).
#include <cinttypes>

#include "session.h"

namespace heapman::cli {

namespace {

void options(po::options_description& o, po::positional_options_description&) {
  addOutputOptions(o);
}

std::string ms(uint64_t ns) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3f", static_cast<double>(ns) / 1e6);
  return b;
}

int run(Session& s, const VerbOptions& vm) {
  const replay::LogTables& t = s.replay->tables();
  Report r;
  r.query = "gcs";
  r.meta = {{"log", s.path}, {"count", num(t.gcs.size())}};
  r.warnings = replay::warnings(*s.replay);
  Table tab{"gcs",
            {{"gc", true}, {"begin seq", true}, {"end seq", true}, {"time ms", true},
             {"heap before", true}, {"heap after", true}, {"live objects", true},
             {"live bytes", true}, {"collected objects", true}, {"collected bytes", true},
             {"pause us", true}},
            {}};
  for (const replay::GcRecord& g : t.gcs) {
    char pause[32];
    std::snprintf(pause, sizeof pause, "%.1f", static_cast<double>(g.pauseNs) / 1e3);
    tab.add({num(g.number), num(g.beginSeq), g.ended ? num(g.endSeq) : "", ms(g.beginTimeNs),
             num(g.heapSizeBefore), g.ended ? num(g.heapSizeAfter) : "",
             g.ended ? num(g.liveObjects) : "", g.ended ? num(g.liveBytes) : "",
             num(g.collectedObjects), num(g.collectedBytes), g.ended ? pause : ""});
  }
  r.tables.push_back(std::move(tab));
  emit(r, outputOptions(vm));
  return kExitOk;
}

}  // namespace

extern const Verb kGcsVerb{
    .name = "gcs",
    .synopsis = "[--csv FILE|-] [--json FILE|-]",
    .summary = "list GCs: number, sequence, time, heap size, live, collected, pause",
    .options = options,
    .run = run};

}  // namespace heapman::cli
