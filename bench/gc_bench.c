// bdwgc benchmark program (bench/run_gc_bench.sh): small GC_malloc allocations (16-64 B) made
// ~20 frames deep, building small structures that mostly die at once while a fixed live set
// keeps a share of them, so that the collector runs regularly on a steady heap.
//
//   gc_bench [ALLOCS] [LIVE]
//     ALLOCS  allocations to make (default 10 000 000)
//     LIVE    structures kept alive (default 20 000; one structure is 16 allocations, ~600 B)
//   gc_bench --memcpy MB
//     reference for RAM dump copies: memcpy speed of MB MiB into a warm buffer and into freshly
//     mmap'd memory (page faults included, as in a dump's first touch of its block)
//
// Prints (stdout, one "key value" per line) what it measured itself, so that a recorder's
// start-up, exit and log writing stay out of the figure:
//   allocs, work_ns (CLOCK_MONOTONIC around the allocation loop), ns_per_alloc,
//   thread_cpu_ns (CPU time of this thread in the loop: robust to other load on the machine),
//   process_cpu_ns (CPU time of all threads in the loop: the collector's marker threads and a
//   recorder's writer thread included),
//   gcs (collections during the loop), gc_pause_ns_total / gc_pause_ns_mean (GC_EVENT_START to
//   GC_EVENT_END as seen by this program's collection callback: the recorder chains it and does
//   its own work at RECLAIM_END, inside that span), gc_pause_cpu_ns_mean (the same span in CPU
//   time of the collecting thread), full_gc_total_ms (libgc's own count,
//   millisecond resolution), checksum (a value derived from the data, to keep the work real).
//
// Built with frame pointers and no inlining of the call chain (bench/CMakeLists.txt): each
// allocation's stack has 20+ real frames, and 64 different paths through the chain give 64
// distinct stacks per allocation site.
#define GC_THREADS
#include <gc/gc.h>

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

enum { kChainDepth = 20, kNodesPerStructure = 8 };

struct Node {
  struct Node* next;
  char* payload;         // 16-64 bytes, GC_malloc (scanned: the benchmark does not use atomic)
  uint64_t value;
  uint64_t pad;          // 32 bytes in all
};

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static inline uint64_t nextRandom(void) {  // xorshift64
  g_rng ^= g_rng << 13;
  g_rng ^= g_rng >> 7;
  g_rng ^= g_rng << 17;
  return g_rng;
}

