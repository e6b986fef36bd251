// The recording's life in this process: start-up (heaprec's environment read, the log opened), a
// fork child's own log, the log finished at exit or exec, the flush before a fatal signal ends the
// process, and the environment cleaned for the programs this one starts.
#include <dlfcn.h>
#include <link.h>
#include <linux/futex.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "../common/contract.h"
#include "log_fd.h"
#include "recorder.h"
#include "threads.h"
#include "unwind.h"

extern "C" int __libc_start_main(int (*)(int, char**, char**), int, char**, void (*)(void),
                                 void (*)(void), void (*)(void), void*);

namespace heapman::rec {

namespace {
void startClock() {
  g.tsc0 = __rdtsc();
  g.ns0 = monotonicNs();
  timespec wall;
  clock_gettime(CLOCK_REALTIME, &wall);
  g.wallNs0 = wall.tv_sec * 1000000000ll + wall.tv_nsec;
}
}  // namespace

void finishRecording() {
  if (!g.writerRunning || static_cast<int>(getpid()) != g.pid) return;  // not ours, or vfork
  if (g.finishing.exchange(true)) return;
  Guard guard;
  stopWriter();
}

namespace {
// Sleeps until the writer has finished the log (State::writerDone), at most ~3 s.
void waitForWriterDone() {
  for (int i = 0; i < 300 && !g.writerDone.load(std::memory_order_acquire); ++i) {
    timespec timeout{0, 10000000};  // 10 ms
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&g.writerDone), FUTEX_WAIT_PRIVATE, 0,
            &timeout, nullptr, 0);
  }
}

// Sends `sig` to the calling thread in 3 s (a kernel timer: system calls only), its default
// action restored and unblocked: it ends the process should what follows hang.
void armCrashWatchdog(int sig) {
  struct KernelSigaction {  // the kernel's layout (x86_64); SIG_DFL needs no restorer
    void (*handler)(int);
    unsigned long flags;
    void (*restorer)();
    uint64_t mask;
  } dfl{SIG_DFL, 0, nullptr, 0};
  if (syscall(SYS_rt_sigaction, sig, &dfl, nullptr, sizeof dfl.mask) != 0) return;
  sigevent sev{};
  sev.sigev_notify = SIGEV_THREAD_ID;
  sev.sigev_signo = sig;
  sev._sigev_un._tid = static_cast<pid_t>(syscall(SYS_gettid));
  int timer = -1;
  if (syscall(SYS_timer_create, CLOCK_MONOTONIC, &sev, &timer) != 0) return;
  itimerspec when{};
  when.it_value.tv_sec = 3;
  if (syscall(SYS_timer_settime, timer, 0, &when, nullptr) != 0) return;
  sigset_t only;
  sigemptyset(&only);
  sigaddset(&only, sig);
  pthread_sigmask(SIG_UNBLOCK, &only, nullptr);
}
}  // namespace

void flushForCrash(int sig) {
  if (!g.writerRunning || static_cast<int>(getpid()) != g.pid) return;
  Guard guard;
  // A second thread dying at once, or a thread dying while another one exits: the log is being
  // finished already; wait for it rather than end the process under the writer.
  if (g.finishing.exchange(true) || g.crashing.exchange(1)) {
    waitForWriterDone();
    return;
  }
  // The record this thread was making when the signal came (if any) will never be committed:
  // the writer must not wait for it.
  if (t_ring) t_ring->busy.store(0, std::memory_order_release);
  // Every other thread's next record now waits (begin(), waitForWriter).
  g.lagDeadline.store(0, std::memory_order_seq_cst);
  if (!g.writerThread.load(std::memory_order_acquire)) {
    armCrashWatchdog(sig);
    startWriterThread();
  }
  g.stop.store(1, std::memory_order_release);
  wakeWriter();
  waitForWriterDone();
}

void removeEnvItems(const char* name, const char* separators, char joiner,
                    bool (*drop)(const char*, size_t, const void*), const void* context) {
  const char* value = getenv(name);
  if (!value) return;
  char out[8192];
  size_t o = 0;
  for (const char* p = value; *p;) {
    while (*p && std::strchr(separators, *p)) ++p;
    const char* e = p;
    while (*e && !std::strchr(separators, *e)) ++e;
    auto len = static_cast<size_t>(e - p);
    if (len && !drop(p, len, context) && o + len + 1 < sizeof out) {
      if (o) out[o++] = joiner;
      std::memcpy(out + o, p, len);
      o += len;
    }
    p = e;
  }
  out[o] = 0;
  if (o)
    setenv(name, out, 1);
  else
    unsetenv(name);
}

