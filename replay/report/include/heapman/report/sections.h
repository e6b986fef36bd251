// The report's views from other libraries, as Sections for Builder::addSection (shapes in
// docs/DESIGN.md §3.10):
//   leakSection  the leak suspects of `heapman leaks` at its default points (replay/leaks), a
//                "table" whose rows open to the suspect's root path, root first; without RAM
//                dumps at the points, the growing sites (step 1) instead, with the reason;
//   mapSection   heap-map pictures (replay/map) at a handful of points, each as `heapman map
//                --at POINT` draws it, PNGs inlined as data: URIs, a "frames" section whose
//                slider moves the run's chart marker.
// Threads: one thread; both move (seek) the Replay.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "heapman/map/heap_map.h"
#include "heapman/report/report.h"

namespace heapman::report {

// std::nullopt (and *why) when the log has no repeated state to compare: fewer than 3
// occurrences of any custom event (`heapman leaks`' own refusal, its message).
std::optional<Section> leakSection(replay::Replay& r, replay::FrameNamer& namer,
                                   const replay::Exclusions& ex, int run, std::string* why);

struct FramesOptions {
  // Pictures: each occurrence of the custom event that repeats most (at least twice), else the
  // GCs, else positions, evenly chosen up to this many.
  size_t maxFrames = 12;
  int width = 640, height = 640;
  // PNG bytes for all frames together (before base64); frames past it are left out, and the
  // note says so.
  size_t budgetBytes = 6u << 20;
};

// std::nullopt (and *why) when the log has no heap to draw. scan: the log's map::LogScan when
// the caller has it (a map::LogScanner given to Builder::addRun), else one pass makes it.
std::optional<Section> mapSection(replay::Replay& r, const std::string& title, int run,
                                  const FramesOptions& o, std::string* why,
                                  const map::LogScan* scan = nullptr);

// Where mapSection's pictures start (the end of the last GC before each, whose deaths since it
// are drawn in red): for Builder::addRun's keepAt, so that the run's pass keeps the state there
// and each picture replays from it rather than from the nearest checkpoint.
std::vector<uint64_t> frameStarts(replay::Replay& r, const FramesOptions& o);

// RFC 4648 base64 (the data: URIs).
std::string base64(const std::string& bytes);

}  // namespace heapman::report
