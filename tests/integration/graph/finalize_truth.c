/* Ground truth for the finalization-queue root. Objects the collector finds unreachable that have
 * a finalizer are kept, with everything they reach, until their finalizer has run; finalization
 * is on demand here (GC_set_finalize_on_demand), so they wait for GC_invoke_finalizers.
 * - Collection 1: a (GC_register_finalizer) -> b -> c and d (GC_register_finalizer_no_order)
 *   -> e were dropped: a and d are queued, b, c, e held by them, and dd, the client data of d's
 *   finalizer, held by d's queue entry. k has a finalizer (client data kd) and is still held by
 *   a static: not queued.
 * - GC_invoke_finalizers runs a's and d's finalizers; a's stores a in a static (resurrected).
 *   g -> h (finalizable) is dropped. Collection 2: g is queued; a (with b, c) is alive, held by
 *   the static, no longer by the queue; d, e and dd are freed.
 * - Finalization turns automatic: the next large allocation runs g's finalizer from inside
 *   libgc's allocator, and that finalizer allocates f. Collection 3: the queue is empty, f alive.
 * The objects are built on short-lived threads: no register or stack slot of the main thread can
 * keep one alive by chance (the collector scans them conservatively).
 * The program's own await-finalize proc counts its calls (3, with or without the recorder).
 * Output: "gc1 N", "gc2 N", "gc3 N", "await N", "finalized N", "mine 1" (the getter returns the
 * program's proc), then each object's name and address. */
#define GC_THREADS
#include <gc/gc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

enum { kA, kB, kC, kD, kE, kDD, kG, kH, kK, kKD, kF, kCount };
static const char* const kNames[kCount] = {"a", "b", "c", "d", "e", "dd", "g", "h", "k", "kd", "f"};

static uintptr_t g_hidden[kCount]; /* ~address: no pointer for the collector */
static void** volatile g_a;        /* held until dropped */
static void** volatile g_d;
static void** volatile g_g;
static void* volatile g_k;         /* held throughout */
static void* volatile g_resurrected;
static void* volatile g_fromFinalizer;
static int g_await, g_finalized;

static void GC_CALLBACK on_await(void* obj) {
  (void)obj;
  ++g_await;
}

static void GC_CALLBACK finalize_plain(void* obj, void* data) {
  (void)obj;
  (void)data;
  ++g_finalized;
}

static void GC_CALLBACK finalize_resurrect(void* obj, void* data) {
  (void)data;
  ++g_finalized;
  g_resurrected = obj;
}

static void GC_CALLBACK finalize_allocate(void* obj, void* data) {
  (void)obj;
  (void)data;
  ++g_finalized;
  g_fromFinalizer = GC_malloc(48);
  g_hidden[kF] = ~(uintptr_t)g_fromFinalizer;
}

static void* object(int which, size_t size) {
  void* p = GC_malloc(size);
  g_hidden[which] = ~(uintptr_t)p;
  return p;
}

static void* build_first(void* unused) {
  (void)unused;
  void** a = object(kA, 32);
  void** b = object(kB, 32);
  b[0] = object(kC, 32);
  a[0] = b;
  GC_register_finalizer(a, finalize_resurrect, NULL, NULL, NULL);
  void** d = object(kD, 48);
  d[1] = object(kE, 64);
  GC_register_finalizer_no_order(d, finalize_plain, object(kDD, 40), NULL, NULL);
  g_k = object(kK, 16);
  GC_register_finalizer(g_k, finalize_plain, object(kKD, 40), NULL, NULL);
  g_a = a;
  g_d = d;
  return NULL;
}

static void* build_second(void* unused) {
  (void)unused;
  void** g = object(kG, 80);
  g[2] = object(kH, 24);
  GC_register_finalizer(g, finalize_allocate, NULL, NULL, NULL);
  g_g = g;
  return NULL;
}

static void on_thread(void* (*fn)(void*)) {
  pthread_t t;
  if (pthread_create(&t, NULL, fn, NULL) == 0) pthread_join(t, NULL);
}

static __attribute__((noinline)) void scrub(void) {
  volatile char junk[16384];
  memset((char*)junk, 0, sizeof junk);
}

int main(void) {
  GC_INIT();
  GC_set_finalize_on_demand(1);
  GC_set_await_finalize_proc(on_await);
  on_thread(build_first);
  g_a = NULL;
  g_d = NULL;
  scrub();
  GC_gcollect();
  unsigned long gc1 = GC_get_gc_no();
  GC_invoke_finalizers();
  on_thread(build_second);
  g_g = NULL;
  scrub();
  GC_gcollect();
  unsigned long gc2 = GC_get_gc_no();
  GC_set_finalize_on_demand(0);
  void* volatile big = GC_malloc(100000); /* a large object: libgc's allocator runs finalizers */
  (void)big;
  big = NULL;
  scrub();
  GC_gcollect();
  unsigned long gc3 = GC_get_gc_no();
  printf("gc1 %lu\ngc2 %lu\ngc3 %lu\n", gc1, gc2, gc3);
  printf("await %d\nfinalized %d\nmine %d\n", g_await, g_finalized,
         GC_get_await_finalize_proc() == on_await);
  for (int i = 0; i < kCount; ++i) printf("%s 0x%lx\n", kNames[i], (unsigned long)~g_hidden[i]);
  return g_resurrected && g_fromFinalizer && g_k ? 0 : 1;
}
