// The log's file descriptor, and the sink the writer writes the log through (log_fd.h).
#include "log_fd.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "heapman/logformat/private_file.h"
#include "recorder.h"

extern "C" int __close(int);  // glibc's close, exported under this name too: not our hook

namespace heapman::rec {
namespace {

std::atomic<int> gLogFd{-1};
std::atomic<int> gWriting{0};  // LogWrite objects alive (the writer thread's, one at a time)
dev_t gDev = 0;
ino_t gIno = 0;

// The lowest number the log may take: well above what programs pick by hand (shells use 3-9,
// and 10 and up for saved descriptors; bash keeps 255), below the soft limit.
int floorNumber() {
  rlimit lim{};
  long cur = getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY
                 ? static_cast<long>(lim.rlim_cur)
                 : 1024;
  if (cur > 1024) cur = 1024;
  return cur > 64 ? static_cast<int>(cur - 24) : static_cast<int>(cur / 2);
}

// A copy of `fd` on a high number (close-on-exec), or -1.
int highCopy(int fd) {
  int high = fcntl(fd, F_DUPFD_CLOEXEC, floorNumber());
  if (high < 0) high = fcntl(fd, F_DUPFD_CLOEXEC, 10);
  return high;
}

// True when `fd` is open on the log's file.
bool namesLog(int fd) {
  struct stat st{};
  return fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == gDev && st.st_ino == gIno;
}

}  // namespace

int realClose(int fd) { return __close(fd); }

bool isLogFd(int fd) {
  if (fd < 0 || fd != logFd()) return false;
  if (namesLog(fd)) return true;
  // Closed under the hooks and reused: the program's now. Forget it (the writer reopens).
  int expected = fd;
  gLogFd.compare_exchange_strong(expected, -1, std::memory_order_seq_cst);
  return false;
}

bool reopenLog(const char* path, uint64_t offset) {
  int fd = ::open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  if (!namesLog(fd)) {
    realClose(fd);
    errno = ESTALE;
    return false;
  }
  if (int high = highCopy(fd); high >= 0) {
    realClose(fd);
    fd = high;
  }
  if (lseek(fd, static_cast<off_t>(offset), SEEK_SET) != static_cast<off_t>(offset)) {
    int err = errno;
    realClose(fd);
    errno = err;
    return false;
  }
  gLogFd.store(fd, std::memory_order_seq_cst);
  return true;
}

bool openLog(char* path, size_t cap, bool exclusive) {
  int fd = -1;
  if (!exclusive) {
    fd = ::open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, log::kPrivateMode);
  } else {
    const size_t len = std::strlen(path);
    for (int k = 1; k < 10000; ++k) {
      if (k > 1) {
        int n = std::snprintf(path + len, cap - len, ".%d", k);
        if (n < 0 || static_cast<size_t>(n) >= cap - len) {
          path[len] = 0;
          errno = ENAMETOOLONG;
          return false;
        }
      }
      fd = ::open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, log::kPrivateMode);
      if (fd >= 0 || errno != EEXIST) break;
    }
  }
  if (fd < 0) return false;
  if (int high = highCopy(fd); high >= 0) {
    realClose(fd);
    fd = high;
  }
  struct stat st{};
  if (fstat(fd, &st) == 0) {
    gDev = st.st_dev;
    gIno = st.st_ino;
    // A log holds the program's memory: an existing file keeps no wider mode than a new one.
    log::keepPrivate(fd, st);
  }
  gLogFd.store(fd, std::memory_order_seq_cst);
  return true;
}

void closeLog() {
  int fd = gLogFd.exchange(-1, std::memory_order_seq_cst);
  if (fd >= 0) realClose(fd);
}

int logFd() { return gLogFd.load(std::memory_order_acquire); }

void vacate(int fd) {
  if (!isLogFd(fd)) return;  // not ours, or no longer the log's file: nothing to move
  int moved = highCopy(fd);
  if (moved < 0) return;  // no number free: LogWrite::same() stops the recording after the dup
  // A writer that read the old number before this store has marked itself first (LogWrite):
  // wait for it (bounded: a write to a stuck file must not hang the program's dup2).
  gLogFd.store(moved, std::memory_order_seq_cst);
  for (int i = 0; gWriting.load(std::memory_order_seq_cst) != 0 && i < 20000; ++i) {
    if (i < 100) {
      sched_yield();
    } else {
      timespec ts{0, 50000};
      nanosleep(&ts, nullptr);
    }
  }
}

LogWrite::LogWrite() {
  gWriting.fetch_add(1, std::memory_order_seq_cst);
  fd_ = gLogFd.load(std::memory_order_seq_cst);
}

LogWrite::~LogWrite() { gWriting.fetch_sub(1, std::memory_order_seq_cst); }

bool LogWrite::same() const { return namesLog(fd_); }

bool LogFileSink::write(const void* data, size_t n) {
  auto* p = static_cast<const uint8_t*>(data);
  for (bool reopened = false;;) {
    int err = 0;
    {
      LogWrite w;
      if (w.same()) {
        while (n > 0) {
          ssize_t k = ::write(w.fd(), p, n);
          if (k < 0 && errno == EINTR) continue;
          if (k <= 0) {
            err = k < 0 ? errno : EIO;
            break;
          }
          p += k;
          n -= static_cast<size_t>(k);
          written_ += static_cast<uint64_t>(k);
        }
        if (n == 0) return true;
        if (err != EBADF) {
          error_ = err == EIO ? "write returned 0" : std::strerror(err);
          return false;
        }
      }
    }
    // The descriptor was closed under the hooks (or names another file now): once per write.
    if (reopened || !reopenLog(g.output, written_)) {
      error_ = std::string("the program closed the log's file descriptor, and opening the log "
                           "again failed: ") +
               (reopened ? "it was closed again" : std::strerror(errno));
      return false;
    }
    reopened = true;
  }
}

}  // namespace heapman::rec
