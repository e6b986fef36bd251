// heaprec run --serve: heapman serve --follow beside the program (serve.h).
#include "serve.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <chrono>
#include <cstring>
#include <vector>

#include "preflight.h"

namespace heaprec {

namespace {

// What heapman serve prints that heaprec says in its own words or that does not apply under
// heaprec: its wait for the first chunk, and (`banner`) the two lines with its URL and its
// Ctrl-C. Left out of text().
void dropBanner(std::string& text, bool banner) {
  std::vector<std::string> lines = {"heapman serve: waiting for "};
  if (banner) lines.insert(lines.end(), {"heapman serve: ", "  answers: "});
  for (const std::string& line : lines) {
    size_t at = text.find(line);
    while (at != std::string::npos && at > 0 && text[at - 1] != '\n') at = text.find(line, at + 1);
    size_t eol = at == std::string::npos ? at : text.find('\n', at);
    if (eol != std::string::npos) text.erase(at, eol + 1 - at);
  }
}

}  // namespace

std::string findHeapman() {
  std::string dir = selfDir();
  for (const std::string& c : {dir + "/heapman", dir + "/../heapman/heapman"})
    if (access(c.c_str(), X_OK) == 0) {
      char real[PATH_MAX];
      return realpath(c.c_str(), real) ? std::string(real) : c;
    }
  return {};
}

bool Server::start(const std::string& heapman, const std::string& log, unsigned port) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    why_ = std::string("pipe: ") + std::strerror(errno);
    return false;
  }
  const pid_t parent = getpid();
  pid_ = fork();
  if (pid_ < 0) {
    why_ = std::string("fork: ") + std::strerror(errno);
    close(fds[0]);
    close(fds[1]);
    return false;
  }
  if (pid_ == 0) {
    setpgid(0, 0);  // the terminal's Ctrl-C is for the program and heaprec
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(0);  // heaprec died before the line above
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    int null = open("/dev/null", O_RDONLY);
    if (null >= 0) dup2(null, 0);
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    std::string p = std::to_string(port);
    const char* argv[] = {heapman.c_str(), "serve", log.c_str(), "--follow", "--port", p.c_str(),
                          nullptr};
    execv(argv[0], const_cast<char**>(argv));
    std::fprintf(stderr, "heaprec: cannot run %s: %s\n", argv[0], std::strerror(errno));
    _exit(127);
  }
  close(fds[1]);
  outFd_ = fds[0];
  fcntl(outFd_, F_SETFL, O_NONBLOCK);
  // The URL is on the first line once it listens; its second line follows at once.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  for (;;) {
    drain();
    size_t at = text_.find("http://");
    size_t end = at == std::string::npos ? at : text_.find_first_of(" \n", at);
    if (end != std::string::npos && text_.find("Ctrl-C ends\n") != std::string::npos) {
      url_ = text_.substr(at, end - at);
      dropBanner(text_, true);
      return true;
    }
    int status;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      drain();
      why_ = text_.empty() ? "heapman serve ended before it listened" : text_;
      while (!why_.empty() && why_.back() == '\n') why_.pop_back();
      return false;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      why_ = "heapman serve printed no URL in 20 s";
      stop();
      return false;
    }
    pollfd p{outFd_, POLLIN, 0};
    poll(&p, 1, static_cast<int>(std::min<long>(left.count(), 100)));
  }
}

void Server::drain() {
  char buf[4096];
  for (ssize_t n; outFd_ >= 0 && (n = read(outFd_, buf, sizeof buf)) > 0;)
    text_.append(buf, static_cast<size_t>(n));
}

std::string Server::takeText() {
  drain();
  dropBanner(text_, false);
  std::string t;
  t.swap(text_);
  return t;
}

bool Server::running() {
  if (pid_ <= 0) return false;
  int status;
  if (waitpid(pid_, &status, WNOHANG) == pid_) pid_ = -1;
  return pid_ > 0;
}

void Server::stop() {
  if (pid_ > 0) {
    kill(pid_, SIGTERM);
    int status;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
  }
  drain();
}

Server::~Server() {
  stop();
  if (outFd_ >= 0) close(outFd_);
}

}  // namespace heaprec
