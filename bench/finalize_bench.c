/* Finalizer traffic on bdwgc (bench/run_finalize_bench.sh): ROUNDS rounds, each registering a
 * finalizer (GC_register_finalizer_no_order, with 16 bytes of client data) on N fresh 32-byte
 * objects, dropping them, collecting (which queues them all) and running the finalizers
 * (GC_invoke_finalizers; finalization on demand). Times from CLOCK_MONOTONIC inside the program:
 *   register ns    allocation + registration, per object
 *   collect ms     GC_gcollect per round (the queueing, and the recorder's work at the end of it)
 *   invoke ns      GC_invoke_finalizers per finalizer
 * Output: "key value" lines; "finalized" is ROUNDS * N, or a few less when a stale register kept
 * one of the last objects alive (the collector scans conservatively). */
#include <gc/gc.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long g_finalized;

static void GC_CALLBACK on_finalize(void* obj, void* data) {
  (void)obj;
  (void)data;
  ++g_finalized;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static __attribute__((noinline)) void drop(long n) {
  for (long i = 0; i < n; ++i) {
    void* p = GC_malloc(32);
    GC_register_finalizer_no_order(p, on_finalize, GC_malloc(16), NULL, NULL);
  }
}

int main(int argc, char** argv) {
  long n = argc > 1 ? atol(argv[1]) : 100000;
  int rounds = argc > 2 ? atoi(argv[2]) : 10;
  GC_INIT();
  GC_set_finalize_on_demand(1);
  double reg = 0, collect = 0, invoke = 0;
  for (int r = 0; r < rounds; ++r) {
    double t0 = now();
    drop(n);
    double t1 = now();
    GC_gcollect();
    double t2 = now();
    GC_invoke_finalizers();
    double t3 = now();
    reg += t1 - t0;
    collect += t2 - t1;
    invoke += t3 - t2;
  }
  printf("objects %ld\nrounds %d\nfinalized %ld\n", n, rounds, g_finalized);
  printf("register_ns %.1f\ncollect_ms %.2f\ninvoke_ns %.1f\n", reg * 1e9 / (n * rounds),
         collect * 1e3 / rounds, invoke * 1e9 / (n * rounds));
  return 0;
}
