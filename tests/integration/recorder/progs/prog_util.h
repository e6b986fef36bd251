/* Helpers shared by the recorder test programs (C and C++).
 *
 * The programs bracket a known workload with heapman_event("begin") / heapman_event("end") and
 * print, after "end", what they did (a manifest) for the test to compare with the log. Nothing
 * between the markers may allocate except the workload itself: the manifests are kept in static
 * tables and printed only after "end" (the first printf allocates stdio's buffer).
 */
#ifndef HEAPMAN_TEST_PROG_UTIL_H
#define HEAPMAN_TEST_PROG_UTIL_H

#include <stdint.h>

/* A function aligned to 256 bytes and kept out of line (and uncloned): shorter than that, its
 * return addresses lie in [F, F + 256) and in no other such function's range. */
#if defined(__clang__)
#define HMT_FN __attribute__((noinline, aligned(256)))
#else
#define HMT_FN __attribute__((noinline, noclone, aligned(256)))
#endif

/* Makes p escape to the compiler, so that a malloc/free (or new/delete) pair is not elided. */
static inline void hmt_escape(const void* p) {
  __asm__ volatile("" : : "r"(p) : "memory");
}

/* Deterministic sizes and bytes (xorshift32). Precondition: *state != 0. */
static inline uint32_t hmt_next(uint32_t* state) {
  uint32_t x = *state;
  x ^= x << 13;
  x ^= x >> 17;
  x ^= x << 5;
  *state = x;
  return x;
}

#endif
