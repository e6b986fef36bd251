#include "session.h"

#include <unistd.h>

#include <chrono>
#include <functional>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <new>
#include <regex>
#include <system_error>

namespace heapman::cli {

namespace fs = std::filesystem;

extern const ReplayVerb kBlameVerb, kDiffVerb, kChurnVerb, kGcsVerb, kEventsVerb, kAllocsVerb,
    kTypesVerb, kCompareVerb, kStacksVerb;
extern const ReplayVerb kObjectsVerb, kObjectVerb, kRefsVerb, kRetainedVerb,
    kPathsVerb, kGraphVerb;  // heap graph
extern const ReplayVerb kMapVerb, kVideoVerb;  // heap-map pictures and videos
extern const ReplayVerb kLeaksVerb;  // leak suspects
extern const ReplayVerb kReportVerb;  // the HTML report

const std::vector<ReplayVerb>& replayVerbs() {
  static const std::vector<ReplayVerb> v{kBlameVerb,  kDiffVerb,  kChurnVerb,
                                         kGcsVerb,    kEventsVerb, kAllocsVerb,
                                         kTypesVerb,  kCompareVerb, kStacksVerb,
                                         kObjectsVerb, kObjectVerb, kRefsVerb, kRetainedVerb,
                                         kPathsVerb, kGraphVerb,  kLeaksVerb,
                                         kMapVerb,   kVideoVerb,  kReportVerb};
  return v;
}

const ReplayVerb* findReplayVerb(const std::string& name) {
  for (const ReplayVerb& v : replayVerbs())
    if (name == v.name) return &v;
  return nullptr;
}

void ProgressBar::restart(std::string label) {
  finish();
  label_ = std::move(label);
  start_ = std::chrono::steady_clock::now();
  last_ = 0;
}

void ProgressBar::finish() {
  if (drawn_) std::fprintf(stderr, "\r\x1b[K");
  drawn_ = false;
}

void ProgressBar::operator()(uint64_t done, uint64_t total) {
  if (!tty_ || total == 0) return;
  double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  if (t < 0.5 || (drawn_ && t - last_ < 0.1 && done < total)) return;
  last_ = t;
  drawn_ = true;
  constexpr int kWidth = 30;
  int fill = static_cast<int>(kWidth * done / total);
  std::fprintf(stderr, "\r%s [%.*s%*s] %3d%%", label_.c_str(), fill,
               "##############################", kWidth - fill, "",
               static_cast<int>(100 * done / total));
  std::fflush(stderr);
}

namespace {

// Parses a verb's options; returns -1 for --help (printed), 0 to go on. Throws UsageError.
int parse(const ReplayVerb& v, const Args& args, bool withLog, po::variables_map& vm) {
  po::options_description opts(std::string(v.name) + " options");
  po::positional_options_description pos;
  opts.add_options()("help,h", "show this help");
  if (withLog) {
    opts.add_options()("log", po::value<std::string>(), "log file");
    pos.add("log", 1);
  }
  v.options(opts, pos);
  try {
    po::store(po::command_line_parser(args).options(opts).positional(pos).run(), vm);
    po::notify(vm);
  } catch (const std::exception& e) {
    throw UsageError(e.what() + std::string("\nusage: ") + (withLog ? "heapman " : "") + v.name +
                     (withLog ? " LOG " : " ") + v.synopsis);
  }
  if (vm.count("help")) {
    std::printf("usage: %s%s%s%s\n%s\n\n", withLog ? "heapman " : "", v.name,
                withLog ? " LOG " : " ", v.synopsis, v.summary);
    opts.print(std::cout);
    return -1;
  }
  return 0;
}

int guarded(const char* verb, const std::function<int()>& f) {
  try {
    return f();
  } catch (...) {
    return reportError(verb);
  }
}

}  // namespace

int reportError(const char* verb) {
  auto say = [&](const std::string& what) {
    std::fprintf(stderr, "heapman%s%s: %s\n", *verb ? " " : "", verb, what.c_str());
  };
  try {
    throw;
  } catch (const replay::Interrupted&) {
    say("interrupted");
    return kExitInterrupted;
  } catch (const UsageError& e) {
    say(e.what());
    return kExitUsage;
  } catch (const replay::ReplayError& e) {
    say(e.what());
    return kExitUsage;
  } catch (const replay::DataError& e) {
    say(e.what());
    return kExitBadLog;
  } catch (const OutputError& e) {
    std::fprintf(stderr, "heapman: %s\n", e.what());
    return kExitBadLog;
  } catch (const std::bad_alloc&) {
    say("out of memory. The log may be corrupt (check it with `heapman verify LOG`) or need more "
        "memory than this machine has");
    return kExitBadLog;
  } catch (const log::FormatError& e) {
    say(std::string(e.what()) +
        ". The log is corrupt there: `heapman verify LOG` checks all of it; record it again or "
        "restore a good copy");
    return kExitBadLog;
  } catch (const std::regex_error& e) {
    say(std::string("bad regex: ") + e.what());
    return kExitUsage;
  } catch (const std::system_error& e) {
    say(std::string("system error: ") + e.what());
    return kExitBadLog;
  } catch (const std::logic_error& e) {
    // std::length_error, std::out_of_range...: a bug, or input no check caught.
    say(std::string("internal error (") + e.what() +
        "). The log may be corrupt: check it with `heapman verify LOG`; if it verifies, please "
        "report this with the log");
    return kExitBadLog;
  } catch (const std::exception& e) {
    say(e.what());
    return kExitBadLog;
  } catch (...) {
    say("unexpected error. The log may be corrupt: check it with `heapman verify LOG`");
    return kExitBadLog;
  }
}

std::unique_ptr<Session> Session::open(const std::string& path, bool symbolize,
                                       const std::atomic<bool>* cancel) {
  auto s = std::make_unique<Session>();
  s->path = path;
  replay::ReplayOptions o;
  s->progress = std::make_shared<ProgressBar>();
  s->progress->restart("indexing " + fs::path(path).filename().string());
  o.progress = [bar = s->progress](uint64_t d, uint64_t t) { (*bar)(d, t); };
  o.intactPrefix = true;
  o.cancel = cancel;  // a damaged log: answer over its intact chunks, say so, exit 1
  try {
    s->replay = std::make_unique<replay::Replay>(path, o);
  } catch (const log::FormatError& e) {
    throw std::runtime_error(path + ": " + e.what());
  }
  s->progress->finish();
  s->namer = std::make_unique<replay::FrameNamer>(s->replay->tables(), symbolize);
  return s;
}

int runOneShot(const ReplayVerb& v, const Args& args) {
  return guarded(v.name, [&] {
    po::variables_map vm;
    if (parse(v, args, true, vm) < 0) return kExitOk;
    if (!vm.count("log"))
      throw UsageError(std::string("no log given\nusage: heapman ") + v.name + " LOG " +
                       v.synopsis);
    auto s = Session::open(vm["log"].as<std::string>(), !vm.count("no-symbols"));
    s->progress->restart(v.name);
    int rc = v.run(*s, vm);
    s->progress->finish();
    if (s->replay->damage() && rc == kExitOk) {
      // The answer is printed, but it covers only part of the log: scripts must notice.
      std::fprintf(stderr,
                   "heapman %s: %s is damaged (%s): the answer covers only the intact part before "
                   "it; run `heapman verify %s` for details\n",
                   v.name, s->path.c_str(), s->replay->damage()->what(), s->path.c_str());
      rc = kExitBadLog;
    }
    return rc;
  });
}

int runInSession(const ReplayVerb& v, Session& s, const Args& args) {
  return guarded(v.name, [&] {
    po::variables_map vm;
    if (parse(v, args, false, vm) < 0) return kExitOk;
    s.progress->restart(v.name);
    int rc;
    try {
      rc = v.run(s, vm);
    } catch (...) {
      s.progress->finish();  // erase a half-drawn bar before the error (or "interrupted")
      throw;
    }
    s.progress->finish();
    return rc;
  });
}

// ---- shared options -----------------------------------------------------------------------------

void addQueryOptions(po::options_description& opts) {
  opts.add_options()("sort", po::value<std::string>(), "bytes | objects | name")(
      "top", po::value<Count>(), "show the first N rows only (0: all)")(
      "exclude", po::value<std::string>(),
      "leaf-exclusion regexes, one a line (replaces the default list)")(
      "exclude-add", po::value<std::vector<std::string>>(),
      "one more leaf-exclusion regex (repeatable)")(
      "no-symbols", "name native frames module+offset (no DWARF lookups)");
  addOutputOptions(opts);
}

replay::SortBy sortOf(const po::variables_map& vm, replay::SortBy dflt) {
  return vm.count("sort") ? replay::parseSortBy(vm["sort"].as<std::string>()) : dflt;
}

size_t topOf(const po::variables_map& vm) { return vm.count("top") ? vm["top"].as<Count>().n : 0; }

std::string defaultExclusionFile() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    for (const char* rel : {"../share/heapman/default_exclusions.txt",
                            "share/heapman/default_exclusions.txt"}) {
      fs::path p = exe.parent_path() / rel;
      if (fs::exists(p, ec)) return p.lexically_normal().string();
    }
  }
#ifdef HEAPMAN_SOURCE_DATA_DIR
  fs::path src = fs::path(HEAPMAN_SOURCE_DATA_DIR) / "default_exclusions.txt";
  if (fs::exists(src, ec)) return src.string();
#endif
  return "";
}

replay::Exclusions exclusionsOf(const po::variables_map& vm) {
  replay::Exclusions e;
  std::string file = vm.count("exclude") ? vm["exclude"].as<std::string>() : defaultExclusionFile();
  if (!file.empty()) e = replay::Exclusions::fromFile(file);
  if (vm.count("exclude-add"))
    for (const std::string& re : vm["exclude-add"].as<std::vector<std::string>>())
      e.add(re, "--exclude-add");
  return e;
}

uint64_t pointOf(Session& s, const po::variables_map& vm, const char* option, const char* dflt) {
  std::string text;
  if (vm.count(option))
    text = vm[option].as<std::string>();
  else if (dflt)
    text = dflt;
  else
    throw UsageError(std::string("--") + option + " POINT is required (gc:N, NAME#K, frame:F, "
                     "seq:S, start, end)");
  return s.replay->resolve(text);
}

}  // namespace heapman::cli
