// A recording thread's registration: its ring, its stack's bounds (for the walk, the log and
// the collector layers), its alternate signal stack, and what happens at its exit.
#include "threads.h"

#include <sys/mman.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>

namespace heapman::rec {

__thread Ring* t_ring HEAPMAN_TLS = nullptr;
__thread uintptr_t t_stackHigh HEAPMAN_TLS = 0;

namespace {

__thread bool t_noRing HEAPMAN_TLS = false;  // registration failed, or the thread has exited
__thread void* t_altStack HEAPMAN_TLS = nullptr;  // installAltStack's, freed at the thread's exit

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

void forgetThreadRing() {
  t_ring = nullptr;
  t_noRing = false;
}

Ring* newThreadRing() {
  if (t_ring) return t_ring;
  if (t_noRing || !g.active.load(std::memory_order_acquire)) return nullptr;
  Guard guard;
  // The first thread's ring a little larger than the others' (kFirstRingBytes): a program's first
  // thread is mostly its busiest, and a single-threaded one has no writer thread for its first
  // 50 ms (kLazyStartNs), unless its ring fills, which starts it (waitForRoom). Each grows as the
  // writer falls behind it (ring.h, Growth). At its largest from the start, its pages all became
  // resident in any program that made more than 32 MiB of ring records (half a million
  // allocations): mcs compiling 300 files 225 -> 197 MB peak RSS (0 doublings), churn_program
  // 47 -> 23 MB (one), the Mono game unchanged (it grows to 32 MiB while collections hold the
  // writer back).
  const uint32_t index = g.nextThread.fetch_add(1);
  Ring* r = ringCreate(index, index == 0 ? kMainRingBytes : kFirstRingBytes, g.ringBytes);
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

constexpr size_t kAltStackBytes = 64 << 10;

void* installAltStack() {
  stack_t cur{};
  if (sigaltstack(nullptr, &cur) != 0 || !(cur.ss_flags & SS_DISABLE)) return nullptr;
  void* mem = mmap(nullptr, kAltStackBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) return nullptr;
  stack_t ss{};
  ss.ss_sp = mem;
  ss.ss_size = kAltStackBytes;
  if (sigaltstack(&ss, nullptr) != 0) {
    munmap(mem, kAltStackBytes);
    return nullptr;
  }
  return mem;
}

void removeAltStack(void* mem) {
  if (!mem) return;
  stack_t cur{};
  if (sigaltstack(nullptr, &cur) == 0 && cur.ss_sp == mem && !(cur.ss_flags & SS_ONSTACK)) {
    stack_t off{};
    off.ss_flags = SS_DISABLE;
    sigaltstack(&off, nullptr);
  } else if (cur.ss_sp == mem) {
    return;  // running on it: leave it
  }
  munmap(mem, kAltStackBytes);
}

}  // namespace heapman::rec
