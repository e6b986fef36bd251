// Process life-cycle hooks: exec, _exit, and fatal signals.
//
// - exec* replaces the process image: the log is finished first (footer and all). A program run
//   this way is not recorded unless heaprec was given --follow-exec; then it writes BASE.PID.exec
//   (so does a program started without these hooks: posix_spawn, system, popen).
// - _exit / _Exit skip atexit and destructors: the log is finished here instead.
// - SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGSYS: the recorder's handler stays installed.
//   sigaction() and signal() for these are interposed: the program's handler is remembered and
//   called from ours, so the program behaves as it does unrecorded (Mono, for one, handles SIGSEGV itself).
//   When the program has no handler (the signal will kill it) the log is flushed first, so it
//   stays readable up to the crash, then the default action happens as it would have. Every
//   recording thread gets an alternate signal stack where it has none (installAltStack), so that
//   a stack overflow's SIGSEGV still reaches the handler.
// - The other signals whose default action ends the process (SIGTERM, SIGINT, SIGHUP, SIGQUIT,
//   SIGPIPE, SIGALRM, SIGUSR1/2, SIGXCPU, SIGPROF, real-time signals, ...): the recorder's
//   handler is installed only while the program's disposition is the default (inherited SIG_IGN
//   is left alone). It flushes the log, restores the default and raises the signal again, so the
//   process ends as it would have. A handler or SIG_IGN of the program's own is installed as the
//   program gave it (flags and mask included) and runs untouched; sigaction() reports the
//   program's own view throughout.
// - unshare and setns of what needs a single-threaded process: the writer thread ends first.
// vfork children share the parent's memory: they are recognized by their pid and left alone.
#include <alloca.h>
#include <sched.h>
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "../core/recorder.h"

extern "C" {
void* __libc_malloc(size_t);
void __libc_free(void*);
}

