// heapman serve's answers, apart from HTTP: a request (a route and its parameters) becomes the
// command line of a verb, which runs on a session of this worker thread with its output captured
// (output.h's Console). The answer is the verb's own bytes (its --json, folded stacks, or the file
// it writes: PNG, DOT, GEXF), so that the page and `heapman VERB LOG ...` can never disagree; each
// answer carries that command.
//
// Routes: /api/VERB for the read-only verbs (info gcs events blame diff churn allocs types stacks
// objects object refs retained paths leaks), /api/map (PNG), /api/paths.dot, /api/paths.gexf,
// /api/graph.dot, /api/graph.gexf. Parameters are the verb's options without dashes (at=gc:40,
// top=20, exclude-add=REGEX repeated); a flag is a parameter without a value (stacks=). Refused
// (400): options that name a file or directory (the server never reads or writes a path the
// client gives), the log's options, --csv/--json (the server picks), --top above kMaxTop. A point
// the log does not have: 404 with the log's range.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>

#include "heapman/replay/frames.h"

namespace heapman::log {
class LogReader;
}

namespace heapman::cli::serve {

constexpr size_t kMaxTop = 1000;            // rows an answer may ask for
constexpr size_t kDefaultTop = 200;         // when a request gives no top
constexpr size_t kMaxParameterBytes = 4096;  // one parameter's value

struct Answer {
  int status = 200;
  std::string contentType = "application/json";
  std::string body;
  std::string command;  // the CLI command giving the same answer ("" for errors before one)
};

using Params = std::multimap<std::string, std::string>;

// What a followed log's file looks like: a change of any of them is news.
struct FileState {
  uint64_t bytes = 0, inode = 0;
  int64_t mtimeNs = 0;
  bool operator==(const FileState&) const = default;
};

class Api {
 public:
  // `log` as the user named it (the command lines show it so); files the verbs write go to
  // `scratch` (a private directory) and are removed after the answer is read. A query running
  // longer than `timeLimit` is cancelled (503).
  // `follow`: the log is being written (heapman serve --follow): when it grows, the next
  // request on each worker takes in what was appended (see follow()).
  Api(std::string log, replay::SymbolSettings symbols, std::filesystem::path scratch,
      std::chrono::milliseconds timeLimit, bool follow = false);
  ~Api();
  Api(const Api&) = delete;
  Api& operator=(const Api&) = delete;

  // Opens the log once (building its index when needed), on the calling thread; `cancel` stops
  // it (replay::Interrupted). Throws. Following, it waits until the log has a readable chunk.
  void warmUp(const std::atomic<bool>* cancel);
  // Following: checks every 250 ms whether the log grew by a whole chunk (or, complete, was
  // recorded again); when it did, takes in the new chunks' dumps (the index file, once the log
  // is complete, is written here and nowhere else) and moves the generation on, so that each
  // worker takes in what was appended (Replay::grow) before its next answer, or opens a log
  // recorded again anew. Returns when `stop` reads true.
  void follow(const std::atomic<bool>& stop);
  // {"follow":..., "generation":N, "log_bytes":N, "complete":..., "dumped_gcs":[N,...]}: what
  // the page polls; dumped_gcs are the collections with a RAM dump (where objects and paths
  // answer), as heapman objects' message lists them.
  std::string status() const;
  // Answers one request on the calling thread's session (each worker thread keeps its own: a
  // replay is used by one thread at a time). `request`: the client's name for it ("" none), which
  // cancel() takes.
  Answer answer(const std::string& route, const Params& params, const std::string& request);
  // Cancels the running request of that name (the browser left or asked another question):
  // its answer is 503. False when none runs.
  bool cancel(const std::string& request);
  const std::string& log() const { return log_; }

 private:
  // Opens the log on the calling thread (a complete one with its index file, written once when
  // missing; one being written as chunks only, follower_, grown by follow()) and takes in what
  // status() says. Throws.
  void openOnce(const std::atomic<bool>* cancel);
  // status()'s dumped collections (from the dump chunks not seen yet) and completeness.
  void takeIn(const log::LogReader& reader);
  struct Running {
    std::atomic<bool>* flag;
    std::chrono::steady_clock::time_point deadline;
    std::string request;
  };
  void watch();

  std::string log_;
  replay::SymbolSettings symbols_;  // the server's --no-symbols, --debug-dir, --path-map
  std::filesystem::path scratch_;
  std::chrono::milliseconds timeLimit_;
  bool follow_;
  std::atomic<uint64_t> generation_{0};  // moves on when the followed log grew
  std::atomic<uint64_t> logBytes_{0};
  FileState seen_;  // the followed log when last opened (warmUp, then the follow thread only)
  // The follow thread's, while the log is being written, and what it has taken in.
  std::unique_ptr<log::LogReader> follower_;
  size_t dumpChunksSeen_ = 0;
  std::set<uint32_t> dumped_;
  std::atomic<bool> complete_{false};  // the followed log has its footer
  std::atomic<uint64_t> serial_{0};
  mutable std::mutex m_;
  std::string dumpedGcs_ = "[]";  // status()'s dumped_gcs, under m_
  std::condition_variable wake_;
  bool stopping_ = false;
  std::unordered_map<uint64_t, Running> running_;  // by serial
  std::thread watchdog_;
};

// 'word' quoted for a POSIX shell when it needs it.
std::string shellWord(const std::string& word);

}  // namespace heapman::cli::serve
