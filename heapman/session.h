// A log opened for the replay verbs: the Replay with its index, the frame names (symbolized once
// per session), and the plumbing every replay verb shares: points, exclusions, progress.
// One-shot verbs open a Session for one command; the shell keeps one between commands.
#pragma once

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "heapman/replay/frames.h"
#include "heapman/replay/queries.h"
#include "heapman/replay/replay.h"
#include "options.h"
#include "output.h"
#include "verbs.h"

namespace heapman::cli {

// A progress bar on stderr for steps longer than half a second, only when stderr is a terminal.
class ProgressBar {
 public:
  ProgressBar() : tty_(::isatty(STDERR_FILENO) == 1) {}
  void restart(std::string label);
  void finish();  // erases the bar
  void operator()(uint64_t done, uint64_t total);

 private:
  std::string label_;
  bool tty_;
  bool drawn_ = false;
  double last_ = 0;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

struct Session {
  std::string path;
  std::unique_ptr<replay::Replay> replay;
  std::unique_ptr<replay::FrameNamer> namer;
  std::shared_ptr<ProgressBar> progress;
  // --no-symbols, --debug-dir, --path-map (a second log the verb opens is named alike).
  replay::SymbolSettings symbols;
  // Modules the user was told have no names for their frames (noteUnnamedModules), by path.
  std::set<std::string> toldUnnamed;

  // Opens a log and its index (building it with a progress bar when needed). Throws.
  // `cancel`: when it reads true, the index build or a later seek throws replay::Interrupted.
  // `useIndex` false: no index file is read or written (a log still being written: the index
  // pass runs in memory).
  // `lazy`: a fresh log is indexed only as far as the command's points (the verb's prefixOnly).
  // `follow`: the log is being written; replay->grow() takes in what is written next
  // (ReplayOptions::follow).
  // `index`: where the index file is and how dense its checkpoints (indexPath, checkpointEvents,
  // indexShare are taken from it); the default one otherwise.
  static std::unique_ptr<Session> open(const std::string& path,
                                       const replay::SymbolSettings& symbols,
                                       const std::atomic<bool>* cancel = nullptr,
                                       bool useIndex = true, bool lazy = false,
                                       bool follow = false,
                                       const replay::ReplayOptions* index = nullptr);
  // The log holds the program's memory (RAM dump chunks): files made from it are private (0600).
  bool holdsMemory() const;
};

// Reading the shared options (verbs.h declares them).
replay::SymbolSettings symbolSettingsOf(const VerbOptions& vm);
// After a command: one line on stderr for each module whose frames the answer named only by
// module+offset, with why and what to do (once a session per module).
void noteUnnamedModules(Session& s);
replay::SortBy sortOf(const VerbOptions& vm, replay::SortBy dflt = replay::SortBy::kBytes);
size_t topOf(const VerbOptions& vm);
replay::Exclusions exclusionsOf(const VerbOptions& vm);
// ../share/heapman/default_exclusions.txt (or share/heapman/...) next to the binary, or "" (then
// the list embedded in the binary is the default: default_exclusions.h).
std::string defaultExclusionFile();
uint64_t pointOf(Session& s, const VerbOptions& vm, const char* option,
                 const char* dflt = nullptr);

// Where both points name dumped GCs (or map to them): the objects of the two dumps compared
// (new / survived / freed per type and site, retained sizes) as tables "dump-types" and
// "dump-sites", and a line in the meta; otherwise a meta line saying why not, when the log has
// dumps. cmd_diff.cpp; diff and types use it.
void addDumpDiff(Session& s, replay::Attribution& a, uint64_t from, uint64_t to,
                 replay::SortBy sort, size_t top, Report& r);

}  // namespace heapman::cli
