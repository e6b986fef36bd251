// Recorder state, per-thread rings, the two-phase emit, stack capture, start-up and shut-down,
// and the custom-event entry points of heapman.h.
#include "recorder.h"

#include <dlfcn.h>
#include <link.h>
#include <fcntl.h>
#include <gnu/libc-version.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <libunwind.h>
#include <x86intrin.h>

#include <algorithm>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "../common/contract.h"
#include "heapman/logformat/format.h"
#include "descriptors.h"
#include "modules.h"
#include "unwind.h"

extern "C" int __libc_start_main(int (*)(int, char**, char**), int, char**, void (*)(void),
                                 void (*)(void), void (*)(void), void*);

namespace heapman::rec {

State g;
__thread bool t_guard HEAPMAN_TLS = false;

__thread Ring* t_ring HEAPMAN_TLS = nullptr;

namespace {

__thread bool t_noRing HEAPMAN_TLS = false;  // registration failed, or the thread has exited
__thread void* t_altStack HEAPMAN_TLS = nullptr;  // installAltStack's, freed at the thread's exit
__thread uintptr_t t_stackHigh HEAPMAN_TLS = 0;

void startClock() {
  g.tsc0 = __rdtsc();
  g.ns0 = monotonicNs();
  timespec wall;
  clock_gettime(CLOCK_REALTIME, &wall);
  g.wallNs0 = wall.tv_sec * 1000000000ll + wall.tv_nsec;
}

// pthread key destructor: the thread is exiting.
void threadExit(void* p) {
  Guard guard;
  Ring* r = static_cast<Ring*>(p);
  if (RawEvent* e = begin(r, Kind::kThreadStop, 0, 0)) commit(r, e);
  r->closed.store(1, std::memory_order_release);
  t_ring = nullptr;
  t_noRing = true;
  wakeWriter();
  removeAltStack(t_altStack);
  t_altStack = nullptr;
}

}  // namespace

void* realNext(const char* name) {
  Guard guard;
  return dlsym(RTLD_NEXT, name);
}

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

namespace {
// knownThreadStack's table: a ring of entries, each guarded like a seqlock by its thread field
// (0 while being written).
struct KnownStack {
  std::atomic<uint64_t> thread{0};
  std::atomic<uint64_t> low{0}, high{0};
};
constexpr uint32_t kKnownStacks = 4096;
KnownStack g_knownStacks[kKnownStacks];
std::atomic<uint32_t> g_knownCount{0};

void noteThreadStack(pthread_t thread, uint64_t low, uint64_t high) {
  KnownStack& k = g_knownStacks[g_knownCount.fetch_add(1, std::memory_order_relaxed) % kKnownStacks];
  k.thread.store(0, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  k.low.store(low, std::memory_order_relaxed);
  k.high.store(high, std::memory_order_relaxed);
  k.thread.store(static_cast<uint64_t>(thread), std::memory_order_release);
}
}  // namespace

Ring* newThreadRing() {
  if (t_ring) return t_ring;
  if (t_noRing || !g.active.load(std::memory_order_acquire)) return nullptr;
  Guard guard;
  Ring* r = ringCreate(g.nextThread.fetch_add(1), g.ringBytes);
  if (!r) {
    t_noRing = true;
    return nullptr;
  }
  // Stack bounds, for the frame-pointer walk and the log. pthread_getattr_np allocates (through
  // the real malloc: the guard is set).
  uint64_t low = 0, high = 0;
  if (threadStackBounds(pthread_self(), low, high)) noteThreadStack(pthread_self(), low, high);
  t_stackHigh = high;
  r->thread = pthread_self();
  r->stackLow = low;
  r->stackHigh = high;
  Ring* head = g.rings.load(std::memory_order_relaxed);
  do {
    r->next = head;
  } while (!g.rings.compare_exchange_weak(head, r, std::memory_order_release,
                                          std::memory_order_relaxed));
  t_ring = r;
  pthread_setspecific(g.threadKey, r);
  if (RawEvent* e = begin(r, Kind::kThreadStart, 0, 0)) {
    e->a = static_cast<uint64_t>(gettid());
    e->b = low;
    e->c = high;
    commit(r, e);
  }
  t_altStack = installAltStack();
  // A second thread: the program is multi-threaded now, and the writer thread is no longer
  // seen alone (a thread that only waits would otherwise keep the first ones' records unwritten).
  if (r->index > 0) needWriter(true);
  return r;
}

namespace {
// A fatal signal is ending the process (flushForCrash): this thread records nothing more and
// waits, off the cores, until the process dies. Bounded (10 s) in case it does not.
__attribute__((noinline, cold)) void parkForCrash() {
  for (int i = 0; i < 100 && g.crashing.load(std::memory_order_acquire); ++i) {
    timespec timeout{0, 100000000};  // 100 ms
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&g.crashing), FUTEX_WAIT_PRIVATE, 1, &timeout,
            nullptr, 0);
  }
}

// The writer is more than State::lagDeadline behind this thread: wait until it catches up
// (bounded: a stuck writer must not stop the program). Before the event takes its number, so
// that the writer can drain everything.
// Not while a collection runs: the world may be stopped with another thread inside malloc, which
// the writer may need. Without a writer thread yet, the deadline is the lazy start's (needWriter).
__attribute__((noinline)) void waitForWriter() {
  if (g.crashing.load(std::memory_order_acquire)) return parkForCrash();
  if (!g.writerThread.load(std::memory_order_acquire)) return needWriter(false);
  if (g.stop.load(std::memory_order_relaxed) || g.collecting.load(std::memory_order_relaxed)) return;
  uint64_t start = monotonicNs();
  g.lagWaiters.fetch_add(1, std::memory_order_seq_cst);
  // Asleep on the writer's round counter (a futex): spinning or polling threads would take the
  // cores the writer needs to catch up.
  for (int round = 0; round < 200; ++round) {
    uint32_t seen = g.lagRounds.load(std::memory_order_acquire);
    if (__rdtsc() <= g.lagDeadline.load(std::memory_order_acquire) ||
        g.stop.load(std::memory_order_relaxed) ||
        !g.writerThread.load(std::memory_order_relaxed))  // paused (pauseWriter)
      break;
    g.ringFull.store(1, std::memory_order_relaxed);  // the writer does not step aside now
    wakeWriter();
    timespec timeout{0, 10000000};  // 10 ms, 200 times at most
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&g.lagRounds), FUTEX_WAIT_PRIVATE, seen,
            &timeout, nullptr, 0);
  }
  g.lagWaiters.fetch_sub(1, std::memory_order_relaxed);
  g.lagWaits.fetch_add(1, std::memory_order_relaxed);
  g.lagWaitNs.fetch_add(monotonicNs() - start, std::memory_order_relaxed);
}
}  // namespace

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

