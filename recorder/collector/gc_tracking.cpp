// Mark-bit snapshots, root sets and RAM dumps of a Boehm-collected heap (gc_tracking.h).
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
#include "libgc_headers.h"

namespace heapman::rec::gc {

__thread bool t_inCallback HEAPMAN_TLS = false;

void* mapBytes(size_t n) {
  void* p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

size_t copyOwnMemory(uint8_t* to, uint64_t low, uint64_t size) {
  iovec local{to, static_cast<size_t>(size)};
  iovec remote{reinterpret_cast<void*>(low), static_cast<size_t>(size)};
  ssize_t got = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
  return got > 0 ? static_cast<size_t>(got) : 0;
}

namespace {

Collector g_collector;

// ---------------------------------------------------------------------------------------------
// The snapshot being built (allocation lock held). A block handed back by the writer is reused:
// its pages are faulted in already.

MarkSnapshot* g_snap = nullptr;
size_t g_snapCap = 0;        // pages g_snap has room for
MarkSnapshot::Page* g_page = nullptr;  // the page objects are being added to
bool g_snapFailed = false;   // out of memory: this collection's snapshot is incomplete

// The snapshot emptied: at its start, and when a walk is abandoned to start again.
void clearSnapshot() {
  g_snap->count = 0;
  g_page = nullptr;
  g_snapFailed = false;
}

bool startSnapshot(uint32_t gc) {
  g_snap = static_cast<MarkSnapshot*>(g.spareMarks.take());
  if (!g_snap) {
    size_t length = MarkSnapshot::bytesFor(1u << 12);
    g_snap = static_cast<MarkSnapshot*>(mapBytes(length));
    if (!g_snap) return false;
    g_snap->mapLength = length;
  }
  g_snapCap = (g_snap->mapLength - sizeof(MarkSnapshot)) / sizeof(MarkSnapshot::Page);
  g_snap->gcNumber = gc;
  clearSnapshot();
  return true;
}

MarkSnapshot::Page* newPage(uint64_t page) {
  if (g_snap->count == g_snapCap) {
    size_t length = MarkSnapshot::bytesFor(g_snapCap * 2);
    void* p = mremap(g_snap, g_snap->mapLength, length, MREMAP_MAYMOVE);
    if (p == MAP_FAILED) {
      g_snapFailed = true;
      return nullptr;
    }
    g_snap = static_cast<MarkSnapshot*>(p);
    g_snap->mapLength = length;
    g_snapCap *= 2;
  }
  MarkSnapshot::Page* pg = &g_snap->pages()[g_snap->count++];
  pg->page = page;
  std::memset(pg->bits, 0, sizeof pg->bits);
  return pg;
}

// A marked object starts at p. The collector reports a block's objects in address order, so
// a page's objects arrive together and each page gets one entry.
inline void addMarked(uint64_t p) {
  uint64_t page = p & ~(MarkSnapshot::kPageBytes - 1);
  if (!g_page || g_page->page != page) {
    g_page = newPage(page);
    if (!g_page) return;
  }
  uint64_t bit = (p & (MarkSnapshot::kPageBytes - 1)) >> 3;
  g_page->bits[bit >> 6] |= uint64_t{1} << (bit & 63);
}

// The RAM dump of this collection, when it has one: its object list is written into the dump
// block while the collector lists the marked objects (RamDump in core/gc_events.h).
RamDump* g_dump = nullptr;
size_t g_dumpObjectBytes = 0;
bool g_forDump = false;

// Room for `bytes` in the dump block (grown with mremap: its pages move, nothing is copied).
bool dumpRoom(size_t bytes) {
  if (bytes <= g_dump->mapLength) return true;
  size_t length = (bytes + bytes / 2 + 4095) & ~size_t{4095};
  void* p = mremap(g_dump, g_dump->mapLength, length, MREMAP_MAYMOVE);
  if (p == MAP_FAILED) return false;
  g_dump = static_cast<RamDump*>(p);
  g_dump->mapLength = length;
  return true;
}

// The dump emptied: at its start, and when a walk is abandoned to start again.
void clearDump() {
  g_dump->objectCount = 0;
  g_dump->rangeCount = 0;
  g_dumpObjectBytes = 0;
}

bool startDump(uint32_t gc) {
  // The writer hands the last block back: its pages are already faulted in.
  g_dump = static_cast<RamDump*>(g.spareDump.take());
  if (!g_dump) {
    size_t length = size_t{1} << 20;
    g_dump = static_cast<RamDump*>(mapBytes(length));
    if (!g_dump) return false;
    g_dump->mapLength = length;
  }
  g_dump->gcNumber = gc;
  clearDump();
  return true;
}

// A dump block not sent to the writer goes back to State::spareDump for the next dump (unmapped
// if two are kept there already).
void keepDumpBlock() {
  if (g_dump) g.spareDump.give(g_dump);
  g_dump = nullptr;
}

inline void addDumpObject(uint64_t address, uint64_t size) {
  size_t at = sizeof(RamDump) + (g_dump->objectCount + 1) * sizeof(RamDump::Object);
  if (!dumpRoom(at)) {
    g_forDump = false;  // out of memory: no dump this time
    return;
  }
  g_dump->objects()[g_dump->objectCount++] = {address, size};
  g_dumpObjectBytes += size;
}

// A block's mark bits (one per 8 bytes, set at each marked object's start) into the snapshot,
// its page added when anything is marked; with a dump, its marked objects of `size` bytes (a
// large object: one, at the block's start). Both collectors' block walks end here.
void addMarkedBlock(uint64_t block, const uint64_t (&bits)[8], uint64_t size) {
  uint64_t any = 0;
  for (uint64_t w : bits) any |= w;
  if (!any) return;  // nothing marked: every tracked object here was collected
  MarkSnapshot::Page* pg = newPage(block);
  if (!pg) return;
  std::memcpy(pg->bits, bits, sizeof bits);
  if (!g_forDump || !size) return;
  if (size > MarkSnapshot::kPageBytes) {
    if (bits[0] & 1) addDumpObject(block, size);
    return;
  }
  for (uint64_t off = 0; off + size <= MarkSnapshot::kPageBytes; off += size)
    if ((bits[off >> 9] >> ((off >> 3) & 63)) & 1) addDumpObject(block + off, size);
}

// Objects whose mark bits read directly are checked against GC_is_marked before the direct read
// is trusted (libgc and Mono's fork alike).
constexpr uint32_t kFastChecks = 200000;

// libgc: the mark bits are read a block at a time from its block headers once the header table
// is found and checked (libgc_headers.h); until then, and for good after any disagreement, one
// call per marked object (GC_enumerate_reachable_objects_inner).
enum class LibgcBlocks : uint8_t { kSearching, kChecking, kOn, kOff };
LibgcBlocks g_libgcBlocks = LibgcBlocks::kSearching;
libgc::Table g_libgcTable;
uint32_t g_libgcChecked = 0;  // objects checked against GC_is_marked
// Objects the enumeration reported, for the search: the first and the latest one.
libgc::KnownObject g_known[2];
int g_knownCount = 0;

// libgc: one call per marked object.
void onReachable(void* p, size_t bytes, void*) {
  auto a = reinterpret_cast<uint64_t>(p);
  addMarked(a);
  if (g_forDump) addDumpObject(a, bytes);
  if (g_libgcBlocks == LibgcBlocks::kSearching) {
    g_known[g_knownCount == 0 ? 0 : 1] = {a, bytes};
    if (g_knownCount < 2) ++g_knownCount;
  }
}

// Which bits of a page's 512 (one per 8 bytes) are object starts in a block of objects of
// `granules` 16-byte granules (objects that end within the block), computed once per size.
const uint64_t* objectStarts(uint64_t granules) {
  static uint64_t masks[libgc::kMaxSmallObject / libgc::kGranuleBytes + 1][8];
  static bool made[libgc::kMaxSmallObject / libgc::kGranuleBytes + 1];
  uint64_t* m = masks[granules];
  if (!made[granules]) {
    uint64_t size = granules * libgc::kGranuleBytes;
    for (uint64_t off = 0; off + size <= libgc::kBlockBytes; off += size)
      m[off >> 9] |= uint64_t{1} << ((off >> 3) & 63);
    made[granules] = true;
  }
  return m;
}

// One block in use (header `hdr`): its mark bytes as snapshot bits, checked against GC_is_marked
// while checking; its page added if anything is marked, and its marked objects to the dump.
// False on a disagreement or a header unlike the layout.
bool onLibgcBlock(uint64_t block, const uint8_t* hdr) {
  using namespace libgc;
  bool check = g_libgcBlocks == LibgcBlocks::kChecking;
  uint64_t size = word(hdr, kHdrSize);
  if (check && (word(hdr, kHdrBlock) != block || size == 0 ||
                (size <= kMaxSmallObject && size % kGranuleBytes)))
    return false;
  if (word(hdr, kHdrMarkCount) == 0) return true;  // nothing marked (the enumeration skips it too)
  const uint8_t* marks = hdr + kHdrMarks;
  uint64_t bits[8] = {};
  if (size > kMaxSmallObject) {
    bits[0] = marks[0] & 1;  // one object, at the block's start
  } else {
    // A byte per 16-byte granule (0 or 1) to a bit per 8 bytes: 8 bytes to 8 bits by one
    // multiplication (byte i lands on bit 56 + i), spread to every other bit of 16.
    for (int w = 0; w < 32; ++w) {
      uint64_t x;
      std::memcpy(&x, marks + 8 * w, sizeof x);
      if (!x) continue;
      uint64_t b = ((x & 0x0101010101010101) * 0x0102040810204080) >> 56;
      b = (b | b << 4) & 0x0F0F;
      b = (b | b << 2) & 0x3333;
      b = (b | b << 1) & 0x5555;
      bits[w >> 2] |= b << (16 * (w & 3));
    }
    // The collector's end marker (the granule after the last whole object) is no object.
    const uint64_t* starts = objectStarts(size / kGranuleBytes);
    for (int i = 0; i < 8; ++i) bits[i] &= starts[i];
  }
  if (check) {
    uint64_t end = size > kMaxSmallObject ? 1 : kBlockBytes - size + 1;
    for (uint64_t off = 0; off < end; off += size) {
      bool marked = g_collector.isMarked(reinterpret_cast<void*>(block + off)) != 0;
      if (marked != (((bits[off >> 9] >> ((off >> 3) & 63)) & 1) != 0)) return false;
      if (++g_libgcChecked >= kFastChecks) g_libgcBlocks = LibgcBlocks::kOn;
    }
  }
  addMarkedBlock(block, bits, size);
  return true;
}

// Every block in use, in GC_apply_to_all_blocks' order (so the snapshot and the dump's object
// list come out as the enumeration's): bottom indices ascending, blocks descending in each, the
// blocks of a large object after its first skipped. False when the table or a header is not as
// found or checked: the snapshot is then incomplete.
bool libgcBlockMarks() {
  using namespace libgc;
  static const uint8_t* indices[4096];
  int n = bottomIndices(g_libgcTable, indices, 4096);
  if (n < 0) return false;
  for (int i = 0; i < n; ++i) {
    const uint8_t* bi = indices[i];
    uint64_t key = word(bi, kKeyOffset);
    for (int64_t j = kBottomSize - 1; j >= 0;) {
      uint64_t hdr = word(bi, static_cast<size_t>(j) * 8);
      if (hdr < kBlockBytes) {
        j -= hdr ? static_cast<int64_t>(hdr) : 1;  // no block, or back to a large object's start
        continue;
      }
      const auto* h = reinterpret_cast<const uint8_t*>(hdr);
      // The header and mark bytes (6 cache lines) of the block 4 entries on: the walk waited for
      // them (guile_churn: 265 -> 185 us a snapshot).
      if (j >= 4)
        if (uint64_t next = word(bi, static_cast<size_t>(j - 4) * 8); next >= kBlockBytes)
          for (size_t line = 0; line <= kHdrMarks + kBlockBytes / kGranuleBytes; line += 64)
            __builtin_prefetch(reinterpret_cast<const void*>(next + line));
      if (!(h[kHdrFlags] & kFreeBlock) &&
          !onLibgcBlock(((key << 10) + static_cast<uint64_t>(j)) * kBlockBytes, h))
        return false;
      --j;
    }
  }
  return true;
}

// HEAPMAN_GC_MARKS=compare: each snapshot read from the block headers is compared with the
// enumeration's list of the same collection: the same pages in the same order, a bit set exactly
// where a listed object starts, and with a dump the same objects and sizes in the same order.
bool g_compareMarks = false;
struct MarksComparison {
  uint64_t snapshots = 0, differed = 0;
  uint32_t page = 0;     // the snapshot page the last listed object lay in, plus one
  uint64_t objects = 0;  // listed objects
  bool same = true;
} g_cmp;

void onReachableCompare(void* p, size_t bytes, void*) {
  auto a = reinterpret_cast<uint64_t>(p);
  uint64_t page = a & ~(MarkSnapshot::kPageBytes - 1);
  const MarkSnapshot::Page* pages = g_snap->pages();
  if (g_cmp.page == 0 || pages[g_cmp.page - 1].page != page) {
    if (g_cmp.page == g_snap->count || pages[g_cmp.page].page != page) {
      g_cmp.same = false;
      return;
    }
    ++g_cmp.page;
  }
  uint64_t bit = (a & (MarkSnapshot::kPageBytes - 1)) >> 3;
  g_cmp.same &= ((pages[g_cmp.page - 1].bits[bit >> 6] >> (bit & 63)) & 1) != 0;
  if (g_forDump)
    g_cmp.same &= g_cmp.objects < g_dump->objectCount &&
                  g_dump->objects()[g_cmp.objects].address == a &&
                  g_dump->objects()[g_cmp.objects].size == bytes;
  ++g_cmp.objects;
}

void compareWithEnumeration() {
  g_cmp.page = 0;
  g_cmp.objects = 0;
  g_cmp.same = true;
  g_collector.enumerateReachable(onReachableCompare, nullptr);
  uint64_t bits = 0;
  for (uint32_t i = 0; i < g_snap->count; ++i)
    for (uint64_t w : g_snap->pages()[i].bits)
      bits += static_cast<uint64_t>(__builtin_popcountll(w));
  bool same = g_cmp.same && g_cmp.page == g_snap->count && bits == g_cmp.objects &&
              (!g_forDump || g_dump->objectCount == g_cmp.objects);
  ++g_cmp.snapshots;
  g_cmp.differed += !same;
}

// After an enumeration, the first time it listed objects: the header table searched for in
// GC_arrays, through those objects.
void searchLibgcTable() {
  if (!g_knownCount) return;  // nothing marked yet: next time
  if (g_collector.libgcArrays &&
      libgc::findTable(g_collector.libgcArrays, g_collector.libgcArraysBytes, g_known, g_knownCount,
                       g_libgcTable)) {
    g_libgcBlocks = LibgcBlocks::kChecking;
    return;
  }
  g_libgcBlocks = LibgcBlocks::kOff;
  say("libgc's block headers were not found; reading its mark bits one object at a time");
}

// Mono's fork: one call per block in use. Its mark bits are copied from the header where the
// layout is known and checked (MarkLayout), else read object by object with GC_is_marked.
enum class FastMarks : uint8_t { kChecking, kOn, kOff };
FastMarks g_fastMarks = FastMarks::kChecking;
uint32_t g_fastChecked = 0;  // objects checked both ways

void onBlock(void* block, unsigned long) {
  auto h = reinterpret_cast<uint64_t>(block);
  const MarkLayout& ml = g_collector.marks;
  bool fast = ml.findHeader && g_fastMarks != FastMarks::kOff;
  bool check = g_fastMarks == FastMarks::kChecking;
  uint64_t bits[8] = {};
  const uint8_t* header = nullptr;
  if (fast) {
    header = static_cast<const uint8_t*>(ml.findHeader(block));
    fast = reinterpret_cast<uintptr_t>(header) > 4095;  // else not a block start
    // A block of small objects must end at 4 KiB (the next address has another header).
    if (fast && check && ml.findHeader(reinterpret_cast<void*>(h + 4096)) == header &&
        g_collector.size(block) <= 2048) {
      say("the collector's blocks are larger than 4 KiB; reading mark bits through GC_is_marked");
      fast = false;
      g_fastMarks = FastMarks::kOff;
    }
  }
  if (fast) std::memcpy(bits, header + ml.marksOffset, sizeof bits);
  size_t size = 0;
  if (!fast || check || g_forDump) size = g_collector.size(block);
  if (!fast || check) {
    // Object starts: every `size` bytes in a block of small objects, the block start for a large
    // object (the bits past them are the collector's own: an end marker).
    uint64_t slow[8] = {};
    uint64_t end = size > 0 && size <= MarkSnapshot::kPageBytes ? MarkSnapshot::kPageBytes : 1;
    for (uint64_t off = 0; size && off + std::min<uint64_t>(size, end) <= end; off += size) {
      if (g_collector.isMarked(reinterpret_cast<void*>(h + off))) {
        uint64_t bit = off >> 3;
        slow[bit >> 6] |= uint64_t{1} << (bit & 63);
      }
      if (fast && check) {
        uint64_t bit = off >> 3;
        bool a = (bits[bit >> 6] >> (bit & 63)) & 1, b = (slow[bit >> 6] >> (bit & 63)) & 1;
        if (a != b) {
          say("the collector's mark bits are not where this build keeps them; reading them "
              "through GC_is_marked");
          g_fastMarks = FastMarks::kOff;
          check = false;
        }
        if (++g_fastChecked >= kFastChecks && g_fastMarks == FastMarks::kChecking)
          g_fastMarks = FastMarks::kOn;
      }
    }
    if (!fast || g_fastMarks == FastMarks::kOff) std::memcpy(bits, slow, sizeof bits);
  }
  addMarkedBlock(h, bits, size);
}

// HEAPMAN_STATS=1: the snapshots' cost, printed at exit.
struct SnapshotStats {
  uint64_t snapshots = 0, pages = 0, ns = 0;
  uint64_t byBlock = 0;  // libgc: snapshots read from its block headers
  uint64_t byBlockChecked = 0, byBlockCheckedNs = 0;  // of them, once checked
} g_snapStats;

__attribute__((destructor)) void printSnapshotStats() {
  if (!g_snapStats.snapshots || !getenv(env::kStats)) return;
  say("%llu mark snapshots (%.0f pages each) took %.1f ms under the collector's lock (%.1f us "
      "each)",
      static_cast<unsigned long long>(g_snapStats.snapshots),
      static_cast<double>(g_snapStats.pages) / g_snapStats.snapshots, g_snapStats.ns / 1e6,
      static_cast<double>(g_snapStats.ns) / 1e3 / g_snapStats.snapshots);
  if (g_collector.enumerateReachable)
    say("libgc mark snapshots: %llu read from block headers, %llu object by object",
        static_cast<unsigned long long>(g_snapStats.byBlock),
        static_cast<unsigned long long>(g_snapStats.snapshots - g_snapStats.byBlock));
  if (g_snapStats.byBlockChecked)
    say("libgc mark snapshots read from block headers once checked took %.1f us each",
        static_cast<double>(g_snapStats.byBlockCheckedNs) / 1e3 / g_snapStats.byBlockChecked);
  if (g_compareMarks)
    say("libgc mark snapshots compared with its enumeration: %llu, %llu differed",
        static_cast<unsigned long long>(g_cmp.snapshots),
        static_cast<unsigned long long>(g_cmp.differed));
}

// Stack bounds of threads, cached by pthread_t. Allocation lock held.
struct StackInfo {
  pthread_t thread;
  uint64_t low, high;
};
constexpr int kMaxStacks = 1024;
StackInfo g_stacks[kMaxStacks];
int g_stackCount = 0;

// Stacks copied while the world was stopped: their ranges, and their bytes in one mmap'd block
// kept from one dump to the next (grown with mremap).
struct StoppedStack {
  uint64_t low, size, offset;  // offset of the bytes in g_stoppedBlock
};
constexpr int kMaxStoppedStacks = 1024;
StoppedStack g_stopped[kMaxStoppedStacks];
int g_stoppedCount = 0;
uint8_t* g_stoppedBlock = nullptr;
size_t g_stoppedLength = 0, g_stoppedUsed = 0;

const StoppedStack* findStopped(uint64_t high) {
  for (int i = 0; i < g_stoppedCount; ++i)
    if (g_stopped[i].low + g_stopped[i].size == high) return &g_stopped[i];
  return nullptr;
}

// Policy event:NAME (State::ramDumps): a NAME event came since the last dump.
std::atomic<bool> g_dumpRequested{false};

void afterForkChild() {
  g_stackCount = 0;
  g_stoppedCount = 0;  // the parent's stacks (one of them at the same address as the child's)
}

}  // namespace

void initTracking(const Collector& c) {
  g_collector = c;
  const char* marks = getenv(env::kGcMarks);
  if (!c.libgcArrays || (marks && std::strcmp(marks, "objects") == 0))
    g_libgcBlocks = LibgcBlocks::kOff;
  g_compareMarks = marks && std::strcmp(marks, "compare") == 0;
  if (!c.enumerateReachable && !c.applyToAllBlocks)
    say("this collector has no way to list its marked objects: collected sets are not recorded");
  pthread_atfork(nullptr, nullptr, afterForkChild);
}

void emitMarks(Ring* r, uint32_t gc, bool forDump) {
  uint64_t t0 = monotonicNs();
  g_forDump = false;
  if (!r || (!g_collector.enumerateReachable && !g_collector.applyToAllBlocks)) return;
  g_forDump = forDump && startDump(gc);
  bool dumping = g_forDump;
  bool checked = false;  // read from libgc's block headers, past the check
  if (!startSnapshot(gc)) return;
  if (g_collector.enumerateReachable) {
    bool byBlock = g_libgcBlocks == LibgcBlocks::kChecking || g_libgcBlocks == LibgcBlocks::kOn;
    bool onBefore = g_libgcBlocks == LibgcBlocks::kOn;
    if (byBlock && !libgcBlockMarks()) {
      say("libgc's block headers are not laid out as this build reads them; reading its mark "
          "bits one object at a time");
      g_libgcBlocks = LibgcBlocks::kOff;
      byBlock = false;
      // Start again: nothing of the walk is kept.
      clearSnapshot();
      g_forDump = dumping;
      if (dumping) clearDump();
    }
    if (!byBlock) g_collector.enumerateReachable(onReachable, nullptr);
    if (byBlock && g_compareMarks && !g_snapFailed) compareWithEnumeration();
    if (g_libgcBlocks == LibgcBlocks::kSearching) searchLibgcTable();
    g_snapStats.byBlock += byBlock;
    checked = byBlock && onBefore;
  } else {
    g_collector.applyToAllBlocks(onBlock, 0);
  }
  uint64_t ns = monotonicNs() - t0;
  g_snapStats.snapshots++;
  g_snapStats.pages += g_snap->count;
  g_snapStats.ns += ns;
  if (checked) {
    g_snapStats.byBlockChecked++;
    g_snapStats.byBlockCheckedNs += ns;
  }
  // An incomplete snapshot would make the writer report live objects as collected: none then
  // (they are reported at the next collection with a complete one).
  RawEvent* e = g_snapFailed ? nullptr : begin(r, Kind::kMarks, 0, 0);
  if (!e) {
    munmap(g_snap, g_snap->mapLength);
    g_snap = nullptr;
    return;
  }
  e->a = reinterpret_cast<uint64_t>(g_snap);
  e->b = gc;
  commit(r, e);
  g_snap = nullptr;
}

void emitRootSet(Ring* r, uint32_t gc, const RootSetEntry* roots, size_t n) {
  if (RawEvent* e = begin(r, Kind::kRootSet, 0, static_cast<uint32_t>(n * sizeof(RootSetEntry)))) {
    e->a = gc;
    std::memcpy(extraOf(e), roots, n * sizeof(RootSetEntry));
    commit(r, e);
  }
}

bool dumpThisGc(uint32_t gc) {
  if (g.ramDumps.kind == env::RamDumps::Kind::kAtEvent)
    return g_dumpRequested.exchange(false, std::memory_order_relaxed);
  return dumpPlanned(gc);
}

bool dumpPlanned(uint32_t gc) {
  using Kind = env::RamDumps::Kind;
  switch (g.ramDumps.kind) {
    case Kind::kOff: return false;
    case Kind::kEvery: return true;
    case Kind::kEveryNth: return gc % g.ramDumps.every == 0;
    case Kind::kAtEvent: return g_dumpRequested.load(std::memory_order_relaxed);
  }
  return false;
}

void beginStoppedStacks() {
  g_stoppedCount = 0;
  g_stoppedUsed = 0;
}

void copyStoppedStack(uint64_t low, uint64_t high) {
  if (high <= low || g_stoppedCount == kMaxStoppedStacks || findStopped(high)) return;
  size_t need = g_stoppedUsed + (high - low);
  if (need > g_stoppedLength) {
    size_t length = (std::max(need, 2 * g_stoppedLength) + (size_t{1} << 20) - 1) &
                    ~((size_t{1} << 20) - 1);
    void* p = g_stoppedBlock ? mremap(g_stoppedBlock, g_stoppedLength, length, MREMAP_MAYMOVE)
                             : mmap(nullptr, length, PROT_READ | PROT_WRITE,
                                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return;  // this stack is then copied after the restart
    g_stoppedBlock = static_cast<uint8_t*>(p);
    g_stoppedLength = length;
  }
  size_t got = copyOwnMemory(g_stoppedBlock + g_stoppedUsed, low, high - low);
  if (got != high - low) return;
  g_stopped[g_stoppedCount++] = {low, got, g_stoppedUsed};
  g_stoppedUsed += got;
}

uint64_t stoppedStackLow(uint64_t high) {
  const StoppedStack* s = findStopped(high);
  return s ? s->low : 0;
}

// The objects emitMarks listed, then the roots and stacks.
void emitRamDump(Ring* r, uint32_t gc, const RootSetEntry* roots, size_t nroots) {
  if (!g_forDump || !g_dump || g_dump->gcNumber != gc) {
    // No dump this time (out of memory while listing): keep the block for the next one.
    keepDumpBlock();
    g_forDump = false;
    return;
  }
  g_forDump = false;
  uint64_t t0 = monotonicNs();
  RamDump* d = g_dump;
  size_t rootBytes = 0;
  for (size_t i = 0; i < nroots; ++i) rootBytes += roots[i].size;
  size_t header = sizeof(RamDump) + d->objectCount * sizeof(RamDump::Object) +
                  nroots * sizeof(RamDump::Range);
  if (!dumpRoom(header + g_dumpObjectBytes + rootBytes)) {
    keepDumpBlock();
    return;
  }
  d = g_dump;
  d->rangeCount = 0;
  d->objectBytesOffset = header;
  // The objects' bytes in list order, one memcpy per run of adjacent objects.
  uint8_t* out = reinterpret_cast<uint8_t*>(d) + header;
  const RamDump::Object* objects = d->objects();
  uint64_t runStart = 0, runLength = 0;
  for (uint32_t i = 0; i < d->objectCount; ++i) {
    if (runLength && objects[i].address == runStart + runLength) {
      runLength += objects[i].size;
      continue;
    }
    if (runLength) std::memcpy(out, reinterpret_cast<const void*>(runStart), runLength);
    out += runLength;
    runStart = objects[i].address;
    runLength = objects[i].size;
  }
  if (runLength) std::memcpy(out, reinterpret_cast<const void*>(runStart), runLength);
  out += runLength;
  // Roots and stacks are ranges the runtime told us about, not memory the collector owns: one may
  // be gone already (a root unregistered late, a thread's stack unmapped), so they are copied
  // through the kernel, and a range is kept up to where it stops. A stack copied while the world
  // was stopped comes from that copy.
  RamDump::Range* ranges = d->ranges();
  for (size_t i = 0; i < nroots; ++i) {
    bool stack = roots[i].source == static_cast<uint8_t>(log::RootSource::kThreadStack);
    const StoppedStack* stopped = stack ? findStopped(roots[i].address + roots[i].size) : nullptr;
    size_t got;
    if (stopped && stopped->low == roots[i].address) {
      std::memcpy(out, g_stoppedBlock + stopped->offset, stopped->size);
      got = stopped->size;
    } else {
      got = copyOwnMemory(out, roots[i].address, roots[i].size);
    }
    if (!got) continue;
    auto kind = stack ? log::SegmentKind::kThreadStack : log::SegmentKind::kStaticRoot;
    ranges[d->rangeCount++] = {roots[i].address, static_cast<uint64_t>(got),
                               static_cast<uint64_t>(out - reinterpret_cast<uint8_t*>(d)),
                               static_cast<uint8_t>(kind), {}};
    out += got;
  }
  d->copyBytes = static_cast<uint64_t>(out - reinterpret_cast<uint8_t*>(d)) - header;
  d->copyNs = monotonicNs() - t0;
  g_dump = nullptr;
  RawEvent* e = begin(r, Kind::kRamDump, 0, 0);
  if (!e) {
    munmap(d, d->mapLength);
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

bool cachedStackOf(pthread_t t, uint64_t& low, uint64_t& high) {
  for (int i = 0; i < g_stackCount; ++i)
    if (pthread_equal(g_stacks[i].thread, t)) {
      low = g_stacks[i].low;
      high = g_stacks[i].high;
      return true;
    }
  return knownThreadStack(t, low, high);  // found as the thread registered with the recorder
}

bool stackOf(pthread_t t, uint64_t& low, uint64_t& high) {
  if (cachedStackOf(t, low, high)) return true;
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
  // Part of the range may not be mapped: the main thread's bounds span its whole reservation
  // (RLIMIT_STACK), which the kernel maps only as the stack grows, and mincore fails (ENOMEM)
  // on any unmapped page. The stack is the mapped part that reaches the top: the first page
  // from which [page, high) is mapped, by binary search (a handful of calls).
  if (mincore(reinterpret_cast<void*>(low), pages * page, vec) != 0) {
    size_t unmapped = 0, mapped = pages;  // [low + unmapped page, high) fails, from `mapped` holds
    while (mapped - unmapped > 1) {
      size_t mid = unmapped + (mapped - unmapped) / 2;
      if (mincore(reinterpret_cast<void*>(low + mid * page), (pages - mid) * page, vec) == 0)
        mapped = mid;
      else
        unmapped = mid;
    }
    if (mapped == pages) return high;  // not even the top page
    low += mapped * page;
    pages -= mapped;
    if (mincore(reinterpret_cast<void*>(low), pages * page, vec) != 0) return high;
  }
  for (size_t i = 0; i < pages; ++i)
    if (vec[i] & 1) return low + i * page;
  return high;
}

uint32_t threadIndexOf(pthread_t t) {
  for (Ring* r = g.rings.load(std::memory_order_acquire); r; r = r->next)
    if (!r->closed.load(std::memory_order_acquire) && pthread_equal(r->thread, t)) return r->index;
  return log::kRecorderThread;
}

void noteEventForGc(const char* name, size_t len) {
  if (g.ramDumps.kind == env::RamDumps::Kind::kAtEvent && g.ramDumps.eventLength == len &&
      std::memcmp(g.ramDumps.event, name, len) == 0)
    g_dumpRequested.store(true, std::memory_order_relaxed);
}

}  // namespace heapman::rec::gc
