/* Allocation time stamps: between heapman_event("begin") and heapman_event("end") the main thread
 * makes kRounds rounds of kBurst mallocs and sleeps kSleepMs after each round, reading
 * CLOCK_MONOTONIC just before and just after every malloc. After "end" it prints one line per
 * malloc:
 *
 *   alloc ADDRESS BEFORE_NS AFTER_NS
 *
 * An allocation that follows a sleep must not take the time its thread read before the sleep,
 * and none may be stamped later than it returned (ring.h, "Time"). Nothing is freed before the
 * lines are printed, so the addresses are unique in the window.
 */
#define _GNU_SOURCE
#include <heapman.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "prog_util.h"

enum { kRounds = 12, kBurst = 40, kSleepMs = 30, kAllocs = kRounds * kBurst };

static void* blocks[kAllocs];
static uint64_t before[kAllocs], after[kAllocs];

static uint64_t nowNs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int main(void) {
  heapman_event("begin");
  for (int r = 0; r < kRounds; ++r) {
    for (int i = 0; i < kBurst; ++i) {
      int k = r * kBurst + i;
      before[k] = nowNs();
      blocks[k] = malloc(24 + (size_t)(k % 7) * 8);
      after[k] = nowNs();
      hmt_escape(blocks[k]);
    }
    struct timespec pause = {0, kSleepMs * 1000000L};
    nanosleep(&pause, NULL);
  }
  heapman_event("end");
  for (int k = 0; k < kAllocs; ++k)
    printf("alloc %p %llu %llu\n", blocks[k], (unsigned long long)before[k],
           (unsigned long long)after[k]);
  for (int k = 0; k < kAllocs; ++k) free(blocks[k]);
  return 0;
}