RawEvent* begin(Ring* r, Kind kind, uint32_t nframes, uint32_t extraLen) {
  if (__builtin_expect(r->lastTsc > g.lagDeadline.load(std::memory_order_relaxed), 0))
    waitForWriter();
  uint32_t size = static_cast<uint32_t>(
      (sizeof(RawEvent) + nframes * sizeof(uint64_t) + extraLen + 7) & ~uint64_t{7});
  const uint64_t mask = r->capacity - 1;
  // Room for a pending kLost record too, so that a drop is reported before the next event.
  uint32_t need = size + (r->lostPending ? static_cast<uint32_t>(sizeof(RawEvent)) : 0);
  uint64_t head = r->head.load(std::memory_order_relaxed);
  uint64_t contiguous = r->capacity - (head & mask);
  uint64_t total = need <= contiguous ? need : contiguous + need;
  // Wait for the writer while the ring is full: spin briefly, then yield, up to ~1 s, then drop.
  // The consumer's tail is read only when the cached copy says the ring is full, so that the
  // two threads do not pull one cache line back and forth on every event.
  if (head + total - r->cachedTail > r->capacity)
    r->cachedTail = r->tail.load(std::memory_order_acquire);
  uint64_t waitStart = 0;
  if (head + total - r->cachedTail > r->capacity) waitStart = monotonicNs();
  for (int round = 0; head + total - r->cachedTail > r->capacity;
       r->cachedTail = r->tail.load(std::memory_order_acquire), ++round) {
    if (round == 0 || (round & 63) == 0) {
      g.ringFull.store(1, std::memory_order_relaxed);  // even during a collection
      needWriter(true);
      wakeWriter();
    }
    if (round > 20000 || g.stop.load(std::memory_order_relaxed)) {
      ++r->lostPending;
      return nullptr;
    }
    if (round < 100)
      _mm_pause();
    else if (round < 1000)
      sched_yield();
    else {
      timespec ts{0, 50000};
      nanosleep(&ts, nullptr);
    }
  }
  if (waitStart) {
    g.fullWaits.fetch_add(1, std::memory_order_relaxed);
    g.fullWaitNs.fetch_add(monotonicNs() - waitStart, std::memory_order_relaxed);
  }
  // Wake the writer as the ring crosses half full (it also wakes every millisecond).
  uint64_t fill = head - r->cachedTail;
  if (fill <= r->capacity / 2 && fill + total > r->capacity / 2) {
    needWriter(true);
    wakeWriter();
  }
  if (need > contiguous) {  // pad to the end, start again at 0
    auto* pad = reinterpret_cast<RawEvent*>(r->data + (head & mask));
    pad->size = static_cast<uint32_t>(contiguous);
    pad->kind = Kind::kPad;
    head += contiguous;
  }
  // Busy before taking a number. Relaxed is enough: the fetch_add below is a release (and on
  // x86 a locked instruction) that keeps this store before it. A writer that reads the counter
  // before our increment gets a watermark <= our number anyway; one that reads it after
  // synchronizes with the increment and so sees busy (or the committed record).
  r->busy.store(1, std::memory_order_relaxed);
  // Numbers and time first, then the record: a locked instruction waits for every store before
  // it, and the record's stores go to a ring line that may still be on its way.
  uint64_t lostSeq = r->lostPending ? g.seq.fetch_add(1, std::memory_order_acq_rel) : 0;
  // An allocation takes no number of its own (ring.h): it reads the next one and goes before
  // that event. A plain load instead of a locked increment (~10 ns here) on the commonest event.
  const uint16_t seqs = kind == Kind::kAlloc ? 0 : 1;
  uint64_t seq = seqs ? g.seq.fetch_add(1, std::memory_order_acq_rel)
                      : g.seq.load(std::memory_order_acquire);
  // Numbered events always read the clock; an allocation mostly takes its thread's last reading
  // (ring.h, "Time").
  uint64_t tsc;
  if (seqs) {  // a fresh reading, which the thread's next allocations may take (never earlier)
    tsc = r->lastTsc = __rdtsc();
    r->tscLeft = g.allocTimeEvery - 1;
    r->tscEpoch = g.timeEpoch.load(std::memory_order_relaxed);
  } else {
    tsc = allocationTsc(r);
  }
  if (r->lostPending) {
    auto* lost = reinterpret_cast<RawEvent*>(r->data + (head & mask));
    std::memset(lost, 0, sizeof(RawEvent));
    lost->size = sizeof(RawEvent);
    lost->kind = Kind::kLost;
    lost->a = r->lostPending;
    lost->seqs = 1;
    lost->seq = lostSeq;
    lost->tsc = tsc;
    r->lostPending = 0;
    head += sizeof(RawEvent);
    r->head.store(head, std::memory_order_release);
    r->nextSeq.store(lostSeq + 1, std::memory_order_release);
  }
  auto* e = reinterpret_cast<RawEvent*>(r->data + (head & mask));
  // The ring's lines were last read by the writer a whole ring ago: fetch the ones the next
  // events will fill, for writing, while this one is filled (a store miss per event otherwise).
  // prefetchw asks for the line in exclusive state (a read prefetch, all __builtin_prefetch emits
  // without -mprfchw, leaves the store an ownership request to wait for); CPUs without it (Intel
  // before Broadwell) execute it as a no-op.
  __asm__ volatile("prefetchw %0" ::"m"(*(r->data + ((head + 512) & mask))));
  e->size = size;
  e->kind = kind;
  e->heap = 0;
  e->flags = 0;
  e->nframes = static_cast<uint16_t>(nframes);
  e->seqs = seqs;
  e->extraLen = extraLen;
  e->seq = seq;
  e->tsc = tsc;
  e->a = e->b = e->c = e->extra = 0;
  return e;
}

