#include "heapman/map/video.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <ctime>

namespace heapman::map {

namespace {

using Clock = std::chrono::steady_clock;
double threadCpu() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) / 1e9;
}
double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

uint64_t positiveNumber(const std::string& text, const std::string& what) {
  if (text.empty() || text.size() > 12 ||
      text.find_first_not_of("0123456789") != std::string::npos || std::stoull(text) == 0)
    throw MapError("--every " + what + ": N must be a whole number from 1");
  return std::stoull(text);
}

}  // namespace

Every parseEvery(const std::string& s) {
  Every e;
  if (s == "gc") {
    e.kind = Every::Kind::kGc;
  } else if (s.rfind("frame:", 0) == 0) {
    e.kind = Every::Kind::kFrame;
    e.n = positiveNumber(s.substr(6), s);
  } else if (s.rfind("ms:", 0) == 0) {
    e.kind = Every::Kind::kMs;
    e.n = positiveNumber(s.substr(3), s);
  } else {
    throw MapError("--every " + s + ": give gc, frame:N or ms:N");
  }
  return e;
}

VideoPlan planVideo(const replay::LogTables& t, const PointClock& clock, const VideoRequest& req) {
  if (req.fps < 1 || req.fps > 240) throw MapError("--fps: give 1 to 240");
  if (req.to <= req.from) throw MapError("the range is empty: --to must come after --from");
  VideoPlan plan;
  plan.fps = req.fps;
  plan.startNs = clock.timeAt(req.from);
  plan.endNs = std::max(plan.startNs, clock.timeAt(req.to));
  plan.points.push_back({req.from, plan.startNs});
  auto add = [&](uint64_t limit, uint64_t timeNs) {
    if (limit <= req.from || limit >= req.to) return;
    if (limit <= plan.points.back().limit) return;  // same state (ms points between anchors)
    plan.points.push_back({limit, std::max(timeNs, plan.points.back().timeNs)});
  };
  switch (req.every.kind) {
    case Every::Kind::kGc:
      for (const replay::GcRecord& g : t.gcs)
        if (g.ended) add(g.endSeq + 1, clock.timeAt(g.endSeq + 1));
      break;
    case Every::Kind::kFrame:
      for (const replay::FrameRecord& f : t.frames)
        if (f.frame % req.every.n == 0) add(f.seq + 1, clock.timeAt(f.seq + 1));
      break;
    case Every::Kind::kMs:
      for (uint64_t ns = plan.startNs + req.every.n * 1'000'000; ns < plan.endNs;
           ns += req.every.n * 1'000'000)
        add(std::max(clock.limitAt(ns), req.from + 1), ns);
      break;
  }
  if (!req.realtime) plan.points.push_back({req.to, plan.endNs});
  plan.copies.assign(plan.points.size(), 1);
  if (req.realtime) {
    auto frameAt = [&](uint64_t ns) {
      return uint64_t(std::llround(double(ns - plan.startNs) * req.fps / 1e9));
    };
    for (size_t i = 0; i < plan.points.size(); ++i) {
      uint64_t next = i + 1 < plan.points.size() ? plan.points[i + 1].timeNs : plan.endNs;
      plan.copies[i] = uint32_t(frameAt(next) - frameAt(plan.points[i].timeNs));
    }
  }
  for (uint32_t c : plan.copies) plan.videoFrames += c;
  if (plan.videoFrames == 0)
    throw MapError("the range lasts less than one video frame of recorded time (" +
                   std::to_string((plan.endNs - plan.startNs) / 1000) +
                   " us): drop --realtime or give a longer range");
  return plan;
}

