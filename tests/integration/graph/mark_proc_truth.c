/* Ground truth for roots that only the program knows:
 * - as guile's VM stacks: three objects are held only from an mmap'd region the collector never
 *   scans; an object of a custom kind, held by a static, has a mark procedure that pushes the
 *   region's words (GC_MARK_AND_PUSH);
 * - as ECL's roots: two objects are held only from a second mmap'd region that the program's
 *   push-other-roots procedure pushes with GC_push_all (chained to the collector's own).
 * After one collection the program prints "gc N", then "marked0..2 ADDRESS", "holder ADDRESS"
 * and "pushed0..1 ADDRESS". The heap graph must find them all reachable, each from a root of its
 * kind. */
#include <gc/gc.h>
#include <gc/gc_mark.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

enum { kSlots = 3 };

static void** g_region; /* mmap'd: not a root, not in the heap */
static void** g_pushed; /* the same, pushed by push_roots */
static GC_push_other_roots_proc g_collector_push;
static void* volatile g_holder;

static struct GC_ms_entry* mark_region(GC_word* addr, struct GC_ms_entry* msp,
                                       struct GC_ms_entry* lim, GC_word env) {
  (void)addr;
  (void)env;
  for (int i = 0; i < kSlots; ++i)
    msp = GC_MARK_AND_PUSH(g_region[i], msp, lim, &g_region[i]);
  return msp;
}

static void GC_CALLBACK push_roots(void) {
  if (g_collector_push) g_collector_push(); /* the collector's own (thread stacks) */
  GC_push_all(g_pushed, g_pushed + 2);
}

static __attribute__((noinline)) void build(void) {
  g_region = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (g_region == MAP_FAILED) return;
  unsigned proc = GC_new_proc(mark_region);
  int kind = (int)GC_new_kind(GC_new_free_list(), GC_MAKE_PROC(proc, 0), 0, 1);
  g_holder = GC_generic_malloc(16, kind);
  for (int i = 0; i < kSlots; ++i) {
    g_region[i] = GC_malloc(32);
    memset(g_region[i], 0, 32);
  }
  g_pushed = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (g_pushed == MAP_FAILED) return;
  g_pushed[0] = GC_malloc(24);
  g_pushed[1] = GC_malloc(24);
  g_collector_push = GC_get_push_other_roots();
  GC_set_push_other_roots(push_roots);
}

static __attribute__((noinline)) void scrub(void) {
  volatile char junk[16384];
  memset((char*)junk, 0, sizeof junk);
}

int main(void) {
  GC_INIT();
  build();
  if (g_region == MAP_FAILED || g_pushed == MAP_FAILED) return 1;
  scrub();
  GC_gcollect();
  printf("gc %lu\n", (unsigned long)GC_get_gc_no());
  for (int i = 0; i < kSlots; ++i) printf("marked%d 0x%lx\n", i, (unsigned long)g_region[i]);
  printf("holder 0x%lx\n", (unsigned long)g_holder);
  for (int i = 0; i < 2; ++i) printf("pushed%d 0x%lx\n", i, (unsigned long)g_pushed[i]);
  return 0;
}