void recordModules() {
  if (t_guard || !g.active.load(std::memory_order_relaxed)) return;
  Guard guard;
  if (g.unwind == State::Unwind::kAuto) classifyModules();
  Ring* r = threadRing();
  if (!r) return;
  std::string blob = serializeModules(scanModules());
  if (blob.size() > r->capacity / 4) return;  // the writer's periodic rescan will see them
  RawEvent* e = begin(r, Kind::kModules, 0, static_cast<uint32_t>(blob.size()));
  if (!e) return;
  std::memcpy(extraOf(e), blob.data(), blob.size());
  commit(r, e);
}

namespace {
// What a walk depends on besides its start and the words it reads, as a number that changes
// when they do (StackMemo::frameless): the frameless modules and the entry return addresses
// (State::entryRets), both only ever added to.
inline uint32_t walkConstants() {
  return g.framelessCount.load(std::memory_order_acquire) |
         g.entryCount.load(std::memory_order_acquire) << 16;
}

// The stack-cache flags for an event with these frames (ring.h, kSameStack): kSameStack and the
// slot when this thread recorded the same stack recently (the event then carries no frames),
// else the slot where the frames are now kept (the event carries them).
uint16_t cacheStack(Ring* r, const uint64_t* frames, uint32_t n) {
  auto equal = [&](uint32_t k) {
    return r->slotUsed[k] && r->slotCount[k] == n &&
           std::memcmp(r->slotFrames[k], frames, n * sizeof(uint64_t)) == 0;
  };
  if (equal(r->lastSlot)) return static_cast<uint16_t>(kSameStack | (r->lastSlot << kStackSlotShift));
  for (uint32_t k = 0; k < kStackSlots; ++k)
    if (k != r->lastSlot && equal(k)) {
      r->lastSlot = static_cast<uint8_t>(k);
      return static_cast<uint16_t>(kSameStack | (k << kStackSlotShift));
    }
  uint32_t k = r->nextSlot;
  r->nextSlot = static_cast<uint8_t>((k + 1) % kStackSlots);
  ++r->slotChanges;
  r->memos[r->slotMemo[k]].count = 0;  // the walk that filled it before replays other frames
  std::memcpy(r->slotFrames[k], frames, n * sizeof(uint64_t));
  r->slotCount[k] = n;
  r->slotUsed[k] = true;
  r->lastSlot = static_cast<uint8_t>(k);
  return static_cast<uint16_t>(k << kStackSlotShift);
}

// The slot whose walk a walk from `start` would repeat exactly (ring.h, StackMemo), or -1. The
// last slot used first.
int replaySlot(const Ring* r, uintptr_t start) {
  uint32_t frameless = walkConstants();
  for (uint32_t i = 0; i < kStackSlots; ++i) {
    uint32_t k = i == 0 ? r->lastSlot : (i == r->lastSlot ? 0 : i);
    const StackMemo& m = r->memos[r->slotMemo[k]];
    if (m.start != start || m.count == 0 || !r->slotUsed[k] || m.frameless != frameless) continue;
    // Every word the walk read, at the same place: independent loads, one 16-byte load and
    // compare per frame, four frames a test (the memo is padded to a multiple of four with
    // entries that compare equal: captureStack). Slots often share the start and the leaf frames
    // (one call site reached along different paths): stop at the first group that differs.
    uint32_t j = 0;
    for (; j < m.count; j += 4) {
      auto same = [&](uint32_t f) {
        return _mm_cmpeq_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(m.fp[f])),
                              _mm_load_si128(reinterpret_cast<const __m128i*>(&m.words[f])));
      };
      __m128i all = _mm_and_si128(_mm_and_si128(same(j), same(j + 1)),
                                  _mm_and_si128(same(j + 2), same(j + 3)));
      if (_mm_movemask_epi8(all) != 0xFFFF) break;
    }
    if (j >= m.count) return static_cast<int>(k);
  }
  return -1;
}
}  // namespace

