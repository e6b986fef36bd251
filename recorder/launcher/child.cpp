// The recorded program's run, as heaprec follows it (child.h).
#include "child.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>

#include "heapman/logformat/reader.h"
#include "heapman/logformat/summary.h"
#include "serve.h"

namespace heaprec {

bool MessageFifo::open() {
  const char* tmp = getenv("TMPDIR");
  std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/heaprec.XXXXXX";
  if (!mkdtemp(templ.data())) return false;
  dir = templ;
  path = dir + "/messages";
  if (mkfifo(path.c_str(), 0600) != 0) return false;
  readFd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  keepFd = ::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
  return readFd >= 0 && keepFd >= 0;
}

void MessageFifo::drain() {
  char buf[4096];
  for (ssize_t n; readFd >= 0 && (n = read(readFd, buf, sizeof buf)) > 0;)
    text.append(buf, static_cast<size_t>(n));
}

MessageFifo::~MessageFifo() {
  if (readFd >= 0) close(readFd);
  if (keepFd >= 0) close(keepFd);
  if (!path.empty()) unlink(path.c_str());
  if (!dir.empty()) rmdir(dir.c_str());
}

std::vector<std::string> otherLogs(const std::string& output, time_t since) {
  std::vector<std::string> found;
  size_t slash = output.rfind('/');
  std::string dir = output.substr(0, slash), prefix = output.substr(slash + 1) + ".";
  DIR* d = opendir(dir.empty() ? "/" : dir.c_str());
  if (!d) return found;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0 ||
        !std::isdigit(static_cast<unsigned char>(name[prefix.size()])))
      continue;
    std::string tail = name.substr(prefix.size());
    if (tail.find_first_not_of("0123456789.exec") != std::string::npos) continue;
    struct stat st;
    std::string path = dir + "/" + name;
    if (stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_mtime >= since)
      found.push_back(path);
  }
  closedir(d);
  std::sort(found.begin(), found.end());
  return found;
}

std::string describeLog(const std::string& path, const std::string& whyTruncated,
                        const std::string& whenComplete) {
  heapman::log::LogReader reader = heapman::log::LogReader::open(path);
  uint64_t events = reader.index() ? reader.index()->eventCount
                                   : heapman::log::summarize(reader).events;
  return std::to_string(events) + " events" + (reader.end().complete ? whenComplete : whyTruncated);
}

// Waits for the program, passing on the signals heaprec gets (kill heaprec: the program gets
// the signal and heaprec waits for it to end), collecting the recorder's messages meanwhile.
// A signal the terminal sent (Ctrl-C) reached the program's process group already, and one that
// came from inside that group was meant for it: those are not sent twice.
int waitForProgram(pid_t child, int sigFd, MessageFifo& fifo, Server* server) {
  int status = 0;
  const int serverFd = server ? server->pipe() : -1;
  for (;;) {
    pid_t got = waitpid(child, &status, WNOHANG);
    if (got == child) break;
    if (got < 0 && errno != EINTR) break;
    pollfd fds[3] = {{sigFd, POLLIN, 0}, {fifo.readFd, POLLIN, 0}, {serverFd, POLLIN, 0}};
    if (poll(fds, serverFd >= 0 ? 3 : 2, 1000) <= 0) continue;
    if (fds[1].revents & POLLIN) fifo.drain();
    if (server && (fds[2].revents & POLLIN)) server->drain();
    if (!(fds[0].revents & POLLIN)) continue;
    signalfd_siginfo si;
    while (read(sigFd, &si, sizeof si) == static_cast<ssize_t>(sizeof si)) {
      int sig = static_cast<int>(si.ssi_signo);
      if (sig == SIGCHLD) continue;
      bool fromUser = si.ssi_code == SI_USER || si.ssi_code == SI_QUEUE || si.ssi_code == SI_TKILL;
      if (!fromUser) continue;
      auto sender = static_cast<pid_t>(si.ssi_pid);
      if (sender == child) continue;  // the program signalling its parent: not for itself
      kill(child, sig);
    }
  }
  fifo.drain();
  return status;
}

}  // namespace heaprec