void removeMonoProfileOption() {
  removeEnvItems("MONO_ENV_OPTIONS", " ", ' ', [](const char* item, size_t len, const void*) {
    static const char kOption[] = "--profile=heapman";
    constexpr size_t n = sizeof kOption - 1;
    return len >= n && std::strncmp(item, kOption, n) == 0 && (len == n || item[n] == ':');
  }, nullptr);
}

namespace {

void removeSelfFromPreload() {
  Dl_info info;
  if (!dladdr(reinterpret_cast<void*>(&removeSelfFromPreload), &info) || !info.dli_fname) return;
  const char* base = std::strrchr(info.dli_fname, '/');
  base = base ? base + 1 : info.dli_fname;
  removeEnvItems("LD_PRELOAD", ": ", ':', [](const char* item, size_t len, const void* context) {
    const char* self = static_cast<const char*>(context);
    const char* slash = static_cast<const char*>(memrchr(item, '/', len));
    const char* name = slash ? slash + 1 : item;
    size_t n = static_cast<size_t>(item + len - name);
    return n == std::strlen(self) && std::strncmp(name, self, n) == 0;
  }, base);
}

// The executable segment holding `code`: [low, high).
void textRangeOf(const void* code, uintptr_t& low, uintptr_t& high) {
  struct Query {
    uintptr_t at, low, high;
  } q{reinterpret_cast<uintptr_t>(code), 0, 0};
  dl_iterate_phdr(
      [](dl_phdr_info* pi, size_t, void* arg) -> int {
        auto* want = static_cast<Query*>(arg);
        for (int i = 0; i < pi->dlpi_phnum; ++i) {
          const auto& ph = pi->dlpi_phdr[i];
          uintptr_t lo = pi->dlpi_addr + ph.p_vaddr;
          if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X) && want->at >= lo &&
              want->at < lo + ph.p_memsz) {
            want->low = lo;
            want->high = lo + ph.p_memsz;
            return 1;
          }
        }
        return 0;
      },
      &q);
  low = q.low;
  high = q.high;
}

// Opens this process's own log, BASE.PID (a fork child) or BASE.PID.exec (a program started by
// a recorded one), never over an existing file (openLog). Says why and returns false when it
// cannot be written: the process then runs unrecorded.
bool openOwnLog(bool exec) {
  size_t len = static_cast<size_t>(std::snprintf(g.output, sizeof g.output, "%s.%d%s", g.base,
                                                 static_cast<int>(getpid()), exec ? ".exec" : ""));
  if (len + 16 >= sizeof g.output) {
    say("the log's path is too long for this process's own log: it runs unrecorded");
    return false;
  }
  if (!openLog(g.output, sizeof g.output, true)) {
    say("cannot write %s (%s): this process runs unrecorded", g.output, std::strerror(errno));
    return false;
  }
  return true;
}

// fork: the child is a new process with one thread and no writer. It records on, into a log of
// its own, BASE.PID, with a writer thread of its own. Other threads' rings belonged to the
// parent: the child drops them (their memory stays mapped and unused).
void afterForkChild() {
  if (!g.writerRunning || g.finishing.load()) {
    g.active.store(false, std::memory_order_relaxed);
    g.writerRunning = false;
    return;
  }
  Guard guard;
  g.active.store(false, std::memory_order_relaxed);
  g.writerRunning = false;
  g.root = false;
  if (g.follow == State::Follow::kWrapper) {  // only the exec chain of the first process
    closeLog();
    removeSelfFromPreload();
    removeMonoProfileOption();
    return;
  }
  g.framelessLock.store(false, std::memory_order_relaxed);  // a parent thread may have held it
  g.parentPid = g.pid;
  g.pid = static_cast<int>(getpid());
  closeLog();  // the parent's: this number stays the parent's file in the parent
  if (!openOwnLog(false)) return;
  g.rings.store(nullptr, std::memory_order_relaxed);
  g.nextThread.store(0, std::memory_order_relaxed);
  g.frameNo.store(0, std::memory_order_relaxed);
  g.seq.store(0, std::memory_order_relaxed);
  g.stop.store(0, std::memory_order_relaxed);
  g.crashing.store(0, std::memory_order_relaxed);
  g.writerDone.store(0, std::memory_order_relaxed);
  g.collecting.store(0, std::memory_order_relaxed);  // the child's own collections set it
  g.ringFull.store(0, std::memory_order_relaxed);
  g.modulesBusy.store(0, std::memory_order_relaxed);  // a parent thread may have been in dlopen
  g.lagDeadline.store(UINT64_MAX, std::memory_order_relaxed);  // the child's writer sets it
  g.fullWaits.store(0, std::memory_order_relaxed);
  g.fullWaitNs.store(0, std::memory_order_relaxed);
  g.lagWaiters.store(0, std::memory_order_relaxed);
  g.lagWaits.store(0, std::memory_order_relaxed);
  g.lagWaitNs.store(0, std::memory_order_relaxed);
  forgetThreadRing();
  startClock();
  setUpWriter();  // its thread starts lazily, as in the first process
  g.active.store(true, std::memory_order_release);
}


}  // namespace