RawEvent* beginWithFrames(Ring* r, Kind kind, uint8_t heap, const uint64_t* frames, uint32_t n,
                          uint32_t extraLen, uint16_t framesFlag) {
  uint16_t flags = cacheStack(r, frames, n);
  bool same = flags & kSameStack;
  RawEvent* e = begin(r, kind, same ? 0 : n, extraLen);
  if (!e) {
    // The writer never gets these frames: the slot must not be reused as if it had.
    if (!same) {
      r->slotUsed[stackSlotOf(flags)] = false;
      ++r->slotChanges;
    }
    return nullptr;
  }
  e->heap = heap;
  e->flags = flags | framesFlag;
  if (!same) std::memcpy(framesOf(e), frames, n * sizeof(uint64_t));
  return e;
}

RawEvent* beginWithStack(Ring*& r, Kind kind, uint8_t heap, uint32_t extraLen, const void* from) {
  r = threadRing();
  if (!r) return nullptr;
  auto start = reinterpret_cast<uintptr_t>(from);
  // The memo's frames lie between `start` and the top of this thread's stack, all live now.
  if (start && t_stackHigh && start < t_stackHigh)
    if (int k = replaySlot(r, start); k >= 0)
      return beginWithSlot(r, kind, heap, static_cast<uint32_t>(k), extraLen, 0);
  uint64_t frames[kMaxFrames];
  StackMemo& memo = r->memos[r->memoSpare];
  const uint32_t last = r->lastSlot;
  const StackMemo* prev = r->slotUsed[last] ? &r->memos[r->slotMemo[last]] : nullptr;
  uint32_t n = captureStack(frames, g.depth, from, &memo, prev, r->slotFrames[last],
                            r->slotCount[last]);
  RawEvent* e = beginWithFrames(r, kind, heap, frames, n, extraLen, 0);
  if (e && memo.count) {  // the slot's frames came from this walk, or equal its result
    uint32_t k = stackSlotOf(e->flags);
    std::swap(r->slotMemo[k], r->memoSpare);
  }
  return e;
}

