#include "session.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <new>
#include <system_error>

#include "default_exclusions.h"

namespace heapman::cli {

namespace fs = std::filesystem;

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
  if (!tty_ || total == 0 || consoleCaptured()) return;
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

int reportError(const char* verb) {
  auto say = [&](const std::string& what) {
    sayLine(std::string("heapman") + (*verb ? " " : "") + verb + ": " + what);
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
    sayLine(std::string("heapman: ") + e.what());
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

bool Session::holdsMemory() const {
  for (const log::ChunkRef& c : replay->reader().chunks())
    if (c.header.type == static_cast<uint16_t>(log::ChunkType::kRamDump)) return true;
  return false;
}

std::unique_ptr<Session> Session::open(const std::string& path,
                                       const replay::SymbolSettings& symbols,
                                       const std::atomic<bool>* cancel, bool useIndex,
                                       bool lazy, bool follow,
                                       const replay::ReplayOptions* index) {
  auto s = std::make_unique<Session>();
  s->path = path;
  s->symbols = symbols;
  replay::ReplayOptions o;
  if (index) {
    o.indexPath = index->indexPath;
    o.checkpointEvents = index->checkpointEvents;
    o.indexShare = index->indexShare;
  }
  s->progress = std::make_shared<ProgressBar>();
  s->progress->restart("indexing " + fs::path(path).filename().string());
  o.progress = [bar = s->progress](uint64_t d, uint64_t t) { (*bar)(d, t); };
  o.intactPrefix = true;
  o.cancel = cancel;  // a damaged log: answer over its intact chunks, say so, exit 1
  o.useIndex = useIndex;
  o.lazy = lazy;
  o.follow = follow;
  if (consoleCaptured()) o.notes = nullptr;  // a server's worker: no stderr of its own
  try {
    s->replay = std::make_unique<replay::Replay>(path, o);
  } catch (const log::FormatError& e) {
    throw std::runtime_error(path + ": " + e.what());
  }
  s->progress->finish();
  s->namer = std::make_unique<replay::FrameNamer>(s->replay->tables(), symbols);
  return s;
}

replay::SymbolSettings symbolSettingsOf(const VerbOptions& vm) {
  replay::SymbolSettings o;
  o.symbolize = !vm.count("no-symbols");
  if (vm.count("debug-dir")) o.debugDirs = vm["debug-dir"].as<std::vector<std::string>>();
  if (vm.count("path-map"))
    for (const std::string& m : vm["path-map"].as<std::vector<std::string>>()) {
      size_t eq = m.find('=');
      if (eq == 0 || eq == std::string::npos || eq + 1 == m.size())
        throw UsageError("--path-map '" + m + "': give FROM=TO, a directory the log names and " +
                         "where its files are here (e.g. --path-map /usr/lib=/mnt/device/usr/lib)");
      o.pathMaps.emplace_back(m.substr(0, eq), m.substr(eq + 1));
    }
  return o;
}

void noteUnnamedModules(Session& s) {
  if (consoleCaptured()) return;  // a server's worker: its answers are its output
  for (const replay::UnnamedModule& m : s.namer->unnamedModules()) {
    if (!s.toldUnnamed.insert(m.path).second) continue;
    const std::string& why = m.problem;
    std::string hint;
    if (why == "module file not found" || why.rfind("cannot open module file", 0) == 0 ||
        why == "module path is not a regular file")
      hint = "recorded on another machine? --path-map FROM=TO looks for it under TO";
    else if (why.rfind("build id differs", 0) == 0)
      hint = "the file here is not the build that was recorded: --path-map FROM=TO to a copy of "
             "that build, or --debug-dir DIR with its debug file";
    else if (why == "no debug info and no symbol")
      hint = "it is stripped: install its debug symbols (Debian: its -dbgsym package) or give "
             "--debug-dir DIR holding DIR/.build-id/xx/rest.debug";
    std::string name = fs::path(m.path).filename().string();
    std::fprintf(stderr, "heapman: %llu frame%s in %s (%s) named module+offset: %s%s%s\n",
                 static_cast<unsigned long long>(m.frames), m.frames == 1 ? "" : "s",
                 name.c_str(), m.path.c_str(), why.c_str(), hint.empty() ? "" : "; ",
                 hint.c_str());
  }
}

// ---- shared options -----------------------------------------------------------------------------

replay::SortBy sortOf(const VerbOptions& vm, replay::SortBy dflt) {
  return vm.count("sort") ? replay::parseSortBy(vm["sort"].as<std::string>()) : dflt;
}

size_t topOf(const VerbOptions& vm) { return vm.count("top") ? vm["top"].as<Count>().n : 0; }

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
  return "";
}

replay::Exclusions exclusionsOf(const VerbOptions& vm) {
  replay::Exclusions e;
  std::string file = vm.count("exclude") ? vm["exclude"].as<std::string>() : defaultExclusionFile();
  if (!file.empty())
    e = replay::Exclusions::fromFile(file);
  else
    e = replay::Exclusions::fromText(defaultExclusionsText(), "default_exclusions.txt (built in)");
  if (vm.count("exclude-add"))
    for (const std::string& re : vm["exclude-add"].as<std::vector<std::string>>())
      e.add(re, "--exclude-add");
  return e;
}

uint64_t pointOf(Session& s, const VerbOptions& vm, const char* option, const char* dflt) {
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
