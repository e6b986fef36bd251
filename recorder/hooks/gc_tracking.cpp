// The tracked live set of a Boehm-collected heap (gc_tracking.h): birth queues, the set, the
// collected-set sweep, root sets and RAM dumps.
#include "gc_tracking.h"

#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "heapman/logformat/format.h"
#include "heapman/logformat/records.h"

namespace heapman::rec::gc {

__thread bool t_inCallback HEAPMAN_TLS = false;

void* mapBytes(size_t n) {
  void* p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

namespace {

Collector g_collector;

// ---------------------------------------------------------------------------------------------
// Per-thread birth queues: single producer (the allocating thread), single consumer (whoever
// holds the allocation lock). Blocks of addresses linked in order; the consumer unmaps blocks it
// has finished.

constexpr uint32_t kBlockEntries = (1u << 17) - 4;  // a 1 MiB block
struct BirthBlock {
  std::atomic<uint32_t> used{0};
  std::atomic<BirthBlock*> next{nullptr};
  uint64_t addresses[kBlockEntries];
};

struct Births {
  BirthBlock* write = nullptr;        // producer
  BirthBlock* read = nullptr;         // consumer
  uint32_t readPos = 0;               // consumer
  std::atomic<uint32_t> blocks{0};    // blocks not yet released by the consumer
  std::atomic<bool> closed{false};    // the thread exited
  Births* next = nullptr;             // registry
  pthread_t self{};                   // the producing thread, and its recorder thread index
  uint32_t ringIndex = log::kRecorderThread;  // (names its stack in root sets)
};

std::atomic<Births*> g_births{nullptr};  // registry, newest first
__thread Births* t_births HEAPMAN_TLS = nullptr;
pthread_key_t g_birthsKey;

void consolidateLocked();
void* consolidateCallback(void*);

// pthread key destructor. An allocation in a later destructor starts a new queue. The queues are
// drained now, so that a program whose threads come and go between collections does not keep
// each one's queue (1 MiB of address space) until the next one: this thread's own goes at the
// next thread's exit (the registry's head stays while producers may push there).
void closeBirths(void* p) {
  t_births = nullptr;
  static_cast<Births*>(p)->closed.store(true, std::memory_order_release);
  if (!t_inCallback && g_collector.callWithAllocLock)
    g_collector.callWithAllocLock(consolidateCallback, nullptr);
}

Births* threadBirths() {
  if (t_births) return t_births;
  auto* b = static_cast<Births*>(mapBytes(sizeof(Births)));
  auto* block = static_cast<BirthBlock*>(mapBytes(sizeof(BirthBlock)));
  if (!b || !block) return nullptr;
  new (b) Births;
  new (block) BirthBlock;
  b->write = b->read = block;
  b->blocks.store(1, std::memory_order_relaxed);
  b->self = pthread_self();
  if (Ring* r = threadRing()) b->ringIndex = r->index;
  Births* head = g_births.load(std::memory_order_relaxed);
  do {
    b->next = head;
  } while (!g_births.compare_exchange_weak(head, b, std::memory_order_release,
                                           std::memory_order_relaxed));
  t_births = b;
  pthread_setspecific(g_birthsKey, b);
  return b;
}

void* consolidateCallback(void*) {
  consolidateLocked();
  return nullptr;
}

// ---------------------------------------------------------------------------------------------
// The tracked live set, as the sweep wants it: an array of keys in birth order (appending a birth
// and visiting every object are sequential; no hashing). Keys are object addresses; bit 0 marks an
// object of the GC_debug_* family (its recorded address lies past a debug header: the key holds
// the object's base). Explicit frees are rare (none in Mono): each is noted with the array's size
// at that moment and applied at the next compaction to the first birth of its key below that
// mark, so that a later object at the same address (appended after the free) survives, and a free
// of an object the set never held (libgc's own tables) removes nothing. Allocation lock held.

// A growable array of u64 in mmap'd memory.
class Keys {
 public:
  size_t size() const { return size_; }
  uint64_t* data() { return data_; }
  uint64_t& operator[](size_t i) { return data_[i]; }
  bool push(uint64_t k) {
    if (size_ == cap_ && !grow(size_ + 1)) return false;
    data_[size_++] = k;
    return true;
  }
  bool reserve(size_t n) { return n <= cap_ || grow(n); }
  void truncate(size_t n) { size_ = n; }

 private:
  bool grow(size_t need) {
    size_t cap = cap_ ? cap_ : 1u << 16;
    while (cap < need) cap *= 2;
    void* p = data_ ? mremap(data_, cap_ * sizeof(uint64_t), cap * sizeof(uint64_t), MREMAP_MAYMOVE)
                    : mapBytes(cap * sizeof(uint64_t));
    if (!p || p == MAP_FAILED) return false;
    data_ = static_cast<uint64_t*>(p);
    cap_ = cap;
    return true;
  }
  uint64_t* data_ = nullptr;
  size_t size_ = 0, cap_ = 0;
};

Keys g_live;
// Explicit frees not yet applied, as pairs (key, g_live's size when it was freed).
Keys g_freed;

// Applies the pending frees to g_live (order kept). The frees sorted by (key, mark) and a small
// open-addressing index from key to its first pair; each birth of a freed key takes the first
// pending free of that key whose mark lies above it, frees whose mark lies at or below it are
// stale (the object was never tracked) and dropped.
void applyFrees() {
  size_t nf = g_freed.size() / 2;
  if (nf == 0) return;
  struct Pair {
    uint64_t key, mark;
  };
  auto* pairs = reinterpret_cast<Pair*>(g_freed.data());
  std::sort(pairs, pairs + nf, [](const Pair& x, const Pair& y) {
    return x.key != y.key ? x.key < y.key : x.mark < y.mark;
  });
  size_t cap = 16;
  while (cap < nf * 2) cap *= 2;
  // Slot: index of the key's next pending pair + 1 (0: empty).
  auto* index = static_cast<uint64_t*>(mapBytes(cap * sizeof(uint64_t)));
  if (!index) return;  // out of memory: the frees wait for the next compaction
  auto home = [&](uint64_t k) { return static_cast<size_t>((k * 0x9E3779B97F4A7C15ull) >> 20) & (cap - 1); };
  for (size_t i = 0; i < nf; ++i) {
    if (i && pairs[i].key == pairs[i - 1].key) continue;
    size_t h = home(pairs[i].key);
    while (index[h]) h = (h + 1) & (cap - 1);
    index[h] = i + 1;
  }
  size_t out = 0;
  for (size_t i = 0, n = g_live.size(); i < n; ++i) {
    uint64_t k = g_live[i];
    size_t h = home(k);
    while (index[h] && pairs[index[h] - 1].key != k) h = (h + 1) & (cap - 1);
    bool freed = false;
    if (index[h]) {
      size_t at = index[h] - 1;
      while (at < nf && pairs[at].key == k && pairs[at].mark <= i) ++at;  // stale frees
      if (at < nf && pairs[at].key == k) {
        freed = true;
        ++at;
      }
      index[h] = at + 1;  // the key's next pending free (past its pairs: harmless)
    }
    if (!freed) g_live[out++] = k;
  }
  g_live.truncate(out);
  g_freed.truncate(0);
  munmap(index, cap * sizeof(uint64_t));
}

// Allocation lock held.
void consolidateLocked() {
  Births* prev = nullptr;
  for (Births* b = g_births.load(std::memory_order_acquire), *after; b; b = after) {
    after = b->next;
    for (;;) {
      BirthBlock* blk = b->read;
      uint32_t n = blk->used.load(std::memory_order_acquire);
      if (g_live.reserve(g_live.size() + (n - b->readPos)))
        for (uint32_t i = b->readPos; i < n; ++i) g_live.push(blk->addresses[i]);
      b->readPos = n;
      BirthBlock* next = blk->next.load(std::memory_order_acquire);
      if (n < kBlockEntries || !next) break;
      b->read = next;
      b->readPos = 0;
      munmap(blk, sizeof(BirthBlock));
      b->blocks.fetch_sub(1, std::memory_order_relaxed);
    }
    // A thread that exited and whose births are all in the set: unlink (never the list head,
    // where producers push) and unmap.
    if (prev && b->closed.load(std::memory_order_acquire) &&
        b->readPos == b->read->used.load(std::memory_order_acquire) &&
        !b->read->next.load(std::memory_order_acquire)) {
      prev->next = after;
      munmap(b->read, sizeof(BirthBlock));
      munmap(b, sizeof(Births));
      continue;
    }
    prev = b;
  }
}

// An object the set never held (libgc's own tables) is not an error: its Free record is in the
// log, and replay counts it as an unknown free; here its free removes nothing (applyFrees).
void* eraseCallback(void* key) {
  consolidateLocked();
  g_freed.push(reinterpret_cast<uint64_t>(key));
  g_freed.push(g_live.size());
  // Many frees and no collection (GC_disable): apply them now and then, so memory stays bounded.
  if (g_freed.size() / 2 > (1u << 20) && g_freed.size() / 2 > g_live.size() / 4) applyFrees();
  return nullptr;
}

// The collected set of the collection being finished (mmap'd, grown with the live set).
uint64_t* g_collected = nullptr;
size_t g_collectedCap = 0;

// Stack bounds of threads, cached by pthread_t. Allocation lock held.
struct StackInfo {
  pthread_t thread;
  uint64_t low, high;
};
constexpr int kMaxStacks = 1024;
StackInfo g_stacks[kMaxStacks];
int g_stackCount = 0;

// RAM dump policy (HEAPMAN_RAM_DUMPS): off, every, every:N, event:NAME.
enum class DumpPolicy : uint8_t { kOff, kEvery, kEveryNth, kAtEvent };
DumpPolicy g_dumpPolicy = DumpPolicy::kOff;
uint32_t g_dumpEvery = 1;
char g_dumpEvent[256] = {};
std::atomic<bool> g_dumpRequested{false};

void afterForkChild() {
  // The child records into its own log: objects inherited from the parent were not born there.
  g_births.store(nullptr, std::memory_order_relaxed);  // the parent's queues stay mapped, unused
  t_births = nullptr;
  g_live.truncate(0);
  g_freed.truncate(0);
  g_stackCount = 0;
}

}  // namespace

void initTracking(const Collector& c) {
  g_collector = c;
  pthread_key_create(&g_birthsKey, closeBirths);
  if (const char* policy = getenv("HEAPMAN_RAM_DUMPS")) {
    if (std::strcmp(policy, "every") == 0) {
      g_dumpPolicy = DumpPolicy::kEvery;
    } else if (std::strncmp(policy, "every:", 6) == 0) {
      g_dumpPolicy = DumpPolicy::kEveryNth;
      g_dumpEvery = static_cast<uint32_t>(std::max(1l, std::strtol(policy + 6, nullptr, 10)));
    } else if (std::strncmp(policy, "event:", 6) == 0) {
      g_dumpPolicy = DumpPolicy::kAtEvent;
      std::strncpy(g_dumpEvent, policy + 6, sizeof g_dumpEvent - 1);
    }
  }
  pthread_atfork(nullptr, nullptr, afterForkChild);
}

// Hot path: one store and one release store.
void trackBirth(uint64_t key) {
  Births* b = threadBirths();
  if (!b) return;
  BirthBlock* w = b->write;
  uint32_t u = w->used.load(std::memory_order_relaxed);
  if (__builtin_expect(u == kBlockEntries, 0)) {
    auto* block = static_cast<BirthBlock*>(mapBytes(sizeof(BirthBlock)));
    if (!block) return;
    new (block) BirthBlock;
    w->next.store(block, std::memory_order_release);
    b->write = w = block;
    u = 0;
    // Many births and no collection (GC_disable, uncollectable objects): drain under the lock
    // now and then, so the queue stays bounded.
    if (b->blocks.fetch_add(1, std::memory_order_relaxed) >= 8 && !t_inCallback)
      g_collector.callWithAllocLock(consolidateCallback, nullptr);
  }
  w->addresses[u] = key;
  w->used.store(u + 1, std::memory_order_release);
}

void untrack(uint64_t key) {
  if (t_inCallback)
    eraseCallback(reinterpret_cast<void*>(key));  // we hold the lock already
  else
    g_collector.callWithAllocLock(eraseCallback, reinterpret_cast<void*>(key));
}

// The direct mark-bit test (MarkLayout): checked against GC_base/GC_is_marked on every object of
// the sweeps until 200 000 objects agreed, then trusted.
enum class FastMarks : uint8_t { kChecking, kOn, kOff };
FastMarks g_fastMarks = FastMarks::kChecking;
uint32_t g_fastChecked = 0;                 // objects checked both ways
constexpr uint32_t kFastChecks = 200000;

// HEAPMAN_STATS=1: the sweep's cost, printed at exit.
struct SweepStats {
  uint64_t sweeps = 0, objects = 0, ns = 0;
} g_sweepStats;

__attribute__((destructor)) void printSweepStats() {
  if (!g_sweepStats.sweeps || !getenv("HEAPMAN_STATS")) return;
  say("%llu sweeps tested %llu objects in %.1f ms (%.1f ns per object)",
      static_cast<unsigned long long>(g_sweepStats.sweeps),
      static_cast<unsigned long long>(g_sweepStats.objects), g_sweepStats.ns / 1e6,
      g_sweepStats.objects ? static_cast<double>(g_sweepStats.ns) / g_sweepStats.objects : 0.0);
}

size_t sweep(uint64_t debugOffset) {
  uint64_t t0 = monotonicNs();
  consolidateLocked();
  applyFrees();
  if (g_collectedCap < g_live.size()) {
    if (g_collected) munmap(g_collected, g_collectedCap * sizeof(uint64_t));
    g_collectedCap = std::max<size_t>(g_live.size() * 2, 1u << 16);
    g_collected = static_cast<uint64_t*>(mapBytes(g_collectedCap * sizeof(uint64_t)));
    if (!g_collected) {
      g_collectedCap = 0;
      return 0;
    }
  }
  auto* base = g_collector.base;
  auto* isMarked = g_collector.isMarked;
  auto collectedSlow = [&](void* p) { return base(p) != p || !isMarked(p); };
  const MarkLayout& ml = g_collector.marks;
  bool fast = ml.findHeader && g_fastMarks != FastMarks::kOff;
  bool check = g_fastMarks == FastMarks::kChecking;
  // Each 4 KiB block is looked at once. A block in use at the end of a collection holds the
  // object size it held when each tracked object in it was born (freeing it needs them dead,
  // reusing it the lock the collector holds), so they are all still object starts and their mark
  // bits decide; a free block holds none of them. The block's state comes from its header where
  // the layout is known (MarkLayout), else from GC_base on its first object (0: free).
  enum class Block : uint8_t { kUnknown, kFree, kInUse, kMarks };
  uintptr_t lastBlock = UINTPTR_MAX;
  Block state = Block::kUnknown;
  bool viaHeader = false;  // the state came from the header (checked while `check`)
  const uint8_t* header = nullptr;
  auto classify = [&](void* p, uintptr_t block) {
    viaHeader = false;
    if (fast) {
      auto* h = static_cast<const uint8_t*>(ml.findHeader(reinterpret_cast<void*>(block)));
      if (reinterpret_cast<uintptr_t>(h) > 4095) {  // else a forwarding count: no header here
        header = h;
        viaHeader = true;
        void* map;
        std::memcpy(&map, header + ml.mapOffset, sizeof map);
        return map == *ml.invalidMap ? Block::kFree : Block::kMarks;
      }
    }
    void* b = base(p);
    return b == p ? Block::kInUse : b == nullptr ? Block::kFree : Block::kUnknown;
  };
  // One pass: the collected go to the buffer, the survivors move down in place.
  size_t n = 0, kept = 0;
  for (size_t i = 0, total = g_live.size(); i < total; ++i) {
    uint64_t key = g_live[i];
    auto* p = reinterpret_cast<void*>(key & ~uint64_t{1});
    uintptr_t block = reinterpret_cast<uintptr_t>(p) & ~uintptr_t{4095};
    if (block != lastBlock) {
      lastBlock = block;
      state = classify(p, block);
    }
    bool collected;
    switch (state) {
      case Block::kFree: collected = true; break;
      case Block::kInUse: collected = !isMarked(p); break;
      case Block::kMarks: {
        uintptr_t bit = (reinterpret_cast<uintptr_t>(p) - block) >> ml.granuleShift;
        uint64_t word;
        std::memcpy(&word, header + ml.marksOffset + (bit >> 6) * 8, sizeof word);
        collected = !((word >> (bit & 63)) & 1);
        break;
      }
      default: collected = collectedSlow(p); break;  // p is not an object start any more
    }
    if (check && viaHeader && collected != collectedSlow(p)) {
      g_fastMarks = FastMarks::kOff;
      fast = check = false;
      say("the collector's mark bits are not where this build keeps them; sweeping through "
          "GC_base/GC_is_marked");
      collected = collectedSlow(p);
      state = classify(p, block);
    }
    if (collected)
      g_collected[n++] = (key & 1) ? (key & ~uint64_t{1}) + debugOffset : key;
    else
      g_live[kept++] = key;
  }
  if (check && (g_fastChecked += static_cast<uint32_t>(std::min<size_t>(n + kept, 1u << 20))) >= kFastChecks)
    g_fastMarks = FastMarks::kOn;
  g_live.truncate(kept);
  g_sweepStats.sweeps++;
  g_sweepStats.objects += n + kept;
  g_sweepStats.ns += monotonicNs() - t0;
  return n;
}

const uint64_t* collected() { return g_collected; }

void emitCollected(Ring* r, uint32_t gc, const uint64_t* addrs, size_t n) {
  constexpr uint32_t kBatch = 8192;
  for (size_t at = 0; at < n; at += kBatch) {
    auto k = static_cast<uint32_t>(std::min<size_t>(kBatch, n - at));
    RawEvent* e = begin(r, Kind::kCollected, 0, k * sizeof(uint64_t));
    if (!e) continue;  // counted as lost by begin()
    e->a = gc;
    std::memcpy(extraOf(e), addrs + at, k * sizeof(uint64_t));
    commit(r, e);
  }
}

void emitRootSet(Ring* r, uint32_t gc, const RootSetEntry* roots, size_t n) {
  if (RawEvent* e = begin(r, Kind::kRootSet, 0, static_cast<uint32_t>(n * sizeof(RootSetEntry)))) {
    e->a = gc;
    std::memcpy(extraOf(e), roots, n * sizeof(RootSetEntry));
    commit(r, e);
  }
}

bool dumpThisGc(uint32_t gc) {
  switch (g_dumpPolicy) {
    case DumpPolicy::kOff: return false;
    case DumpPolicy::kEvery: return true;
    case DumpPolicy::kEveryNth: return gc % g_dumpEvery == 0;
    case DumpPolicy::kAtEvent: return g_dumpRequested.exchange(false, std::memory_order_relaxed);
  }
  return false;
}

// Two passes over the set: sizes, then bytes (memcpy).
void emitRamDump(Ring* r, uint32_t gc, const RootSetEntry* roots, size_t nroots) {
  uint64_t t0 = monotonicNs();
  auto* size = g_collector.size;
  // Sizes once (into the collected-address buffer, free again once emitCollected copied it).
  if (g_collectedCap < g_live.size()) return;
  size_t count = 0, bytes = 0;
  for (size_t i = 0; i < g_live.size(); ++i) {
    g_collected[count] = size(reinterpret_cast<void*>(g_live[i] & ~uint64_t{1}));
    bytes += g_collected[count++];
  }
  size_t objects = count;
  for (size_t i = 0; i < nroots; ++i) bytes += roots[i].size;
  count += nroots;
  size_t header = sizeof(RamDump) + count * sizeof(RamDump::Entry);
  size_t need = (header + bytes + 4095) & ~size_t{4095};
  // The writer hands the last block back: its pages are already faulted in.
  auto* d = static_cast<RamDump*>(g.spareDump.exchange(nullptr, std::memory_order_acquire));
  if (d && d->mapLength < need) {
    munmap(d, d->mapLength);
    d = nullptr;
  }
  size_t length = d ? d->mapLength : (need + need / 4 + 4095) & ~size_t{4095};
  if (!d) d = static_cast<RamDump*>(mapBytes(length));
  if (!d) return;
  d->mapLength = length;
  d->gcNumber = gc;
  RamDump::Entry* out = d->entries();
  uint64_t off = header;
  uint32_t k = 0;
  auto put = [&](uint64_t address, const void* src, uint64_t len, log::SegmentKind kind) {
    out[k] = {address, len, off, static_cast<uint8_t>(kind), {}};
    std::memcpy(reinterpret_cast<uint8_t*>(d) + off, src, len);
    off += len;
    ++k;
  };
  for (size_t i = 0; i < objects; ++i) {
    auto* p = reinterpret_cast<void*>(g_live[i] & ~uint64_t{1});
    put(reinterpret_cast<uint64_t>(p), p, g_collected[i], log::SegmentKind::kObject);
  }
  // Roots and stacks are ranges the runtime told us about, not memory the collector owns: one may
  // be gone already (a root unregistered late, a thread's stack unmapped). Copied through the
  // kernel, which reports a fault instead of raising one; a range is kept up to where it stops.
  for (size_t i = 0; i < nroots; ++i) {
    iovec local{reinterpret_cast<uint8_t*>(d) + off, static_cast<size_t>(roots[i].size)};
    iovec remote{reinterpret_cast<void*>(roots[i].address), static_cast<size_t>(roots[i].size)};
    ssize_t got = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
    if (got <= 0) continue;
    out[k] = {roots[i].address, static_cast<uint64_t>(got), off,
              static_cast<uint8_t>(roots[i].source == static_cast<uint8_t>(log::RootSource::kThreadStack)
                                       ? log::SegmentKind::kThreadStack
                                       : log::SegmentKind::kStaticRoot),
              {}};
    off += static_cast<uint64_t>(got);
    ++k;
  }
  d->count = k;
  d->copyBytes = off - header;
  d->copyNs = monotonicNs() - t0;
  RawEvent* e = begin(r, Kind::kRamDump, 0, 0);
  if (!e) {
    munmap(d, length);
    return;
  }
  e->a = reinterpret_cast<uint64_t>(d);
  e->b = gc;
  commit(r, e);
}

void emitRootRange(uint64_t low, uint64_t size, bool added, log::RootSource source,
                   const char* label) {
  Ring* r = threadRing();
  if (!r) return;
  auto len = static_cast<uint32_t>(label ? std::min<size_t>(std::strlen(label), 255) : 0);
  if (RawEvent* e = begin(r, Kind::kRootRange, 0, len)) {
    e->heap = static_cast<uint8_t>(source);
    e->a = low;
    e->b = size;
    e->c = added;
    if (len) std::memcpy(extraOf(e), label, len);
    commit(r, e);
  }
}

bool stackOf(pthread_t t, uint64_t& low, uint64_t& high) {
  for (int i = 0; i < g_stackCount; ++i)
    if (pthread_equal(g_stacks[i].thread, t)) {
      low = g_stacks[i].low;
      high = g_stacks[i].high;
      return true;
    }
  if (!threadStackBounds(t, low, high)) return false;
  if (g_stackCount == kMaxStacks) g_stackCount = 0;  // forget old threads
  g_stacks[g_stackCount++] = {t, low, high};
  return true;
}

uint64_t stackInUse(uint64_t low, uint64_t high, uint64_t sp) {
  if (sp > low && sp < high) return sp & ~uint64_t{4095};
  const uint64_t page = 4096;
  low &= ~(page - 1);
  size_t pages = (high - low + page - 1) / page;
  static unsigned char vec[1 << 16];
  if (pages > sizeof vec) {
    low = high - sizeof vec * page;
    pages = sizeof vec;
  }
  if (mincore(reinterpret_cast<void*>(low), pages * page, vec) != 0) return high;
  for (size_t i = 0; i < pages; ++i)
    if (vec[i] & 1) return low + i * page;
  return high;
}

uint32_t threadIndexOf(pthread_t t) {
  for (Births* b = g_births.load(std::memory_order_acquire); b; b = b->next)
    if (!b->closed.load(std::memory_order_acquire) && pthread_equal(b->self, t)) return b->ringIndex;
  return log::kRecorderThread;
}

}  // namespace heapman::rec::gc

namespace heapman::rec {

// A custom event may ask for a RAM dump at the next collection (policy event:NAME).
void noteEventForGc(const char* name, size_t len) {
  using namespace gc;
  if (g_dumpPolicy == DumpPolicy::kAtEvent && std::strlen(g_dumpEvent) == len &&
      std::memcmp(g_dumpEvent, name, len) == 0)
    g_dumpRequested.store(true, std::memory_order_relaxed);
}

}  // namespace heapman::rec