void classifyModules() {
  // Writers only (start-up, dlopen/dlclose hooks): serialize them. Readers take no lock.
  while (g.framelessLock.exchange(true, std::memory_order_acquire)) sched_yield();
  struct Scan {
    bool seen[State::kMaxFrameless] = {};
    bool changed = false;
  } scan;
  dl_iterate_phdr(
      [](dl_phdr_info* pi, size_t, void* arg) -> int {
        auto& seen = *static_cast<Scan*>(arg);
        CodeRange found[8];
        uintptr_t eh = 0;
        uint32_t got = framelessRanges(pi, found, 8, &eh);
        for (uint32_t i = 0; i < got; ++i) {
          auto [low, high] = found[i];
          if (low < g.selfHigh && high > g.selfLow) continue;  // our frames are skipped anyway
          uint32_t count = g.framelessCount.load(std::memory_order_relaxed);
          uint32_t known = count;
          for (uint32_t k = 0; k < count && known == count; ++k)
            if (g.frameless[k].low == low && g.frameless[k].high == high) known = k;
          if (known < count) {
            seen.seen[known] = true;
            if (g.framelessEh[known].exchange(eh, std::memory_order_relaxed) != eh)
              seen.changed = true;
            continue;
          }
          if (count == State::kMaxFrameless) return 1;  // full: later modules keep the FP walk
          g.frameless[count] = {low, high};
          g.framelessEh[count].store(eh, std::memory_order_relaxed);
          seen.seen[count] = true;
          seen.changed = true;
          if (low < g.framelessLow.load(std::memory_order_relaxed))
            g.framelessLow.store(low, std::memory_order_relaxed);
          if (high > g.framelessHigh.load(std::memory_order_relaxed))
            g.framelessHigh.store(high, std::memory_order_relaxed);
          g.framelessCount.store(count + 1, std::memory_order_release);
        }
        return 0;
      },
      &scan);
  // Modules unloaded since: no rules from their (unmapped) tables; cached rules may describe
  // code that is gone, or lie where a new module now is.
  uint32_t count = g.framelessCount.load(std::memory_order_relaxed);
  for (uint32_t k = 0; k < count; ++k)
    if (!scan.seen[k] && g.framelessEh[k].exchange(0, std::memory_order_relaxed) != 0)
      scan.changed = true;
  if (scan.changed) clearFrameRules();
  g.framelessLock.store(false, std::memory_order_release);
}

namespace {
// libunwind's walk from here, the recorder's own frames skipped.
uint32_t dwarfStack(uint64_t* out, uint32_t max) {
  void* buf[kMaxFrames + 16];
  int got = unw_backtrace(buf, static_cast<int>(std::min<uint32_t>(max + 16, kMaxFrames + 16)));
  uint32_t n = 0;
  bool inSelf = true;
  for (int i = 0; i < got && n < max; ++i) {
    auto ret = reinterpret_cast<uintptr_t>(buf[i]);
    if (inSelf && ret >= g.selfLow && ret < g.selfHigh) continue;
    inSelf = false;
    out[n++] = ret;
  }
  return n;
}
}  // namespace

namespace {
bool isEntry(uintptr_t ret, uint32_t entries) {
  for (uint32_t k = 0; k < entries && k < State::kMaxEntries; ++k)
    if (g.entryRets[k].load(std::memory_order_relaxed) == ret) return true;
  return false;
}

// After a walk that went to the end of the start code (an undefined return address, or a frame
// pointer of 0) through rule steps: the first frame of its last run of libc frames (the frame
// past a run's end may be _start, in the program) is where the thread's code begins. Returns the
// frames up to it (this walk's stack ends there too, like every later one), or n.
uint32_t learnEntry(const uint64_t* out, uint32_t n) {
  auto inLibc = [](uint64_t f) { return f >= g.libcLow && f < g.libcHigh; };
  uint32_t k = n;
  if (k > 0 && !inLibc(out[k - 1])) --k;  // _start
  if (k == 0 || !inLibc(out[k - 1])) return n;
  while (k > 1 && inLibc(out[k - 2])) --k;
  if (k == 1) return n;  // all libc: no caller to begin with (a thread libc itself started)
  const uintptr_t entry = out[k - 1];
  for (uint32_t s = 0; s < State::kMaxEntries; ++s) {
    uintptr_t seen = 0;
    if (g.entryRets[s].compare_exchange_strong(seen, entry, std::memory_order_relaxed)) {
      g.entryCount.fetch_add(1, std::memory_order_release);
      return k;
    }
    if (seen == entry) return k;
  }
  return n;  // no slot left: this thread's stacks keep the start code
}
}  // namespace

