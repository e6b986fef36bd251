// The recorded program's run, as heaprec follows it (heaprec.cpp): the recorder's messages, the
// signals heaprec passes on while it waits, and the logs the program's other processes wrote.
#pragma once

#include <signal.h>
#include <sys/types.h>
#include <time.h>

#include <string>
#include <vector>

namespace heaprec {

// A private FIFO for the recorder's messages (HEAPMAN_MESSAGES): heaprec prints them when the
// program has exited, so that the recorder never writes into the program's own streams.
struct MessageFifo {
  std::string dir, path;
  int readFd = -1, keepFd = -1;  // keepFd: a writer of our own, so that poll never sees a hang-up
  std::string text;

  bool open();
  void drain();
  ~MessageFifo();
};

// The logs of the program's other processes (fork children OUT.PID, programs run with
// --follow-exec OUT.PID.exec, and .2, .3 ... where a name was taken) written since `since`.
std::vector<std::string> otherLogs(const std::string& output, time_t since);

// "N events", then `whyTruncated` where the log ends early, `whenComplete` where it does not.
std::string describeLog(const std::string& path, const std::string& whyTruncated,
                        const std::string& whenComplete = "");

// The signals heaprec passes on to the program (and otherwise would die of, orphaning it).
inline constexpr int kForwarded[] = {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGALRM};

// Waits for the program, passing on the signals heaprec gets; returns its wait status.
// `server` (--serve): its output is read meanwhile, so that it never waits to write it.
class Server;
int waitForProgram(pid_t child, int sigFd, MessageFifo& fifo, Server* server = nullptr);

}  // namespace heaprec