std::string vttTime(double s) {
  auto ms = uint64_t(std::llround(std::max(0.0, s) * 1000));
  char b[32];
  std::snprintf(b, sizeof b, "%02llu:%02llu:%02llu.%03llu",
                static_cast<unsigned long long>(ms / 3'600'000),
                static_cast<unsigned long long>(ms / 60'000 % 60),
                static_cast<unsigned long long>(ms / 1000 % 60),
                static_cast<unsigned long long>(ms % 1000));
  return b;
}

std::vector<Cue> videoCues(const replay::LogTables& t, const PointClock& clock,
                           const VideoRequest& req, const VideoPlan& plan) {
  const double fps = req.fps, total = double(plan.videoFrames) / fps;
  std::vector<double> start(plan.points.size());  // video time of each picture
  uint64_t frames = 0;
  for (size_t i = 0; i < plan.points.size(); ++i) start[i] = double(frames) / fps, frames += plan.copies[i];
  std::vector<Cue> cues;
  for (const replay::EventRecord& e : t.events) {
    if (e.seq < req.from || e.seq >= req.to) continue;
    double at;
    if (req.realtime) {
      at = double(clock.timeAt(e.seq + 1) - plan.startNs) / 1e9;
    } else {
      auto it = std::partition_point(plan.points.begin(), plan.points.end(),
                                     [&](const VideoPoint& p) { return p.limit <= e.seq; });
      if (it == plan.points.end()) continue;
      at = start[size_t(it - plan.points.begin())];
    }
    at = std::min(at, std::max(0.0, total - 1 / fps));
    std::string name = t.eventName(e.nameId) + "#" + std::to_string(e.occurrence);
    cues.push_back({at, std::min(total, std::max(at + 2.0, at + 1 / fps)), name, name});
  }
  // Frame numbers: one cue per run of shown pictures with the same frame mark.
  for (size_t i = 0; i < plan.points.size(); ++i) {
    if (!plan.copies[i]) continue;
    PointInfo p = clock.at(plan.points[i].limit);
    if (!p.hasFrame) continue;
    double end = start[i] + plan.copies[i] / fps;
    std::string id = "frame-" + std::to_string(p.frame);
    if (!cues.empty() && cues.back().id == id && std::abs(cues.back().end - start[i]) < 1e-9)
      cues.back().end = end;
    else
      cues.push_back({start[i], end, id, "frame " + std::to_string(p.frame)});
  }
  std::stable_sort(cues.begin(), cues.end(), [](const Cue& a, const Cue& b) { return a.start < b.start; });
  return cues;
}

std::string webVtt(const std::vector<Cue>& cues) {
  std::string out = "WEBVTT\n";
  for (const Cue& c : cues)
    out += "\n" + c.id + "\n" + vttTime(c.start) + " --> " + vttTime(c.end) + "\n" + c.text + "\n";
  return out;
}

VideoStats renderVideo(replay::Replay& r, MapRenderer& m, const VideoPlan& plan,
                       const std::function<void(const MapPicture&, size_t, uint32_t)>& sink,
                       const std::function<void(uint64_t, uint64_t)>& progress) {
  VideoStats st;
  MapPicture pic;
  auto t0 = Clock::now();
  r.seek(plan.points.front().limit);
  m.addDeaths({});
  m.setNewSince(plan.points.front().limit);
  st.replaySeconds += since(t0);
  for (size_t i = 0; i < plan.points.size(); ++i) {
    if (i > 0) {  // the renderer follows every birth and death on the way
      auto t = Clock::now();
      m.advance(plan.points[i].limit);
      st.replaySeconds += since(t);
    }
    if (plan.copies[i]) {
      auto t = Clock::now();
      double cpu = threadCpu();
      m.render(pic);
      st.renderCpuSeconds += threadCpu() - cpu;
      st.renderSeconds += since(t);
      ++st.pictures;
      t = Clock::now();
      sink(pic, i, plan.copies[i]);
      st.sinkSeconds += since(t);
    }
    if (progress) progress(i + 1, plan.points.size());
  }
  return st;
}

// ---- ffmpeg -----------------------------------------------------------------------------------

std::string VideoEncoder::findFfmpeg() {
  if (const char* e = std::getenv("HEAPMAN_FFMPEG"); e && *e) return e;
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "";
  size_t i = 0;
  while (i <= dirs.size()) {
    size_t j = dirs.find(':', i);
    if (j == std::string::npos) j = dirs.size();
    std::string dir = dirs.substr(i, j - i);
    std::string candidate = (dir.empty() ? "." : dir) + "/ffmpeg";
    struct stat sb;
    if (::stat(candidate.c_str(), &sb) == 0 && S_ISREG(sb.st_mode) &&
        ::access(candidate.c_str(), X_OK) == 0)
      return candidate;
    i = j + 1;
  }
  return "";
}

std::string VideoEncoder::missingFfmpeg() {
  return "ffmpeg not found in PATH: install Debian's ffmpeg package (apt-get install ffmpeg; "
         "cmake/deps.sh does), or give --frames-dir DIR for PNG frames";
}

VideoEncoder::VideoEncoder(const std::string& path, int width, int height, int fps)
    : width_(width), height_(height), path_(path) {
  std::string ffmpeg = findFfmpeg();
  if (ffmpeg.empty()) throw MapError(missingFfmpeg());
  const char* tmp = std::getenv("TMPDIR");
  std::string errPath = std::string(tmp && *tmp ? tmp : "/tmp") + "/heapman-ffmpeg-XXXXXX";
  errFd_ = ::mkstemp(errPath.data());
  if (errFd_ < 0) throw MapError(std::string("cannot make a file for ffmpeg's messages: ") + std::strerror(errno));
  ::unlink(errPath.c_str());
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw MapError(std::string("pipe: ") + std::strerror(errno));
  std::string size = std::to_string(width) + "x" + std::to_string(height);
  std::string rate = std::to_string(fps);
  std::vector<std::string> args = {ffmpeg, "-hide_banner", "-loglevel", "error", "-y",
                                   "-f", "rawvideo", "-pix_fmt", "rgb24", "-video_size", size,
                                   "-framerate", rate, "-i", "pipe:0", "-an", "-c:v", "libx264",
                                   "-preset", "veryfast", "-crf", "20", "-pix_fmt", "yuv420p",
                                   "-movflags", "+faststart", path};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_ = ::fork();
  if (pid_ < 0) throw MapError(std::string("fork: ") + std::strerror(errno));
  if (pid_ == 0) {
    ::dup2(fds[0], 0);
    int devnull = ::open("/dev/null", O_WRONLY);
    if (devnull >= 0) ::dup2(devnull, 1);
    ::dup2(errFd_, 2);
    ::execv(argv[0], argv.data());
    const char* msg = "cannot run ffmpeg\n";
    (void)!::write(2, msg, std::strlen(msg));
    ::_exit(127);
  }
  ::close(fds[0]);
  fd_ = fds[1];
  struct sigaction ign {};
  ign.sa_handler = SIG_IGN;
  ::sigaction(SIGPIPE, &ign, &oldPipe_);
}

VideoEncoder::~VideoEncoder() {
  if (fd_ >= 0) ::close(fd_);
  if (pid_ > 0) {
    ::kill(pid_, SIGTERM);
    int st;
    ::waitpid(pid_, &st, 0);
    ::sigaction(SIGPIPE, &oldPipe_, nullptr);
  }
  if (errFd_ >= 0) ::close(errFd_);
}

std::string VideoEncoder::failure(const std::string& what) {
  std::string msg;
  if (errFd_ >= 0) {
    char buf[2048];
    ssize_t n = ::pread(errFd_, buf, sizeof buf - 1, 0);
    if (n > 0) msg.assign(buf, size_t(n));
    while (!msg.empty() && (msg.back() == '\n' || msg.back() == '\r')) msg.pop_back();
  }
  return "ffmpeg " + what + (msg.empty() ? "" : ": " + msg);
}

void VideoEncoder::write(const Image& img, uint32_t copies) {
  if (img.width != width_ || img.height != height_) throw MapError("frame size changed");
  auto t = Clock::now();
  for (uint32_t c = 0; c < copies; ++c) {
    const uint8_t* p = img.rgb.data();
    size_t left = img.rgb.size();
    while (left) {
      ssize_t n = ::write(fd_, p, left);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        writeSeconds_ += since(t);
        ::close(fd_);
        fd_ = -1;
        int st = 0;
        ::waitpid(pid_, &st, 0);
        pid_ = -1;
        ::sigaction(SIGPIPE, &oldPipe_, nullptr);
        throw MapError(failure("stopped while encoding " + path_));
      }
      p += n;
      left -= size_t(n);
    }
  }
  writeSeconds_ += since(t);
}

void VideoEncoder::finish() {
  auto t = Clock::now();
  ::close(fd_);
  fd_ = -1;
  int st = 0;
  struct rusage ru {};
  while (::wait4(pid_, &st, 0, &ru) < 0 && errno == EINTR) {
  }
  pid_ = -1;
  ::sigaction(SIGPIPE, &oldPipe_, nullptr);
  waitSeconds_ = since(t);
  cpuSeconds_ = double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
    throw MapError(failure("failed writing " + path_ + " (exit " +
                           (WIFEXITED(st) ? std::to_string(WEXITSTATUS(st))
                                          : "by signal " + std::to_string(WTERMSIG(st))) +
                           ")"));
}

}  // namespace heapman::map