__attribute__((noinline)) uint32_t captureStack(uint64_t* out, uint32_t max, const void* from,
                                                StackMemo* memo, const StackMemo* prev,
                                                const uint64_t* prevFrames, uint32_t prevCount) {
  if (memo) memo->count = 0;
  if (g.unwind == State::Unwind::kDwarf) return dwarfStack(out, max);
  auto fp = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  const uintptr_t low = fp;
  const uintptr_t high = t_stackHigh ? t_stackHigh : fp + (64u << 10);
  // Start at the hook's frame when given (one above ours on this stack), past the frames between.
  if (auto start = reinterpret_cast<uintptr_t>(from); start > fp && start < high) fp = start;
  uint32_t n = 0;
  bool inSelf = true;  // skip the recorder's own frames at the leaf
  // Frames inside the frameless modules' bounds ask frameRule (unwind.h): most return addresses
  // of a program built with frame pointers lie outside them (one compare). --unwind fp: none do.
  const uint32_t constants = walkConstants();
  const uint32_t framelessCount = constants & 0xffff;
  const uint32_t entries = constants >> 16;
  const uintptr_t flLow = g.framelessLow.load(std::memory_order_relaxed);
  const uintptr_t flSpan = framelessCount && g.unwind == State::Unwind::kAuto
                               ? g.framelessHigh.load(std::memory_order_relaxed) - flLow
                               : 0;
  // The walk's reads, for a replay (ring.h, StackMemo): kept only when it has a start of its own
  // and stack bounds that do not depend on where this function's frame is. The walk is a
  // function of its start and of the words it read (the rules depend only on return addresses).
  if (!t_stackHigh || fp != reinterpret_cast<uintptr_t>(from)) memo = nullptr;
  uint32_t nreads = 0;
  // Stack words are read one at a time (word()) and kept as the step read them: GCC merges
  // two adjacent loads into one 16-byte load, which waits for the two 8-byte stores that wrote
  // them moments ago (the hook's call and push: a store-forwarding stall that took 42% of the
  // walk's samples on sqlite3). A relaxed atomic load is a plain mov that is never merged.
  auto word = [](uintptr_t at) {
    return __atomic_load_n(reinterpret_cast<const uintptr_t*>(at), __ATOMIC_RELAXED);
  };
  auto remember = [&](uintptr_t at, uint64_t w0, uint64_t w1) {
    if (!memo) return;
    if (nreads == kMemoFrames) {
      memo = nullptr;  // too deep to keep
      return;
    }
    memo->fp[nreads] = at;
    memo->stateSp[nreads] = 0;  // no state here unless the step ends here (resume)
    memo->words[nreads++] = {w0, w1};
  };
  // A whole chain ends where the code that called main or started the thread ends it: a rule
  // whose return address is undefined (_start, clone3), a frame pointer of 0 (what _start
  // leaves), or, when libc's frames are not stepped by rule, a walk that stops in libc (which
  // keeps no frame pointers). A chain that breaks anywhere else goes to libunwind.
  bool whole = false;
  bool startCode = false;  // the walk went through the start code to its end (learnEntry)
  uint32_t stepped = 0;  // a rule step came before (a word: see word())
  uintptr_t sp = low;  // the lowest address the next frame may start at
  // Resuming `prev` (header comment): its states in stack order, the next one to compare at pj.
  // Both walks must agree on whether a rule step came before (a chain that stops in libc is
  // whole only without one). Off when the walk's constants differ (the frameless modules).
  const StackMemo* pm = prev && prevFrames && prev->count && prev->frameless == constants &&
                                t_stackHigh && flSpan
                            ? prev
                            : nullptr;
  uint32_t pj = 0;
  // At the start of a step's frame (its return address `ret` not yet taken): notes the state in
  // this walk's memo, and resumes `pm` when it was in the same state. True when resumed (the
  // frames are then complete and the chain whole).
  auto resume = [&](uintptr_t ret) -> bool {
    // Only where a rule step would follow: a frame-pointer step costs less than the notes (the
    // walks of a program built with frame pointers resume where they reach libc).
    if (ret - flLow >= flSpan) return false;
    const uint16_t nTag = static_cast<uint16_t>(n | (stepped ? 0x8000u : 0));
    if (memo && nreads) {
      memo->stateSp[nreads - 1] = inSelf ? 0 : sp;
      memo->stateFp[nreads - 1] = fp;
      memo->stateRet[nreads - 1] = ret;
      memo->stateN[nreads - 1] = nTag;
    }
    if (!pm || inSelf) return false;
    while (pj < pm->count && pm->stateSp[pj] < sp) ++pj;
    if (pj >= pm->count || pm->stateSp[pj] != sp || pm->stateRet[pj] != ret ||
        pm->stateFp[pj] != fp || (pm->stateN[pj] & 0x8000) != (nTag & 0x8000))
      return false;
    const uint32_t taken = pm->stateN[pj] & 0x7fff;  // prev's frames before this state
    // prev may have stopped at the depth: it then holds no frames beyond, which this walk,
    // fewer frames in, would need.
    if (taken > prevCount || (prevCount >= max && n < taken)) return false;
    for (uint32_t i = pj + 1; i < pm->count; ++i) {
      const auto* w = reinterpret_cast<const uint64_t*>(pm->fp[i]);
      if (w[0] != pm->words[i].next || w[1] != pm->words[i].ret) {
        pm = nullptr;  // the outer frames changed: walk on, and do not try again
        return false;
      }
    }
    const uint32_t nAt = n;
    for (uint32_t k = taken; k < prevCount && n < max; ++k) out[n++] = prevFrames[k];
    for (uint32_t i = pj + 1; memo && i < pm->count; ++i) {
      if (nreads == kMemoFrames) {
        memo = nullptr;
        break;
      }
      memo->fp[nreads] = pm->fp[i];
      memo->words[nreads] = pm->words[i];
      memo->stateSp[nreads] = pm->stateSp[i];
      memo->stateFp[nreads] = pm->stateFp[i];
      memo->stateRet[nreads] = pm->stateRet[i];
      memo->stateN[nreads++] = static_cast<uint16_t>(
          (pm->stateN[i] & 0x8000) | (((pm->stateN[i] & 0x7fff) - taken + nAt) & 0x7fff));
    }
    whole = true;
    return true;
  };
  while (n < max) {
    // A frame-pointer step: fp is a frame (saved rbp, return address).
    // fp <= high - 16, not fp + 16 <= high: a frameless function may leave any value in rbp.
    if (fp < sp || high < 16 || fp > high - 16 || (fp & 7) != 0) {
      startCode = fp == 0;
      whole = startCode || (!stepped && n > 0 && out[n - 1] >= g.libcLow && out[n - 1] < g.libcHigh);
      break;
    }
    uintptr_t ret = word(fp + 8);
    uintptr_t next = word(fp);
    remember(fp, next, ret);
    sp = fp + 16;  // the caller's stack pointer after the return
    fp = next;
    // Rule steps while the return address lies in frameless code: the function there kept no
    // frame, so its caller's frame is found from its CFA (rsp or rbp plus an offset).
    bool fpStep = false;
    while (!fpStep) {
      if (resume(ret)) goto done;
      if (ret < 4096) goto done;
      if (inSelf && ret >= g.selfLow && ret < g.selfHigh) {
        // still inside libheapman_preload.so
      } else {
        inSelf = false;
        out[n++] = ret;
        if (n == max) {
          whole = true;
          goto done;
        }
        if (entries && ret - g.libcLow < g.libcHigh - g.libcLow && isEntry(ret, entries)) {
          whole = true;  // libc's start code from here on
          goto done;
        }
      }
      if (ret - flLow >= flSpan) break;
      // Tests in order of likelihood, not a switch: its jump table's indirect branch was
      // mispredicted often enough to cost a quarter of the walk's time (perf, sqlite3).
      FrameRule rule = frameRule(ret);
      if (rule.kind == FrameRule::kRsp || rule.kind == FrameRule::kRbp) {
        uintptr_t cfa = (rule.kind == FrameRule::kRsp ? sp : fp) + rule.cfaOffset;
        // Everything read lies between sp and the CFA: no bound depends on where the walk
        // started (resume relies on it).
        if (cfa < sp + 16 || cfa > high || (cfa & 7) != 0 || cfa - 8 * rule.rbpSlot < sp)
          goto done;
        ret = word(cfa - 8);
        uintptr_t below = word(cfa - 16);
        remember(cfa - 16, below, ret);  // the return address and the word below it
        if (rule.rbpSlot == 2) {
          fp = below;
        } else if (rule.rbpSlot) {
          const uintptr_t at = cfa - 8 * rule.rbpSlot;
          fp = word(at);
          remember(at, fp, word(at + 8));
        }
        sp = cfa;
        stepped = 1;
      } else if (rule.kind == FrameRule::kFramePointer) {
        fpStep = true;
      } else {
        whole = startCode = rule.kind == FrameRule::kEnd;  // else kUnknown: libunwind
        goto done;
      }
    }
  }
  if (n == max) whole = true;
done:
  // The memo's constants no longer hold after learning: it is never replayed.
  if (startCode && stepped) n = learnEntry(out, n);
  if (g.unwind == State::Unwind::kFramePointers || whole) {
    if (memo) {
      memo->start = reinterpret_cast<uintptr_t>(from);
      memo->frameless = constants;
      memo->count = nreads;
      // Pad to a multiple of four for replaySlot: entries that read their own words.
      for (uint32_t i = nreads; i % 4; ++i) memo->fp[i] = reinterpret_cast<uintptr_t>(&memo->words[i]);
    }
    return n;
  }
  g.unwindFallbacks.fetch_add(1, std::memory_order_relaxed);
  return dwarfStack(out, max);
}

