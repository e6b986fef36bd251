// heapman map LOG --at POINT -o heap.png: one picture of the heap at a point (replay/map): the
// address space that holds heap on a Hilbert curve or in rows, coloured by heap kind, type, blame
// function or age, objects that died since --since in red; the legend's colours and bytes
// printed as a table (CSV and JSON too).
#include <cstdio>

#include "heapman/map/png.h"
#include "map_options.h"

namespace heapman::cli {

namespace {

void options(po::options_description& o, po::positional_options_description&) {
  o.add_options()("at", po::value<std::string>()->value_name("POINT"), "point (default: end)")(
      "since", po::value<std::string>()->value_name("POINT"),
      "objects that died between this point and --at are drawn red, those born since bright "
      "(default: the last GC before --at)")(
      "output,o", po::value<std::string>()->value_name("FILE.png"), "the PNG file to write");
  addMapOptions(o);
  addOutputOptions(o);
}

std::string hexColor(map::Rgb c) {
  char b[8];
  std::snprintf(b, sizeof b, "#%06x", c);
  return b;
}

int run(Session& s, const VerbOptions& vm) {
  if (!vm.count("output"))
    throw UsageError("give -o FILE.png\nusage: heapman map LOG --at POINT -o heap.png");
  std::string out = vm["output"].as<std::string>();
  uint64_t at = pointOf(s, vm, "at", "end");
  uint64_t since = at;
  if (vm.count("since")) {
    since = pointOf(s, vm, "since");
    if (since > at)
      throw UsageError("--since " + vm["since"].as<std::string>() + " comes after --at");
  } else {
    for (const replay::GcRecord& g : s.replay->tables().gcs)
      if (g.ended && g.endSeq + 1 < at) since = g.endSeq + 1;  // the last one before --at
  }
  auto m = mapSetup(s, vm);
  s.progress->restart("map");
  replay::Replay& r = *s.replay;
  r.seek(since);
  m->renderer->setNewSince(since);
  map::DeathCollector deaths(r);
  r.seek(at, &deaths);
  m->renderer->addDeaths(deaths.take());
  map::MapPicture pic = m->renderer->render();
  s.progress->finish();
  try {
    map::writePng(out, pic.image, 6, s.holdsMemory());
  } catch (const map::MapError& e) {
    throw OutputError(e.what());
  }
  const map::AddressLayout& L = m->renderer->layout();
  Report rep;
  rep.query = "map";
  rep.meta = {{"log", s.path},
              {"point", r.describe(at)},
              {"since", r.describe(since)},
              {"picture", out + " " + std::to_string(pic.image.width) + "x" +
                              std::to_string(pic.image.height) + ", " +
                              map::curveName(L.curve()) + ", " + num(L.bytesPerPixel()) +
                              " bytes a pixel, " + num(L.regions().size()) + " regions"},
              {"live", num(pic.liveBytes) + " bytes in " + num(pic.liveObjects) + " objects"}};
  rep.warnings = replay::warnings(r);
  if (pic.unplaced)
    rep.warnings.push_back(num(pic.unplaced) + " live objects lie outside the scanned regions");
  Table t{"legend",
          {{"color"}, {map::colorByName(m->renderer->options().color)}, {"live bytes", true},
           {"live objects", true}, {"share", true}},
          {}};
  for (const map::LegendEntry& e : pic.legend)
    t.add({hexColor(e.color), e.name, num(e.bytes), num(e.objects),
           percent(pic.liveBytes ? double(e.bytes) / double(pic.liveBytes) : 0)});
  rep.tables.push_back(std::move(t));
  emit(rep, outputOptions(vm));
  return kExitOk;
}

std::vector<Needs> needs() {
  std::vector<Needs> n{{"", "output"}};
  n.insert(n.end(), std::begin(kMapNeeds), std::end(kMapNeeds));
  return n;
}

}  // namespace

extern const Verb kMapVerb{
    .name = "map",
    .synopsis = "--at POINT -o heap.png [--since POINT] [--layout hilbert|linear] "
                "[--color kind|type|function|age] [--bytes-per-pixel N] [--size WxH]",
    .summary = "a picture of the heap at a point: objects over the address space, coloured",
    .options = options,
    .run = run,
    .needs = needs()};

}  // namespace heapman::cli
