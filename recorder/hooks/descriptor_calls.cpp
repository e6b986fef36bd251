// The program's own descriptor calls, interposed so that they never reach the log's descriptor
// (core/log_fd.h says why and how).
#include <errno.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../core/log_fd.h"
#include "../core/recorder.h"

extern "C" int __dup2(int, int);  // glibc's dup2 under its other exported name: not this hook

namespace heapman::rec {
namespace {

int closeRange(unsigned first, unsigned last, int flags) {
  return static_cast<int>(syscall(SYS_close_range, first, last, flags));
}

// close_range over [first, last] but the log's number. A move of the log (vacate, from another
// thread's dup2) only goes to a free number, which this range does not need closed.
int closeAround(unsigned first, unsigned last, int flags) {
  int log = logFd();
  if (log >= 0 && !isLogFd(log)) log = -1;  // the program's file now: closed like the rest
  if (log < 0 || static_cast<unsigned>(log) < first || static_cast<unsigned>(log) > last)
    return closeRange(first, last, flags);
  auto at = static_cast<unsigned>(log);
  if (at > first && closeRange(first, at - 1, flags) != 0) return -1;
  if (at < last) return closeRange(at + 1, last, flags);
  return 0;
}

}  // namespace
}  // namespace heapman::rec

using namespace heapman::rec;

HEAPMAN_EXPORT int close(int fd) {
  if (isLogFd(fd)) {  // not the program's: without the recorder this number would not be open
    errno = EBADF;
    return -1;
  }
  return realClose(fd);
}

HEAPMAN_EXPORT int close_range(unsigned first, unsigned last, int flags) {
  if (first > last) {
    errno = EINVAL;
    return -1;
  }
  return closeAround(first, last, flags);
}

HEAPMAN_EXPORT void closefrom(int low) {
  if (low < 0) low = 0;
  closeAround(static_cast<unsigned>(low), ~0U, 0);
}

HEAPMAN_EXPORT int dup2(int from, int to) {
  if (from != to) vacate(to);
  return __dup2(from, to);
}

HEAPMAN_EXPORT int dup3(int from, int to, int flags) {
  if (from != to) vacate(to);
  return static_cast<int>(syscall(SYS_dup3, from, to, flags));
}
