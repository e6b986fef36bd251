// A file that holds the recorded program's memory (a log with RAM dumps, its index, what is drawn
// or printed from the dumps) is private, like a core file: mode 0600 at most, whatever the umask.
// One rule for the recorder, which creates logs, and for heapman, which writes from them.
#pragma once

#include <sys/stat.h>

namespace heapman::log {

// The mode such a file is created with (open's mode argument; the umask can only narrow it).
inline constexpr mode_t kPrivateMode = 0600;

// Narrows the regular file open on `fd`, whose fstat is `st`, to kPrivateMode where its mode is
// wider (a file that existed before it was opened for writing). FIFOs and devices are left alone.
// A system call or nothing: safe inside the recorder.
inline void keepPrivate(int fd, const struct stat& st) {
  if (S_ISREG(st.st_mode) && (st.st_mode & 07777 & ~kPrivateMode)) fchmod(fd, st.st_mode & kPrivateMode);
}
inline void keepPrivate(int fd) {
  struct stat st {};
  if (fstat(fd, &st) == 0) keepPrivate(fd, st);
}

}  // namespace heapman::log
