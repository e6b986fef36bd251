// Process life-cycle hooks: exec, _exit, and fatal signals.
//
// - exec* replaces the process image: the log is finished first (footer and all). A program run
//   this way is not recorded unless heaprec was given --follow-exec; then it writes FILE.PID.exec.
// - _exit / _Exit skip atexit and destructors: the log is finished here instead.
// - SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGSYS: the recorder's handler stays installed.
//   sigaction() and signal() for these are interposed: the program's handler is remembered and
//   called from ours, so the program behaves as before (Mono, for one, handles SIGSEGV itself).
//   When the program has no handler (the signal will kill it) the log is flushed first, so it
//   stays readable up to the crash, then the default action happens as it would have.
// vfork children share the parent's memory: they are recognized by their pid and left alone.
#include <alloca.h>
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "../core/recorder.h"

namespace heapman::rec {
namespace {

using SigactionFn = int (*)(int, const struct sigaction*, struct sigaction*);

constexpr int kFatal[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGSYS};

SigactionFn realSigaction() {
  static SigactionFn fn = reinterpret_cast<SigactionFn>(dlsym(RTLD_NEXT, "sigaction"));
  return fn;
}

bool isFatal(int sig) {
  for (int s : kFatal)
    if (s == sig) return true;
  return false;
}

// The program's wishes for the fatal signals; valid where installed[sig].
struct sigaction gProgram[NSIG];
bool gInstalled[NSIG];

void onFatal(int sig, siginfo_t* info, void* context) {
  const struct sigaction& prog = gProgram[sig];
  if (prog.sa_handler == SIG_IGN) return;
  if (prog.sa_handler != SIG_DFL) {
    if (prog.sa_flags & SA_RESETHAND) {
      gProgram[sig].sa_handler = SIG_DFL;
      gProgram[sig].sa_flags &= ~SA_SIGINFO;
    }
    if (prog.sa_flags & SA_SIGINFO)
      prog.sa_sigaction(sig, info, context);
    else
      prog.sa_handler(sig);
    return;
  }
  // The default action kills the process: write out what was recorded, then let it happen.
  int saved = errno;
  flushForCrash();
  struct sigaction dfl{};
  dfl.sa_handler = SIG_DFL;
  realSigaction()(sig, &dfl, nullptr);
  gInstalled[sig] = false;
  errno = saved;
  // A fault re-executes the faulting instruction on return; a sent signal (kill, raise, abort)
  // must be raised again.
  if (info->si_code <= 0 || sig == SIGABRT) raise(sig);
}

// Counts the arguments of an execl-family call (the first one included, the null excluded).
size_t countArgs(va_list ap) {
  size_t n = 1;
  while (va_arg(ap, char*)) ++n;
  return n;
}

// Fills argv (n + 1 slots) from the variadic arguments; returns the envp that follows, if asked.
char** fillArgs(char** argv, size_t n, const char* first, va_list ap, bool withEnv) {
  argv[0] = const_cast<char*>(first);
  for (size_t i = 1; i < n; ++i) argv[i] = va_arg(ap, char*);
  argv[n] = nullptr;
  (void)va_arg(ap, char*);  // the terminating null
  return withEnv ? va_arg(ap, char**) : nullptr;
}

// Before an exec: finish this process's log. With --follow-exec the new program records into
// FILE.PID.exec (same pid, so a name of its own).
void beforeExec() {
  if (!g.writerRunning || static_cast<int>(getpid()) != g.pid) return;
  finishRecording();
  if (getenv("HEAPMAN_FOLLOW_EXEC")) {
    char next[sizeof g.output + 32];
    std::snprintf(next, sizeof next, "%s.%d.exec", g.output, g.pid);
    setenv("HEAPMAN_OUTPUT", next, 1);
  }
}

template <class Fn>
Fn next(const char* name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
}

}  // namespace

void installCrashHandlers() {
  SigactionFn real = realSigaction();
  if (!real) return;
  for (int sig : kFatal) {
    struct sigaction ours{};
    ours.sa_sigaction = onFatal;
    ours.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
    sigemptyset(&ours.sa_mask);
    if (real(sig, &ours, &gProgram[sig]) == 0) gInstalled[sig] = true;
  }
}

}  // namespace heapman::rec

using namespace heapman::rec;

HEAPMAN_EXPORT int sigaction(int sig, const struct sigaction* act, struct sigaction* old) {
  SigactionFn real = realSigaction();
  if (!real) {
    errno = ENOSYS;
    return -1;
  }
  if (sig <= 0 || sig >= NSIG || !isFatal(sig) || !gInstalled[sig]) return real(sig, act, old);
  // Ours stays installed; the program's wish is kept and honoured by onFatal.
  if (old) *old = gProgram[sig];
  if (act) gProgram[sig] = *act;
  return 0;
}

HEAPMAN_EXPORT sighandler_t signal(int sig, sighandler_t handler) {
  struct sigaction act{}, old{};
  act.sa_handler = handler;
  act.sa_flags = SA_RESTART;
  sigemptyset(&act.sa_mask);
  if (sigaction(sig, &act, &old) != 0) return SIG_ERR;
  return old.sa_handler;
}

HEAPMAN_EXPORT void _exit(int status) {
  finishRecording();
  static auto real = next<void (*)(int)>("_exit");
  real(status);
  __builtin_unreachable();
}

HEAPMAN_EXPORT void _Exit(int status) { _exit(status); }

HEAPMAN_EXPORT int execve(const char* path, char* const argv[], char* const envp[]) {
  beforeExec();
  static auto real = next<int (*)(const char*, char* const*, char* const*)>("execve");
  return real(path, argv, envp);
}

HEAPMAN_EXPORT int execv(const char* path, char* const argv[]) {
  beforeExec();
  static auto real = next<int (*)(const char*, char* const*)>("execv");
  return real(path, argv);
}

HEAPMAN_EXPORT int execvp(const char* file, char* const argv[]) {
  beforeExec();
  static auto real = next<int (*)(const char*, char* const*)>("execvp");
  return real(file, argv);
}

HEAPMAN_EXPORT int execvpe(const char* file, char* const argv[], char* const envp[]) {
  beforeExec();
  static auto real = next<int (*)(const char*, char* const*, char* const*)>("execvpe");
  return real(file, argv, envp);
}

HEAPMAN_EXPORT int fexecve(int fd, char* const argv[], char* const envp[]) {
  beforeExec();
  static auto real = next<int (*)(int, char* const*, char* const*)>("fexecve");
  return real(fd, argv, envp);
}

// The execl family builds argv on the stack (alloca): no heap use, so vfork children are safe.
#define HEAPMAN_EXECL(call, withEnv)                                                      \
  va_list ap;                                                                             \
  va_start(ap, arg);                                                                      \
  size_t n = countArgs(ap);                                                               \
  va_end(ap);                                                                             \
  auto** argv = static_cast<char**>(alloca((n + 1) * sizeof(char*)));                     \
  va_start(ap, arg);                                                                      \
  char** envp = fillArgs(argv, n, arg, ap, withEnv);                                      \
  va_end(ap);                                                                             \
  (void)envp;                                                                             \
  return call

HEAPMAN_EXPORT int execl(const char* path, const char* arg, ...) {
  HEAPMAN_EXECL(execv(path, argv), false);
}

HEAPMAN_EXPORT int execlp(const char* file, const char* arg, ...) {
  HEAPMAN_EXECL(execvp(file, argv), false);
}

HEAPMAN_EXPORT int execle(const char* path, const char* arg, ...) {
  HEAPMAN_EXECL(execve(path, argv, envp), true);
}
#undef HEAPMAN_EXECL
