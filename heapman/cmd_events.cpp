// heapman events LOG [--frames]: the custom events (name, occurrence, the point naming them,
// sequence, time), or the frame marks.
#include "session.h"

namespace heapman::cli {

namespace {

void options(po::options_description& o, po::positional_options_description&) {
  o.add_options()("frames", "list frame marks instead of custom events")(
      "name", po::value<std::string>()->value_name("NAME"), "only custom events with this name");
  addOutputOptions(o);
}

std::string ms(uint64_t ns) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3f", static_cast<double>(ns) / 1e6);
  return b;
}

int run(Session& s, const VerbOptions& vm) {
  const replay::LogTables& t = s.replay->tables();
  if (vm.count("frames") && vm.count("name"))
    throw UsageError("--name picks custom events; frame marks have no name (give one of --frames "
                     "and --name)");
  Report r;
  r.query = vm.count("frames") ? "frames" : "events";
  r.warnings = replay::warnings(*s.replay);
  if (vm.count("frames")) {
    r.meta = {{"log", s.path}, {"count", num(t.frames.size())}};
    Table tab{"frames", {{"frame", true}, {"point"}, {"seq", true}, {"time ms", true}}, {}};
    for (const auto& f : t.frames)
      tab.add({num(f.frame), "frame:" + num(f.frame), num(f.seq), ms(f.timeNs)});
    r.tables.push_back(std::move(tab));
  } else {
    std::string only = vm.count("name") ? vm["name"].as<std::string>() : "";
    Table tab{"events",
              {{"event"}, {"occurrence", true}, {"point"}, {"seq", true}, {"time ms", true},
               {"thread", true}, {"payload bytes", true}},
              {}};
    for (const auto& e : t.events) {
      std::string name = t.eventName(e.nameId);
      if (!only.empty() && name != only) continue;
      tab.add({name, num(e.occurrence), name + "#" + num(e.occurrence), num(e.seq), ms(e.timeNs),
               num(e.thread), num(e.payloadBytes)});
    }
    r.meta = {{"log", s.path}, {"count", num(tab.rows.size())}};
    r.tables.push_back(std::move(tab));
  }
  emit(r, outputOptions(vm));
  return kExitOk;
}

}  // namespace

extern const Verb kEventsVerb{
    .name = "events",
    .synopsis = "[--frames] [--name NAME]",
    .summary = "list custom events (or frame marks) and the points naming them",
    .options = options,
    .run = run};

}  // namespace heapman::cli