bool knownThreadStack(pthread_t thread, uint64_t& low, uint64_t& high) {
  uint32_t n = g_knownCount.load(std::memory_order_acquire);
  for (uint32_t i = n; i-- > (n > kKnownStacks ? n - kKnownStacks : 0);) {
    const KnownStack& k = g_knownStacks[i % kKnownStacks];
    if (k.thread.load(std::memory_order_acquire) != static_cast<uint64_t>(thread)) continue;
    uint64_t l = k.low.load(std::memory_order_relaxed), h = k.high.load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (k.thread.load(std::memory_order_relaxed) != static_cast<uint64_t>(thread) || h <= l)
      continue;  // rewritten meanwhile
    low = l;
    high = h;
    return true;
  }
  return false;
}

bool threadStackBounds(pthread_t thread, uint64_t& low, uint64_t& high) {
  pthread_attr_t attr;
  if (pthread_getattr_np(thread, &attr) != 0) return false;
  void* addr = nullptr;
  size_t size = 0;
  bool ok = pthread_attr_getstack(&attr, &addr, &size) == 0;
  pthread_attr_destroy(&attr);
  if (!ok) return false;
  low = reinterpret_cast<uint64_t>(addr);
  high = low + size;
  return true;
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
  t_ring = nullptr;
  t_noRing = false;
  startClock();
  setUpWriter();  // its thread starts lazily, as in the first process
  g.active.store(true, std::memory_order_release);
}

