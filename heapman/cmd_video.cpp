// heapman video LOG -o heap.mp4 [--from P --to P] [--every gc|frame:N|ms:N] [--fps 30]
// [--realtime] [--frames-dir D]: the heap map at a series of points, replayed forward once,
// encoded to H.264 MP4 by ffmpeg through a pipe, with WebVTT subtitles of the custom events and
// frame numbers (heap.vtt next to heap.mp4).
#include <cstdio>
#include <filesystem>
#include <optional>

#include "heapman/map/png.h"
#include "heapman/map/video.h"
#include "map_options.h"

namespace heapman::cli {

namespace {

namespace fs = std::filesystem;

void options(po::options_description& o, po::positional_options_description&) {
  o.add_options()("from", po::value<std::string>()->value_name("POINT"),
                  "first point (default: start)")(
      "to", po::value<std::string>()->value_name("POINT"), "last point (default: end)")(
      "every", po::value<std::string>()->value_name("gc|frame:N|ms:N"),
      "a picture after every GC (gc), every N-th frame mark (frame:N) or every N ms of recorded "
      "time (ms:N); default frame:1 when the log has frame marks, else gc, else ms:100")(
      "fps", po::value<int>()->default_value(30)->value_name("N"), "video frames per second")(
      "realtime", "each picture lasts the recorded time until the next (lines up with a capture)")(
      "output,o", po::value<std::string>()->value_name("FILE.mp4"),
      "the MP4 file to write (heap.vtt beside it)")(
      "frames-dir", po::value<std::string>()->value_name("DIR"),
      "also write each picture as DIR/frame-NNNNNN.png")(
      "vtt", po::value<std::string>()->value_name("FILE.vtt"),
      "the WebVTT file (default: the MP4's name with .vtt)");
  addMapOptions(o);
}

std::string defaultEvery(const replay::LogTables& t) {
  if (!t.frames.empty()) return "frame:1";
  if (!t.gcs.empty()) return "gc";
  return "ms:100";
}

int run(Session& s, const VerbOptions& vm) {
  if (!vm.count("output") && !vm.count("frames-dir"))
    throw UsageError("give -o FILE.mp4 (and/or --frames-dir DIR)\nusage: heapman video LOG -o "
                     "heap.mp4 [--from P --to P] [--every gc|frame:N|ms:N] [--realtime]");
  replay::Replay& r = *s.replay;
  map::VideoRequest req;
  req.from = pointOf(s, vm, "from", "start");
  req.to = pointOf(s, vm, "to", "end");
  req.fps = vm["fps"].as<int>();
  req.realtime = vm.count("realtime") > 0;
  std::string out = vm.count("output") ? vm["output"].as<std::string>() : "";
  std::string framesDir = vm.count("frames-dir") ? vm["frames-dir"].as<std::string>() : "";
  std::string vtt = vm.count("vtt") ? vm["vtt"].as<std::string>()
                    : !out.empty()  ? fs::path(out).replace_extension(".vtt").string()
                                    : (fs::path(framesDir) / "heap.vtt").string();
  map::PointClock clock(r.tables());
  map::VideoPlan plan;
  try {
    req.every = map::parseEvery(vm.count("every") ? vm["every"].as<std::string>()
                                                  : defaultEvery(r.tables()));
    plan = map::planVideo(r.tables(), clock, req);
  } catch (const map::MapError& e) {
    throw UsageError(e.what());
  }
  // Without ffmpeg: fail now, unless the frames are asked for too (then fail after them).
  std::optional<std::string> noFfmpeg;
  if (!out.empty() && map::VideoEncoder::findFfmpeg().empty()) {
    noFfmpeg = map::VideoEncoder::missingFfmpeg();
    if (framesDir.empty()) throw std::runtime_error(*noFfmpeg);
  }
  if (!framesDir.empty()) {
    std::error_code ec;
    fs::create_directories(framesDir, ec);
    if (ec) throw OutputError("writing " + framesDir + " failed: " + ec.message());
  }
  auto m = mapSetup(s, vm);
  std::unique_ptr<map::VideoEncoder> enc;
  if (!out.empty() && !noFfmpeg)
    enc = std::make_unique<map::VideoEncoder>(out, m->renderer->options().width,
                                              m->renderer->options().height, req.fps);
  uint64_t firstFrame = 0;
  double pngSeconds = 0;
  const bool privateFrames = s.holdsMemory();  // pictures of a log with dumps: 0600, like it
  auto sink = [&](const map::MapPicture& p, size_t, uint32_t copies) {
    if (!framesDir.empty()) {
      auto t = std::chrono::steady_clock::now();
      char name[40];
      std::snprintf(name, sizeof name, "frame-%06llu.png",
                    static_cast<unsigned long long>(firstFrame));
      try {
        map::writePng((fs::path(framesDir) / name).string(), p.image, 1, privateFrames);
      } catch (const map::MapError& e) {
        throw OutputError(e.what());
      }
      pngSeconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
    }
    if (enc) enc->write(p.image, copies);
    firstFrame += copies;
  };
  s.progress->restart("rendering " + std::to_string(plan.points.size()) + " pictures");
  map::VideoStats st = map::renderVideo(
      r, *m->renderer, plan, sink, [&](uint64_t d, uint64_t t) { (*s.progress)(d, t); });
  s.progress->finish();
  if (enc) enc->finish();
  writeOutput(vtt, map::webVtt(map::videoCues(r.tables(), clock, req, plan)));
  if (noFfmpeg) throw std::runtime_error(*noFfmpeg + " (the PNG frames are in " + framesDir + ")");
  char fig[256];
  Report rep;
  rep.query = "video";
  std::snprintf(fig, sizeof fig, "%llu frames at %d fps, %.3f s%s",
                static_cast<unsigned long long>(plan.videoFrames), req.fps, plan.seconds(),
                req.realtime ? " (realtime: the recorded span)" : "");
  rep.meta = {{"log", s.path},
              {"range", r.describe(req.from) + " .. " + r.describe(req.to)},
              {"video", (out.empty() ? std::string("(none)") : out) + ", " + fig},
              {"subtitles", vtt}};
  if (!framesDir.empty()) rep.meta.push_back({"frames", framesDir});
  std::snprintf(fig, sizeof fig,
                "%zu pictures: replay %.2f s, drawing %.2f s (%.1f pictures/s)%s", st.pictures,
                st.replaySeconds, st.renderSeconds,
                st.renderSeconds > 0 ? double(st.pictures) / st.renderSeconds : 0.0,
                framesDir.empty() ? "" : ", PNG files");
  std::string work = fig;
  if (!framesDir.empty()) {
    std::snprintf(fig, sizeof fig, " %.2f s", pngSeconds);
    work += fig;
  }
  rep.meta.push_back({"render", work});
  if (enc) {
    std::snprintf(fig, sizeof fig, "%.2f s CPU (blocked on its pipe %.2f s, waited %.2f s)",
                  enc->ffmpegCpuSeconds(), enc->writeSeconds(), enc->waitSeconds());
    rep.meta.push_back({"ffmpeg", fig});
  }
  rep.warnings = replay::warnings(r);
  emit(rep, OutputOptions{});
  return kExitOk;
}

std::vector<Needs> needs() {
  std::vector<Needs> n{{"", "frames-dir|output"}};
  n.insert(n.end(), std::begin(kMapNeeds), std::end(kMapNeeds));
  return n;
}

}  // namespace

extern const Verb kVideoVerb{
    .name = "video",
    .synopsis = "-o heap.mp4 [--from P --to P] [--every gc|frame:N|ms:N] [--fps 30] [--realtime] "
                "[--frames-dir D] [--layout ...] [--color ...]",
    .summary = "a video of the heap map over a range, H.264 MP4 through ffmpeg, WebVTT subtitles",
    .options = options,
    .run = run,
    .needs = needs()};

}  // namespace heapman::cli
