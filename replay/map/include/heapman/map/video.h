// Heap-map videos: the pictures of a range of a log, made by replaying it forward once (each
// step costs the events between two pictures, never a seek from a checkpoint), encoded to H.264
// MP4 by Debian's ffmpeg fed raw RGB frames through a pipe, and subtitles (WebVTT) naming the
// custom events and frame numbers.
//
// Pictures are taken at points: `from`, then every GC end, every N-th frame mark or every N ms
// of recorded time inside (from, to), then `to` (not with --realtime: there `to` only ends the
// last picture). A video frame is one picture at `fps`; with realtime each picture lasts the
// recorded time until the next point, as whole video frames (the k-th point starts at video
// frame round((t_k - t_from) * fps)), so the video runs as long as the recorded span, within one
// frame, and lines up with a screen capture of the game. Pictures that get no video frame are
// not rendered; their deaths go into the next one.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "heapman/map/heap_map.h"

namespace heapman::map {

struct Every {
  enum class Kind { kGc, kFrame, kMs } kind = Kind::kFrame;
  uint64_t n = 1;
};
// "gc" | "frame:N" | "ms:N" (N >= 1); MapError otherwise.
Every parseEvery(const std::string& s);

struct VideoRequest {
  uint64_t from = 0, to = 0;  // limits, from < to
  Every every;
  int fps = 30;
  bool realtime = false;
};

struct VideoPoint {
  uint64_t limit = 0;
  uint64_t timeNs = 0;  // recorded time (PointClock), or the nominal time of an ms:N point
};

struct VideoPlan {
  std::vector<VideoPoint> points;
  std::vector<uint32_t> copies;  // video frames per picture (realtime: 0 or more; else 1)
  uint64_t videoFrames = 0;
  uint64_t startNs = 0, endNs = 0;  // recorded times of from and to
  int fps = 30;
  double seconds() const { return double(videoFrames) / fps; }  // the video's duration
};
// MapError when the range holds no point or the video would have no frame.
VideoPlan planVideo(const replay::LogTables& t, const PointClock& clock, const VideoRequest& req);

struct Cue {
  double start = 0, end = 0;  // seconds into the video
  std::string id, text;
};
// Custom events in [from, to) (id and text "NAME#K": from the picture that first shows the event,
// or with realtime from its recorded time, for 2 s) and the frame numbers of the pictures (id
// "frame-F", text "frame F").
std::vector<Cue> videoCues(const replay::LogTables& t, const PointClock& clock,
                           const VideoRequest& req, const VideoPlan& plan);
std::string webVtt(const std::vector<Cue>& cues);
std::string vttTime(double seconds);  // hh:mm:ss.mmm

struct VideoStats {
  size_t pictures = 0;        // rendered
  double replaySeconds = 0;   // moving the state between pictures (and the renderer's
                              // per-pixel state with it: MapRenderer::advance)
  double renderSeconds = 0;   // drawing the pictures
  double renderCpuSeconds = 0;  // the same in CPU time of the calling thread
  double sinkSeconds = 0;     // in the sink (encoding, writing frames)
};
// Seeks to the first point, then replays forward once; for each picture with copies > 0 renders
// the state and calls sink(picture, index, copies). progress(done, total) after each point.
VideoStats renderVideo(replay::Replay& r, MapRenderer& m, const VideoPlan& plan,
                       const std::function<void(const MapPicture&, size_t, uint32_t)>& sink,
                       const std::function<void(uint64_t, uint64_t)>& progress = {});

// ffmpeg as a child process encoding raw RGB frames from a pipe to H.264 (libx264, yuv420p) in
// an MP4 file. Not thread-safe; SIGPIPE is ignored while it runs (a dead ffmpeg is an error).
class VideoEncoder {
 public:
  // The ffmpeg of PATH ("" when none). HEAPMAN_FFMPEG, when set, names the program instead.
  static std::string findFfmpeg();
  // What to say when findFfmpeg() finds none (names Debian's package).
  static std::string missingFfmpeg();
  // Starts ffmpeg; throws MapError naming Debian's ffmpeg package when it is missing.
  VideoEncoder(const std::string& path, int width, int height, int fps);
  ~VideoEncoder();
  VideoEncoder(const VideoEncoder&) = delete;
  VideoEncoder& operator=(const VideoEncoder&) = delete;
  // The frame `copies` times. Throws MapError with ffmpeg's message when it died.
  void write(const Image& img, uint32_t copies);
  // Closes the pipe and waits; MapError with ffmpeg's message when it failed.
  void finish();
  double writeSeconds() const { return writeSeconds_; }  // blocked writing into the pipe
  double ffmpegCpuSeconds() const { return cpuSeconds_; }  // its user + system time (finish)
  double waitSeconds() const { return waitSeconds_; }      // finish: waiting for it to end

 private:
  std::string failure(const std::string& what);
  pid_t pid_ = -1;
  int fd_ = -1, errFd_ = -1;
  int width_, height_;
  std::string path_;
  double writeSeconds_ = 0, cpuSeconds_ = 0, waitSeconds_ = 0;
  struct sigaction oldPipe_ {};
};

}  // namespace heapman::map
