// Options the heap-map verbs share (map, video): layout, colours, size, exclusions. The frame
// options (--exclude, --exclude-add, --no-symbols) name blame's functions: with --color function
// only (kMapNeeds).
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "heapman/map/heap_map.h"
#include "session.h"

namespace heapman::cli {

inline void addMapOptions(po::options_description& o) {
  o.add_options()("layout", po::value<std::string>()->default_value("hilbert")->value_name(
                                "hilbert|linear"),
                  "a Hilbert curve, or rows as Tracy's memory map")(
      "color", po::value<std::string>()->default_value("kind")->value_name(
                   "kind|type|function|age"),
      "what a pixel's colour tells")(
      "bytes-per-pixel", po::value<uint64_t>()->value_name("2^K"),
      "a power of two (default: the smallest that fits)")(
      "size", po::value<std::string>()->default_value("1024x1024")->value_name("WxH"),
      "picture width and height")(
      "legend", po::value<size_t>()->default_value(12)->value_name("N"),
      "colours named in the legend");
  addFrameOptions(o);
}

// For the verbs' table: the frame options apply with --color function only.
inline constexpr Needs kMapNeeds[] = {{"exclude", "color=function"},
                                      {"exclude-add", "color=function"},
                                      {"no-symbols", "color=function"},
                                      {"debug-dir", "color=function"},
                                      {"path-map", "color=function"}};

// The renderer's options; UsageError for bad ones.
inline map::MapOptions mapOptionsOf(const VerbOptions& vm, const Session& s) {
  map::MapOptions m;
  try {
    m.curve = map::parseCurve(vm["layout"].as<std::string>());
    m.color = map::parseColorBy(vm["color"].as<std::string>());
  } catch (const map::MapError& e) {
    throw UsageError(e.what());
  }
  if (vm.count("bytes-per-pixel")) m.bytesPerPixel = vm["bytes-per-pixel"].as<uint64_t>();
  std::string size = vm["size"].as<std::string>();
  unsigned w = 0, h = 0;
  char x = 0, extra = 0;
  if (std::sscanf(size.c_str(), "%u%c%u%c", &w, &x, &h, &extra) != 3 || x != 'x')
    throw UsageError("--size " + size + ": give WIDTHxHEIGHT, as 1024x1024");
  m.width = int(w), m.height = int(h);
  m.legendRows = vm["legend"].as<size_t>();
  m.title = std::filesystem::path(s.path).filename().string();
  return m;
}

// The renderer (and the attribution it needs to colour by function); UsageError for options
// the log cannot take (a --bytes-per-pixel too small, a --size too small).
struct MapSetup {
  replay::Exclusions exclusions;
  std::unique_ptr<replay::Attribution> attribution;
  std::shared_ptr<const map::LogScan> scan;
  std::unique_ptr<map::MapRenderer> renderer;
};
inline std::unique_ptr<MapSetup> mapSetup(Session& s, const VerbOptions& vm) {
  auto m = std::make_unique<MapSetup>();
  map::MapOptions mo = mapOptionsOf(vm, s);
  if (mo.color == map::ColorBy::kFunction) {
    m->exclusions = exclusionsOf(vm);
    m->attribution =
        std::make_unique<replay::Attribution>(s.replay->tables(), *s.namer, m->exclusions);
  }
  s.progress->restart("scanning the log");
  m->scan = map::sharedScan(*s.replay);
  s.progress->finish();
  try {
    m->renderer =
        std::make_unique<map::MapRenderer>(*s.replay, m->attribution.get(), *m->scan, mo);
  } catch (const map::MapError& e) {
    throw UsageError(e.what());
  }
  return m;
}

}  // namespace heapman::cli