bool startRecording() {
  Guard guard;
  const char* out = getenv(env::kOutput);
  if (!out || !*out) return false;  // loaded without heaprec: stay out of the way
  std::snprintf(g.base, sizeof g.base, "%s", out);
  if (const char* fifo = getenv(env::kMessages)) std::snprintf(g.messages, sizeof g.messages, "%s", fifo);
  if (const char* follow = getenv(env::kFollowExec))
    g.follow = std::strcmp(follow, "wrapper") == 0 ? State::Follow::kWrapper : State::Follow::kAll;
  // HEAPMAN_ROOT_PID names the process heaprec started: it writes BASE. It then claims the name
  // (sets the variable to 0), so that a program it executes in its place (same pid) or starts by
  // any means (posix_spawn, vfork, system, popen) writes a log of its own and never truncates
  // BASE. Without the variable (the module preloaded by hand) the first process is the root.
  uint64_t v = 0;
  if (const char* rootPid = getenv(env::kRootPid))
    g.root = env::parseNumber(rootPid, 0, UINT32_MAX, v) && v == static_cast<uint64_t>(getpid());
  setenv(env::kRootPid, "0", 1);
  // Values heaprec checked (contract.h); one set by hand and out of range keeps the default.
  static_assert(env::kMaxDepth == kMaxFrames);
  if (env::parseNumber(getenv(env::kDepth), 1, env::kMaxDepth, v)) g.depth = static_cast<uint32_t>(v);
  if (env::parseNumber(getenv(env::kTimeResolutionNs), 1, UINT32_MAX, v)) g.timeResolutionNs = v;
  if (env::parseNumber(getenv(env::kAllocTimeEvery), 1, env::kMaxAllocTimeEvery, v))
    g.allocTimeEveryRunning = static_cast<uint32_t>(v);
  if (env::parseNumber(getenv(env::kRingMb), 1, 4096, v)) {
    uint64_t cap = 1u << 16;
    while (cap < (v << 20) && cap < (uint64_t{1} << 32)) cap <<= 1;
    g.ringBytes = cap;
  }
  if (const char* dumps = getenv(env::kRamDumps)) {
    std::snprintf(g.ramDumpsText, sizeof g.ramDumpsText, "%s", dumps);
    if (!env::parseRamDumps(g.ramDumpsText, g.ramDumps)) {
      say("%s=%s is not a RAM dump policy: no RAM dumps", env::kRamDumps, g.ramDumpsText);
      g.ramDumpsText[0] = 0;
    }
  }
  if (g.follow == State::Follow::kNone) removeSelfFromPreload();
  // Our own frames are skipped at the leaf of stacks; libc's text is where whole chains end.
  textRangeOf(reinterpret_cast<const void*>(&textRangeOf), g.selfLow, g.selfHigh);
  textRangeOf(reinterpret_cast<const void*>(&__libc_start_main), g.libcLow, g.libcHigh);
  if (const char* unwind = getenv(env::kUnwind)) {
    if (std::strcmp(unwind, "fp") == 0) g.unwind = State::Unwind::kFramePointers;
    if (std::strcmp(unwind, "dwarf") == 0) g.unwind = State::Unwind::kDwarf;
  }
  if (g.unwind == State::Unwind::kAuto) classifyModules();
  if (g.root) {
    std::snprintf(g.output, sizeof g.output, "%s", g.base);
    if (!openLog(g.output, sizeof g.output, false)) {
      say("cannot write %s (%s): recording off, the program runs unrecorded", g.output,
          std::strerror(errno));
      return false;
    }
  } else if (!openOwnLog(true)) {
    return false;
  }
  g.pid = static_cast<int>(getpid());
  startClock();
  pthread_key_create(&g.threadKey, threadExit);
  pthread_atfork(nullptr, nullptr, afterForkChild);
  g.seq.store(0, std::memory_order_relaxed);
  return true;
}

}  // namespace heapman::rec
