// The writer thread's life (recorder.h, "the writer thread starts lazily"): set up without a
// thread, started when due (needWriter), paused around unshare/setns, stopped to finish the log.
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>
#include <x86intrin.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "log_fd.h"
#include "modules.h"
#include "recorder.h"
#include "writer.h"

namespace heapman::rec {

namespace {

// The writer thread's state across its lives (recorder.h, "the writer thread starts lazily"):
// the Writer, made by the first thread, kept while a pause has none; the modules scanned at
// set-up for it; and a lock under which a thread is started, paused or stopped.
writer::Writer* gWriter = nullptr;
ModuleMap* gStartModules = nullptr;
std::atomic<bool> gWriterLock{false};
// libc's pthread_create (not the hook), looked up at set-up: a fatal signal's handler may be the
// one to start the thread, and dlsym allocates.
using CreateFn = int (*)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);
CreateFn gCreate = nullptr;

void* writerMain(void*) {
  t_guard = true;
  if (!gWriter) {
    gWriter = new writer::Writer;
    std::unique_ptr<ModuleMap> modules(gStartModules);
    gStartModules = nullptr;
    gWriter->open(modules ? std::move(*modules) : ModuleMap{});
  }
  gWriter->run();
  return nullptr;
}

void lockWriter() {
  while (gWriterLock.exchange(true, std::memory_order_acquire)) sched_yield();
}
void unlockWriter() { gWriterLock.store(false, std::memory_order_release); }

// With the lock held: a writer thread, with every signal blocked, unless one runs.
void startLocked() {
  if (g.writerThread.load(std::memory_order_relaxed)) return;
  Guard guard;
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);  // the new thread inherits: every signal blocked
  int rc = gCreate ? gCreate(&g.writer, nullptr, writerMain, nullptr) : EAGAIN;
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (rc == 0) {
    g.allocTimeEvery = g.allocTimeEveryRunning;  // the writer moves the time epoch from now on
    g.writerThread.store(1, std::memory_order_release);
  } else {
    g.active.store(false, std::memory_order_release);
    say("cannot start the writer thread (%s): recording stopped", std::strerror(rc));
  }
}

}  // namespace

bool setUpWriter() {
  // The modules loaded now, before the program goes on: scanned here, not by the writer thread,
  // which may first run after the program has loaded more (their ModuleLoad records would then
  // come before every event instead of where the dlopen was).
  Guard guard;
  gWriter = nullptr;  // a fork child's parent's, if any: the child writes a log of its own
  delete gStartModules;
  gStartModules = new ModuleMap(scanModules());
  if (!gCreate) gCreate = realNextAs<CreateFn>("pthread_create");
  gWriterLock.store(false, std::memory_order_relaxed);
  g.writerThread.store(0, std::memory_order_relaxed);
  g.pause.store(0, std::memory_order_relaxed);
  g.allocTimeEvery = 1;  // until the writer thread runs (State::allocTimeEveryRunning)
  g.writerRunning = true;
  armLazyStart();
  return true;
}

void startWriterThread() {
  if (g.writerThread.load(std::memory_order_acquire) || g.stop.load(std::memory_order_relaxed))
    return;
  if (static_cast<int>(getpid()) != g.pid) return;  // a vfork child: the parent's memory
  // Another thread starting or stopping it: this one goes on (its records wait in its ring).
  if (gWriterLock.exchange(true, std::memory_order_acquire)) return;
  if (!g.stop.load(std::memory_order_relaxed)) startLocked();
  unlockWriter();
}

bool pauseWriter() {
  if (!g.writerRunning || static_cast<int>(getpid()) != g.pid) return false;
  Guard guard;
  lockWriter();
  bool ended = false;
  if (g.writerThread.load(std::memory_order_acquire) && !g.stop.load(std::memory_order_acquire)) {
    ended = true;
    g.pause.store(1, std::memory_order_release);
    wakeWriter();
    pthread_join(g.writer, nullptr);
    g.writerThread.store(0, std::memory_order_release);
    g.pause.store(0, std::memory_order_release);
    g.allocTimeEvery = 1;
    armLazyStart();
  }
  unlockWriter();
  return ended;
}

int callSingleThreaded(int (*call)(int, int), int a, int b) {
  bool ended = pauseWriter();
  int rc = call(a, b);
  for (int i = 0; ended && rc != 0 && errno == EINVAL && i < 500; ++i) {
    timespec ts{0, 200'000};
    nanosleep(&ts, nullptr);
    rc = call(a, b);
  }
  return rc;
}

void stopWriter() {
  lockWriter();
  startLocked();  // a program that ended before the writer thread was due
  g.active.store(false, std::memory_order_seq_cst);
  // Let events already begun commit (bounded: a thread stuck in a hook must not hang exit).
  for (int i = 0; i < 1000; ++i) {
    bool busy = false;
    for (Ring* r = g.rings.load(std::memory_order_acquire); r; r = r->next)
      busy |= r->busy.load(std::memory_order_seq_cst) != 0;
    if (!busy) break;
    timespec ts{0, 100000};
    nanosleep(&ts, nullptr);
  }
  g.stop.store(1, std::memory_order_release);
  wakeWriter();
  if (g.writerThread.load(std::memory_order_acquire)) pthread_join(g.writer, nullptr);
  g.writerThread.store(0, std::memory_order_release);
  g.writerRunning = false;
  unlockWriter();
  closeLog();
}


void armLazyStart() {
  g.lazySinceNs.store(monotonicNs(), std::memory_order_relaxed);
  // A first look soon (about a millisecond): by then the time stamp counter's rate is known.
  g.lagDeadline.store(__rdtsc() + 2'000'000, std::memory_order_release);
}

void needWriter(bool now) {
  if (g.writerThread.load(std::memory_order_acquire) || g.stop.load(std::memory_order_relaxed) ||
      g.collecting.load(std::memory_order_relaxed))
    return;
  const uint64_t ns = monotonicNs(), since = g.lazySinceNs.load(std::memory_order_relaxed);
  if (now || ns - since >= kLazyStartNs) return startWriterThread();
  // Not due yet: look again when it is, by the counter's rate since start-up.
  const uint64_t tsc = __rdtsc();
  const double ticksPerNs =
      ns > g.ns0 + 100000 ? static_cast<double>(tsc - g.tsc0) / static_cast<double>(ns - g.ns0) : 0;
  const uint64_t left = kLazyStartNs - (ns - since);
  g.lagDeadline.store(ticksPerNs > 0 ? tsc + static_cast<uint64_t>(static_cast<double>(left) * ticksPerNs)
                                     : tsc + 2'000'000,
                      std::memory_order_release);
}

}  // namespace heapman::rec