namespace heapman::rec {
namespace {

using SigactionFn = int (*)(int, const struct sigaction*, struct sigaction*);

constexpr int kFatal[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGSYS};

SigactionFn realSigaction() {
  static SigactionFn fn = realNextAs<SigactionFn>("sigaction");
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
// Terminating signals tracked (gProgram holds the program's view): ours is installed while that
// view is SIG_DFL.
bool gTracked[NSIG];

// Signals whose default action ends the process, but for the crash signals (kFatal) and
// SIGKILL/SIGSTOP. SIGTRAP is a debugger's. Real-time signals are added at run time
// (SIGRTMIN is not a constant: glibc keeps the first ones for itself).
constexpr int kTerminating[] = {SIGHUP,  SIGINT,    SIGQUIT,  SIGUSR1, SIGUSR2, SIGPIPE,
                                SIGALRM, SIGTERM,   SIGSTKFLT, SIGXCPU, SIGXFSZ, SIGVTALRM,
                                SIGPROF, SIGIO,     SIGPWR};

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
  flushForCrash(sig);
  struct sigaction dfl{};
  dfl.sa_handler = SIG_DFL;
  realSigaction()(sig, &dfl, nullptr);
  gInstalled[sig] = false;
  errno = saved;
  // A fault re-executes the faulting instruction on return; a sent signal (kill, raise, abort)
  // must be raised again.
  if (info->si_code <= 0 || sig == SIGABRT) raise(sig);
}

// A terminating signal whose disposition is the default: write out what was recorded, then die
// of it as the program would have.
void onTerminating(int sig, siginfo_t*, void*) {
  int saved = errno;
  flushForCrash(sig);
  struct sigaction dfl{};
  dfl.sa_handler = SIG_DFL;
  realSigaction()(sig, &dfl, nullptr);
  errno = saved;
  raise(sig);  // blocked until this handler returns: then the default action ends the process
}

struct sigaction terminatingAction() {
  struct sigaction ours{};
  ours.sa_sigaction = onTerminating;
  ours.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
  sigemptyset(&ours.sa_mask);
  return ours;
}

void trackTerminating(int sig) {
  struct sigaction cur{};
  if (realSigaction()(sig, nullptr, &cur) != 0) return;
  gProgram[sig] = cur;
  gTracked[sig] = true;
  if (cur.sa_handler != SIG_DFL) return;  // SIG_IGN inherited from the parent: left alone
  struct sigaction ours = terminatingAction();
  realSigaction()(sig, &ours, nullptr);
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
// BASE.PID.exec (it is not the process heaprec started any more: State::root).
void beforeExec() {
  if (!g.writerRunning || static_cast<int>(getpid()) != g.pid) return;
  finishRecording();
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
  for (int sig : kTerminating) trackTerminating(sig);
  for (int sig = SIGRTMIN; sig <= SIGRTMAX; ++sig) trackTerminating(sig);
  installAltStack();
}

}  // namespace heapman::rec

using namespace heapman::rec;

HEAPMAN_EXPORT int sigaction(int sig, const struct sigaction* act, struct sigaction* old) {
  SigactionFn real = realSigaction();
  if (!real) {
    errno = ENOSYS;
    return -1;
  }
  if (sig > 0 && sig < NSIG && gTracked[sig]) {
    // The program's view is kept; ours is in place exactly while that view is the default.
    struct sigaction prev = gProgram[sig];
    if (act) {
      struct sigaction ours = terminatingAction();
      if (real(sig, act->sa_handler == SIG_DFL ? &ours : act, nullptr) != 0) return -1;
      gProgram[sig] = *act;
    }
    if (old) *old = prev;
    return 0;
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

// Threads: each registers with the recorder as it starts (its ThreadStart record, stack bounds
// and alternate signal stack), so that a thread that never allocates is logged too, and stops
// with a ThreadStop (the ring's key destructor).
namespace {
struct ThreadEntry {
  void* (*fn)(void*);
  void* arg;
};

void* startThread(void* p) {
  ThreadEntry start = *static_cast<ThreadEntry*>(p);
  __libc_free(p);
  if (!t_guard && g.active.load(std::memory_order_acquire)) threadRing();
  return start.fn(start.arg);  // a sibling call at -O2: this frame is not in the thread's stacks
}
}  // namespace

HEAPMAN_EXPORT int pthread_create(pthread_t* thread, const pthread_attr_t* attr,
                                  void* (*fn)(void*), void* arg) {
  using CreateFn = int (*)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);
  static auto real = realNextAs<CreateFn>("pthread_create");
  if (!real) return EAGAIN;
  if (t_guard || !g.active.load(std::memory_order_relaxed)) return real(thread, attr, fn, arg);
  auto* start = static_cast<ThreadEntry*>(__libc_malloc(sizeof(ThreadEntry)));  // unrecorded
  if (!start) return real(thread, attr, fn, arg);
  *start = {fn, arg};
  int rc = real(thread, attr, startThread, start);
  if (rc != 0) __libc_free(start);
  return rc;
}

// Calls that need the process single-threaded (the kernel refuses them with EINVAL otherwise):
// unshare of a user namespace (which implies CLONE_THREAD), of CLONE_THREAD, CLONE_SIGHAND or
// CLONE_VM; setns into a user or mount namespace (a mount namespace wants the file-system
// context unshared, which threads share), or with nstype 0 (any type). The writer thread, if it
// runs, ends first (callSingleThreaded); a later one starts lazily.
HEAPMAN_EXPORT int unshare(int flags) {
  static auto real = realNextAs<int (*)(int)>("unshare");
  if (!real) {
    errno = ENOSYS;
    return -1;
  }
  if (!t_guard && (flags & (CLONE_NEWUSER | CLONE_THREAD | CLONE_SIGHAND | CLONE_VM)))
    return callSingleThreaded([](int f, int) { return real(f); }, flags, 0);
  return real(flags);
}

HEAPMAN_EXPORT int setns(int fd, int nstype) {
  static auto real = realNextAs<int (*)(int, int)>("setns");
  if (!real) {
    errno = ENOSYS;
    return -1;
  }
  if (!t_guard && (nstype == 0 || (nstype & (CLONE_NEWUSER | CLONE_NEWNS))))
    return callSingleThreaded(real, fd, nstype);
  return real(fd, nstype);
}

HEAPMAN_EXPORT void _exit(int status) {
  finishRecording();
  static auto real = realNextAs<void (*)(int)>("_exit");
  real(status);
  __builtin_unreachable();
}

HEAPMAN_EXPORT void _Exit(int status) { _exit(status); }

HEAPMAN_EXPORT int execve(const char* path, char* const argv[], char* const envp[]) {
  beforeExec();
  static auto real = realNextAs<int (*)(const char*, char* const*, char* const*)>("execve");
  return real(path, argv, envp);
}

HEAPMAN_EXPORT int execv(const char* path, char* const argv[]) {
  beforeExec();
  static auto real = realNextAs<int (*)(const char*, char* const*)>("execv");
  return real(path, argv);
}

HEAPMAN_EXPORT int execvp(const char* file, char* const argv[]) {
  beforeExec();
  static auto real = realNextAs<int (*)(const char*, char* const*)>("execvp");
  return real(file, argv);
}

HEAPMAN_EXPORT int execvpe(const char* file, char* const argv[], char* const envp[]) {
  beforeExec();
  static auto real = realNextAs<int (*)(const char*, char* const*, char* const*)>("execvpe");
  return real(file, argv, envp);
}

HEAPMAN_EXPORT int fexecve(int fd, char* const argv[], char* const envp[]) {
  beforeExec();
  static auto real = realNextAs<int (*)(int, char* const*, char* const*)>("fexecve");
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
