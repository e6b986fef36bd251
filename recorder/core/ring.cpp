// A thread's ring: made and unmade (ringCreate, ringDestroy), and its producer's side, begin(), on
// every recorded event's path, with its slow cases (the writer far behind, a full ring, a drop to
// report) in cold functions of their own.
#include "ring.h"

#include <linux/futex.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#include <cstring>
#include <new>

#include "recorder.h"

namespace heapman::rec {

Ring* ringCreate(uint32_t index, uint64_t capacity, uint64_t maxCapacity) {
  if (capacity > maxCapacity) capacity = maxCapacity;
  size_t header = (sizeof(Ring) + 4095) & ~size_t{4095};
  size_t length = header + maxCapacity;
  void* m = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return nullptr;
  Ring* r = new (m) Ring();
  r->index = index;
  r->capacity = capacity;
  r->maxCapacity = maxCapacity;
  r->layout.store(static_cast<uint64_t>(__builtin_ctzll(capacity)), std::memory_order_relaxed);
  r->data = static_cast<uint8_t*>(m) + header;
  r->mapLength = length;
  return r;
}

void ringDestroy(Ring* r) {
  size_t length = r->mapLength;
  r->~Ring();
  munmap(r, length);
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

// The ring has no room for `total` more bytes at `head`: wake the writer and wait for it, spinning
// briefly, then yielding, then sleeping, up to ~1 s; then the event is dropped (false) and
// counted, for a kLost record before the thread's next event (writeLost).
__attribute__((noinline, cold)) bool waitForRoom(Ring* r, uint64_t head, uint64_t total) {
  const uint64_t waitStart = monotonicNs();
  for (int round = 0; head + total - r->cachedTail > r->capacity;
       r->cachedTail = r->tail.load(std::memory_order_acquire), ++round) {
    if (round == 0 || (round & 63) == 0) {
      r->wantGrow = r->capacity < r->maxCapacity;
      g.ringFull.store(1, std::memory_order_relaxed);  // even during a collection
      needWriter(true);
      wakeWriter();
    }
    if (round > 20000 || g.stop.load(std::memory_order_relaxed)) {
      // A fatal signal is ending the process: wait for it as waitForWriter does. A smaller
      // ring (ring.h, Growth) is full far more often than a 32 MiB one was when it comes.
      if (g.crashing.load(std::memory_order_acquire)) parkForCrash();
      ++r->lostPending;
      return false;
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
  g.fullWaits.fetch_add(1, std::memory_order_relaxed);
  g.fullWaitNs.fetch_add(monotonicNs() - waitStart, std::memory_order_relaxed);
  return true;
}

// The ring wraps to offset 0 at `head` and the writer fell half a ring behind since it last grew
// (wantGrow): doubles it if `head` is a switch position and the consumer has passed the last one
// (ring.h, Growth); otherwise a later wrap will.
__attribute__((noinline, cold)) void growAtWrap(Ring* r, uint64_t head) {
  const uint64_t capacity = r->capacity;
  if (capacity >= r->maxCapacity) {
    r->wantGrow = false;
    return;
  }
  if (((head / capacity) & 1) == 0) return;  // an even multiple: the next wrap is odd
  const uint64_t switchAt = r->layout.load(std::memory_order_relaxed) & ~uint64_t{63};
  if (r->tail.load(std::memory_order_acquire) < switchAt) return;  // the last switch is unread
  r->capacity = 2 * capacity;
  r->layout.store(head | static_cast<uint64_t>(__builtin_ctzll(2 * capacity)),
                  std::memory_order_release);
  r->wantGrow = false;
  g.ringGrowths.fetch_add(1, std::memory_order_relaxed);
}

// The kLost record of the events this thread dropped, at `head`, numbered `lostSeq`, before the
// event being begun: committed at once. Returns the head after it.
__attribute__((noinline, cold)) uint64_t writeLost(Ring* r, uint64_t head, uint64_t lostSeq,
                                                   uint64_t tsc) {
  auto* lost = reinterpret_cast<RawEvent*>(r->data + (head & (r->capacity - 1)));
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
  return head;
}

}  // namespace

RawEvent* begin(Ring* r, Kind kind, uint32_t nframes, uint32_t extraLen) {
  if (__builtin_expect(r->lastTsc > g.lagDeadline.load(std::memory_order_relaxed), 0))
    waitForWriter();
  uint32_t size = static_cast<uint32_t>(
      (sizeof(RawEvent) + nframes * sizeof(uint64_t) + extraLen + 7) & ~uint64_t{7});
  uint64_t mask = r->capacity - 1;
  // Room for a pending kLost record too, so that a drop is reported before the next event.
  uint32_t need = size + (r->lostPending ? static_cast<uint32_t>(sizeof(RawEvent)) : 0);
  uint64_t head = r->head.load(std::memory_order_relaxed);
  uint64_t contiguous = r->capacity - (head & mask);
  uint64_t total = need <= contiguous ? need : contiguous + need;
  // The consumer's tail is read only when the cached copy says the ring is full, so that the
  // two threads do not pull one cache line back and forth on every event.
  if (head + total - r->cachedTail > r->capacity) {
    r->cachedTail = r->tail.load(std::memory_order_acquire);
    if (head + total - r->cachedTail > r->capacity && !waitForRoom(r, head, total)) return nullptr;
  }
  // Wake the writer as the ring crosses half full (it also wakes every 1-8 ms, Writer::run).
  uint64_t fill = head - r->cachedTail;
  if (fill <= r->capacity / 2 && fill + total > r->capacity / 2) {
    // Half full by the producer's copy of the tail; by the real one, the writer is behind.
    if (r->capacity < r->maxCapacity &&
        head + total - r->tail.load(std::memory_order_acquire) > r->capacity / 2)
      r->wantGrow = true;
    needWriter(true);
    wakeWriter();
  }
  if (need > contiguous) {  // pad to the end, start again at 0
    auto* pad = reinterpret_cast<RawEvent*>(r->data + (head & mask));
    pad->size = static_cast<uint32_t>(contiguous);
    pad->kind = Kind::kPad;
    head += contiguous;
    // Published alone, so that commit() finds the record at the head even if the ring grows.
    r->head.store(head, std::memory_order_release);
  }
  // Every wrap comes here (beginAllocationWithSlot leaves offset 0 to begin()). The room found
  // above holds in a larger ring too.
  if ((head & mask) == 0 && head != 0 && __builtin_expect(r->wantGrow, 0)) {
    growAtWrap(r, head);
    mask = r->capacity - 1;
  }
  // Busy before taking a number. Relaxed is enough: the fetch_add below is a release (and on
  // x86 a locked instruction) that keeps this store before it. A writer that reads the counter
  // before our increment gets a watermark <= our number anyway; one that reads it after
  // synchronizes with the increment and so sees busy (or the committed record).
  r->busy.store(1, std::memory_order_relaxed);
  // Numbers and time first, then the record: a locked instruction waits for every store before
  // it, and the record's stores go to a ring line that may still be on its way.
  const uint64_t lostSeq =
      __builtin_expect(r->lostPending != 0, 0) ? g.seq.fetch_add(1, std::memory_order_acq_rel) : 0;
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
  if (__builtin_expect(r->lostPending != 0, 0)) head = writeLost(r, head, lostSeq, tsc);
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

}  // namespace heapman::rec
