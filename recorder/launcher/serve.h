// heaprec run --serve (heaprec.cpp): `heapman serve --follow LOG` beside the recorded program, so
// that a browser shows the log while it is written.
//
// The server is heapman's own (found next to heaprec, or in the build tree's heapman/), run as a
// child of heaprec in a process group of its own (Ctrl-C in the terminal reaches the program and
// heaprec, not the server: heaprec decides when it ends), with the parent-death signal set (a
// killed heaprec leaves no server behind). Not niced: at nice 10 on 2 busy cores (the game on
// one, other work on the other) the server got so little CPU that the page showed no new
// collection during a 6 s game, and its first answer took 5.6 s; at nice 0 it showed one every
// 0.5-1 s (bench/run_live_cost.sh measures what that costs the program). It reads the log the recorder writes and nothing else:
// the recorder's writer stays the only writer, and it closes a chunk every 20 ms anyway
// (recorder/core/writer.h kFlushIntervalNs), well within the 250 ms a follower needs.
#pragma once

#include <sys/types.h>

#include <string>

namespace heaprec {

// heapman next to heaprec (installed) or in ../heapman/ (the build tree); empty when neither.
std::string findHeapman();

class Server {
 public:
  // Starts `heapman serve LOG --follow --port PORT` and waits (up to 20 s) for the URL it prints.
  // The server's other output (its errors) is kept in text() for heaprec to print later, never
  // on the program's streams. False when it could not start or listen: why() says so.
  bool start(const std::string& heapman, const std::string& log, unsigned port);
  const std::string& url() const { return url_; }
  const std::string& why() const { return why_; }
  // Its output, read so far (pipe(): the descriptor to poll for more).
  int pipe() const { return outFd_; }
  void drain();
  std::string takeText();
  // Whether it still runs (reaps it when it has ended).
  bool running();
  // SIGTERM, then waits for it (the server ends within its keep-alive, 2 s).
  void stop();
  ~Server();

 private:
  pid_t pid_ = -1;
  int outFd_ = -1;
  std::string url_, why_, text_;
};

}  // namespace heaprec