__attribute__((constructor(101))) void start() {
  Guard guard;
  const char* out = getenv(env::kOutput);
  if (!out || !*out) return;  // loaded without heaprec: stay out of the way
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
      return;
    }
  } else if (!openOwnLog(true)) {
    return;
  }
  g.pid = static_cast<int>(getpid());
  startClock();
  pthread_key_create(&g.threadKey, threadExit);
  installCrashHandlers();
  pthread_atfork(nullptr, nullptr, afterForkChild);
  g.seq.store(0, std::memory_order_relaxed);
  if (initMono) initMono();  // before recording starts: it decides whether mallocs are recorded
  g.active.store(true, std::memory_order_release);
  if (initBdwgc) initBdwgc();  // before the writer: the log header names the runtimes
  setUpWriter();
}

__attribute__((destructor(101))) void finish() { finishRecording(); }

}  // namespace
}  // namespace heapman::rec

using namespace heapman::rec;

HEAPMAN_EXPORT void heapman_record_event(const char* name, const void* data, size_t len) {
  if (t_guard || !g.active.load(std::memory_order_relaxed) || !name) return;
  Guard guard;
  size_t nameLen = strnlen(name, 255);
  if (!data) len = 0;
  if (len > kMaxEventBytes - 256) len = kMaxEventBytes - 256;
  Ring* r;
  auto extra = static_cast<uint32_t>(nameLen + len);
  RawEvent* e = beginWithManagedStack ? beginWithManagedStack(r, Kind::kEvent, 0, extra) : nullptr;
  if (!e) e = beginWithStack(r, Kind::kEvent, 0, extra);
  if (!e) return;
  e->a = nameLen;
  e->b = len;
  std::memcpy(extraOf(e), name, nameLen);
  if (len) std::memcpy(extraOf(e) + nameLen, data, len);
  commit(r, e);
  if (noteEventForGc) noteEventForGc(name, nameLen);
}

HEAPMAN_EXPORT void heapman_record_frame(void) {
  if (t_guard || !g.active.load(std::memory_order_relaxed)) return;
  Guard guard;
  Ring* r = threadRing();
  if (!r) return;
  RawEvent* e = begin(r, Kind::kFrame, 0, 0);
  if (!e) return;
  e->a = g.frameNo.fetch_add(1, std::memory_order_relaxed) + 1;
  commit(r, e);
}