static uint64_t clockNs(clockid_t clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
static uint64_t now(void) { return clockNs(CLOCK_MONOTONIC); }

// ---- GC pauses as the program sees them ----------------------------------------------------
// Wall time, and CPU time of the collecting thread (robust to other load on the machine; this
// libgc marks on the collecting thread alone here: process and thread CPU time agree).
static uint64_t g_gcStart, g_gcStartCpu, g_pauseTotal, g_pauseCpuTotal, g_pauses;
static void GC_CALLBACK onCollection(GC_EventType e) {
  if (e == GC_EVENT_START) {
    g_gcStart = now();
    g_gcStartCpu = clockNs(CLOCK_THREAD_CPUTIME_ID);
  } else if (e == GC_EVENT_END && g_gcStart) {
    g_pauseTotal += now() - g_gcStart;
    g_pauseCpuTotal += clockNs(CLOCK_THREAD_CPUTIME_ID) - g_gcStartCpu;
    ++g_pauses;
    g_gcStart = 0;
  }
}

// ---- the leaf: two allocation sites ---------------------------------------------------------
static uint64_t g_allocs;

__attribute__((noinline)) static char* newPayload(uint64_t r) {
  size_t n = 16 + (size_t)(r % 49);  // 16..64 bytes
  char* p = GC_malloc(n);
  p[0] = (char)r;
  p[n - 1] = (char)(r >> 8);
  ++g_allocs;
  return p;
}

__attribute__((noinline)) static struct Node* newNode(struct Node* next, uint64_t r) {
  struct Node* n = GC_malloc(sizeof *n);
  n->next = next;
  n->value = r;
  ++g_allocs;
  n->payload = newPayload(r >> 16);
  return n;
}

__attribute__((noinline)) static struct Node* build(uint64_t r) {
  struct Node* head = NULL;
  for (int i = 0; i < kNodesPerStructure; ++i) head = newNode(head, r + (uint64_t)i);
  return head;
}

// ---- the call chain: at each level one of two functions, chosen by a bit of the path ---------
typedef struct Node* (*Step)(int depth, unsigned path, uint64_t r);
static struct Node* stepA(int depth, unsigned path, uint64_t r);
static struct Node* stepB(int depth, unsigned path, uint64_t r);

static inline struct Node* descend(int depth, unsigned path, uint64_t r) {
  if (depth == kChainDepth) return build(r);
  Step next = (path >> (depth % 6)) & 1 ? stepB : stepA;
  return next(depth + 1, path, r);
}
// Opaque to the optimizer (no tail calls, no merging): each level keeps a real frame.
__attribute__((noinline)) static struct Node* stepA(int depth, unsigned path, uint64_t r) {
  struct Node* n = descend(depth, path, r);
  __asm__ volatile("" ::"r"(n) : "memory");
  return n;
}
__attribute__((noinline)) static struct Node* stepB(int depth, unsigned path, uint64_t r) {
  struct Node* n = descend(depth, path, r ^ 1);
  __asm__ volatile("" ::"r"(n) : "memory");
  return n;
}

static uint64_t checksum(const struct Node* n) {
  uint64_t s = 0;
  for (; n; n = n->next) s += n->value + (unsigned char)n->payload[0];
  return s;
}

static int memcpyBench(size_t mb) {
  size_t n = mb << 20;
  char* src = malloc(n);
  char* dst = malloc(n);
  if (!src || !dst) return 1;
  memset(src, 1, n);
  memset(dst, 2, n);
  uint64_t best = UINT64_MAX, bestFresh = UINT64_MAX;
  for (int run = 0; run < 5; ++run) {
    uint64_t t0 = now();
    memcpy(dst, src, n);
    uint64_t t1 = now();
    __asm__ volatile("" ::"r"(dst) : "memory");
    if (t1 - t0 < best) best = t1 - t0;
    void* fresh = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (fresh == MAP_FAILED) return 1;
    t0 = now();
    memcpy(fresh, src, n);
    t1 = now();
    __asm__ volatile("" ::"r"(fresh) : "memory");
    munmap(fresh, n);
    if (t1 - t0 < bestFresh) bestFresh = t1 - t0;
  }
  printf("memcpy_mb %zu\n", mb);
  printf("memcpy_warm_us_per_mb %.1f\n", (double)best / 1e3 / (double)mb);
  printf("memcpy_fresh_mmap_us_per_mb %.1f\n", (double)bestFresh / 1e3 / (double)mb);
  free(src);
  free(dst);
  return 0;
}

int main(int argc, char** argv) {
  if (argc > 2 && strcmp(argv[1], "--memcpy") == 0) return memcpyBench(strtoull(argv[2], NULL, 10));
  uint64_t allocs = argc > 1 ? strtoull(argv[1], NULL, 10) : 10000000;
  size_t live = argc > 2 ? strtoull(argv[2], NULL, 10) : 20000;
  if (live == 0) live = 1;

  GC_INIT();
  GC_start_performance_measurement();
  GC_set_on_collection_event(onCollection);
  // The live set: a table of structures, itself a GC object reached from this static root.
  static struct Node** table;
  table = GC_malloc(live * sizeof *table);

  // Warm-up: fill the live set (not timed).
  for (size_t i = 0; i < live; ++i) table[i] = stepA(0, (unsigned)nextRandom(), nextRandom());

  unsigned long gc0 = (unsigned long)GC_get_gc_no();
  uint64_t pause0 = g_pauseTotal, pauseCpu0 = g_pauseCpuTotal, pauses0 = g_pauses;
  unsigned long full0 = GC_get_full_gc_total_time();
  uint64_t sum = 0, startAllocs = g_allocs;
  uint64_t c0 = clockNs(CLOCK_THREAD_CPUTIME_ID), p0 = clockNs(CLOCK_PROCESS_CPUTIME_ID);
  uint64_t t0 = now();
  while (g_allocs - startAllocs < allocs) {
    uint64_t r = nextRandom();
    struct Node* s = stepA(0, (unsigned)(r & 63), r >> 6);
    sum += checksum(s);
    if ((r >> 40) % 8 == 0) table[(r >> 20) % live] = s;  // one in 8 joins the live set
  }
  uint64_t t1 = now();
  uint64_t c1 = clockNs(CLOCK_THREAD_CPUTIME_ID), p1 = clockNs(CLOCK_PROCESS_CPUTIME_ID);
  uint64_t made = g_allocs - startAllocs;

  printf("allocs %" PRIu64 "\n", made);
  printf("work_ns %" PRIu64 "\n", t1 - t0);
  printf("ns_per_alloc %.2f\n", (double)(t1 - t0) / (double)made);
  printf("thread_cpu_ns %" PRIu64 "\n", c1 - c0);
  printf("process_cpu_ns %" PRIu64 "\n", p1 - p0);
  printf("gcs %lu\n", (unsigned long)GC_get_gc_no() - gc0);
  uint64_t np = g_pauses - pauses0;
  printf("gc_pause_ns_total %" PRIu64 "\n", g_pauseTotal - pause0);
  printf("gc_pause_ns_mean %.0f\n", np ? (double)(g_pauseTotal - pause0) / (double)np : 0.0);
  printf("gc_pause_cpu_ns_mean %.0f\n",
         np ? (double)(g_pauseCpuTotal - pauseCpu0) / (double)np : 0.0);
  printf("full_gc_total_ms %lu\n", GC_get_full_gc_total_time() - full0);
  printf("heap_bytes %zu\n", GC_get_heap_size());
  printf("checksum %" PRIu64 "\n", sum);
  return 0;
}
