// The log's file descriptor, kept out of the recorded program's way.
//
// A program owns its descriptor numbers: `exec 3>out.txt` in a shell, dup2(fd, 3..7), a daemon's
// close_range(3, ~0U) before exec. The log is therefore never on a low number: it is moved at
// once to a high one (F_DUPFD_CLOEXEC, just under the soft RLIMIT_NOFILE, at most ~1000), and the
// hooks of hooks/descriptor_calls.cpp keep it there:
// - dup2/dup3 onto the log's number move the log to another number first (vacate), then do what
//   the program asked;
// - close() of the log's number fails with EBADF, as it would without the recorder (the program
//   never opened it); close_range and closefrom skip it.
// The writer writes through LogWrite, which reads the current number and marks it in use, so a
// move never closes a number in the middle of a write. Before each write the descriptor is
// checked to still be the log's file (device and inode). A program that closed it with a raw
// system call (close_range or close without libc: the hooks never see it) leaves the number
// closed or, once it opens something, naming its own file: the writer then opens the log again
// by its path (reopenLog), checks that it is the same file, and goes on writing where it
// stopped. The old number is the program's, never written to or closed by the recorder; the
// hooks no longer treat it as the log's once it names another file.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "heapman/logformat/writer.h"

namespace heapman::rec {

// Creates the log at `path` (capacity `cap` bytes). Exclusive: O_EXCL, and where the name is
// taken, PATH.2, PATH.3, ... (the name used is written back into `path`); otherwise O_TRUNC.
// Then moves it to a high number and makes it the log's descriptor. False (errno set) on failure.
bool openLog(char* path, size_t cap, bool exclusive);
// Closes the log's descriptor (stopWriter, or a fork child dropping its parent's log).
void closeLog();
// The log's descriptor now, or -1.
int logFd();
// True when `fd` is the log's descriptor now and still names the log's file. When the number
// names another file (the program closed the log with a raw system call and reused it), the
// recorder forgets it (the writer reopens the log) and this is false.
bool isLogFd(int fd);
// Opens the log at `path` again after its descriptor was lost (see above) and positions it at
// `offset`, the bytes written so far. False (errno set; ESTALE: the path now names another
// file) when it cannot.
bool reopenLog(const char* path, uint64_t offset);
// Before the program's own use of number `fd` (dup2/dup3 onto it): when it is the log's, the
// log moves to another number first.
void vacate(int fd);
// The real close(), for the recorder's own descriptors and the hooks.
int realClose(int fd);

// For the writer, around each write: the log's current number, held in use.
class LogWrite {
 public:
  LogWrite();
  ~LogWrite();
  LogWrite(const LogWrite&) = delete;
  LogWrite& operator=(const LogWrite&) = delete;
  int fd() const { return fd_; }
  // False when the descriptor is no longer the file openLog opened.
  bool same() const;

 private:
  int fd_;
};


// The log file, through its protected descriptor (above): every write checks that the
// descriptor is still the log's file, so that a program that closed it behind the hooks' back (a
// raw system call) and reused the number never gets log bytes in its file; the log is then
// opened again by its path and written on where it stopped.
class LogFileSink : public log::Sink {
 public:
  bool write(const void* data, size_t n) override;
  std::string error() const override { return error_; }

 private:
  std::string error_;
  uint64_t written_ = 0;  // bytes of the log written: where a reopened descriptor goes on
};

}  // namespace heapman::rec
