// The recorder's process-wide state (State g), and what every layer uses of it: the real
// functions behind the hooks (realNext), the writer's wake-up, the collection flag, and say().
#include "recorder.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>

#include "log_fd.h"

namespace heapman::rec {

State g;
__thread bool t_guard HEAPMAN_TLS = false;

void* realNext(const char* name) {
  Guard guard;
  return dlsym(RTLD_NEXT, name);
}

void say(const char* format, ...) {
  char buf[5000];
  int at = g.root ? std::snprintf(buf, sizeof buf, "heaprec: ")
                  : std::snprintf(buf, sizeof buf, "heaprec: [pid %d] ", static_cast<int>(getpid()));
  va_list ap;
  va_start(ap, format);
  int n = std::vsnprintf(buf + at, sizeof buf - at - 1, format, ap);
  va_end(ap);
  if (n < 0) return;
  size_t len = static_cast<size_t>(at) + std::min<size_t>(static_cast<size_t>(n), sizeof buf - at - 2);
  buf[len++] = '\n';
  if (g.messages[0]) {
    // Non-blocking: a FIFO nobody reads any more (heaprec gone) or full must not hold us up.
    int fd = ::open(g.messages, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd >= 0) {
      (void)!::write(fd, buf, len);  // up to PIPE_BUF bytes land whole
      realClose(fd);
      return;
    }
  }
  if (g.root) (void)!::write(2, buf, len);
}

void wakeWriter() {
  g.wake.fetch_add(1, std::memory_order_release);
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&g.wake), FUTEX_WAKE_PRIVATE, 1, nullptr,
          nullptr, 0);
  if (g.collecting.load(std::memory_order_acquire))  // the writer may be stepping aside
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&g.collecting), FUTEX_WAKE_PRIVATE, 1,
            nullptr, nullptr, 0);
}

void collectionStarted() { g.collecting.store(1, std::memory_order_relaxed); }

void collectionEnded() {
  g.collecting.store(0, std::memory_order_release);
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&g.collecting), FUTEX_WAKE_PRIVATE, 1, nullptr,
          nullptr, 0);
}

}  // namespace heapman::rec
