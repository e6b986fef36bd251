/* Custom events and frame marks, from the main thread and from a helper thread that takes turns
 * with it (so the global order is fixed). After heapman_event("end") it prints every call it made
 * between the markers, in order (T: 0 main thread, 1 helper thread):
 *
 *   event T NAME
 *   data T NAME HEX       HEX: the payload bytes, "-" when empty
 *   frame T N             the N-th heapman_frame() call of the process
 *
 * Event names are built in a reused stack buffer (the recorder must copy them), and include a
 * UTF-8 name and a long one. Payloads go up to 16 KiB (what heapman.h promises to keep).
 *
 * Usage: rec_events          the workload above
 *        rec_events noop     without the recorder: checks that the heapman.h calls neither
 *                            allocate nor take measurable time, prints "noop ok"
 */
#define _GNU_SOURCE
#include <heapman.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "prog_util.h"

enum { kFrames = 50, kRounds = 20, kMaxOps = 512, kArena = 1 << 20, kNameMax = 160 };

struct Op {
  char kind; /* 'e' event, 'd' data, 'f' frame */
  int thread;
  char name[kNameMax];
  size_t offset, length; /* payload in arena */
  unsigned frame;
};

static struct Op ops[kMaxOps];
static size_t nops;
static unsigned char arena[kArena];
static size_t arenaUsed;
static unsigned frames;

static void note(char kind, int thread, const char* name, const void* data, size_t len) {
  struct Op* o = &ops[nops++];
  o->kind = kind;
  o->thread = thread;
  snprintf(o->name, sizeof o->name, "%s", name ? name : "");
  o->offset = arenaUsed;
  o->length = len;
  if (len) memcpy(arena + arenaUsed, data, len);
  arenaUsed += len;
  o->frame = kind == 'f' ? ++frames : 0;
}

static void event(int thread, const char* name) {
  heapman_event(name);
  note('e', thread, name, NULL, 0);
}
static void eventData(int thread, const char* name, const void* data, size_t len) {
  heapman_event_data(name, data, len);
  note('d', thread, name, data, len);
}
static void frame(int thread) {
  heapman_frame();
  note('f', thread, NULL, NULL, 0);
}

/* Turn-taking between main (even turns) and helper (odd turns). */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int turn;

static void* helper(void* arg) {
  (void)arg;
  for (int i = 0; i < kRounds; ++i) {
    pthread_mutex_lock(&mu);
    while (turn != 2 * i + 1) pthread_cond_wait(&cv, &mu);
    uint32_t v = 0xC0DE0000u + (uint32_t)i;
    eventData(1, "pong", &v, sizeof v);
    if (i % 5 == 0) frame(1);
    ++turn;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
  }
  return NULL;
}

static int workload(void) {
  static const size_t lengths[] = {0, 1, 7, 64, 255, 1000, 4096, 16384};
  static unsigned char payload[16384];
  char name[kNameMax];
  uint32_t state = 12345;

  heapman_event("begin");
  for (int k = 1; k <= kFrames; ++k) {
    frame(0);
    event(0, "tick");
    size_t len = lengths[(size_t)k % (sizeof lengths / sizeof lengths[0])];
    for (size_t i = 0; i < len; ++i) payload[i] = (unsigned char)(hmt_next(&state) >> 24);
    if (len > 2) payload[1] = 0; /* NULs inside payloads are data */
    eventData(0, "payload", payload, len);
    if (k % 10 == 0) {
      snprintf(name, sizeof name, "level_end#%d", k / 10);
      event(0, name);
      memset(name, 'X', sizeof name - 1); /* the recorder must have copied the name */
    }
  }
  event(0,
        "caf\xc3\xa9_\xc3\xbcn\xc3\xaf"
        "code");
  memset(name, 0, sizeof name);
  for (int i = 0; i < 120; ++i) name[i] = (char)('a' + i % 26);
  event(0, name);

  pthread_t t;
  if (pthread_create(&t, NULL, helper, NULL) != 0) {
    fprintf(stderr, "rec_events: pthread_create failed\n");
    return 1;
  }
  for (int i = 0; i < kRounds; ++i) {
    pthread_mutex_lock(&mu);
    while (turn != 2 * i) pthread_cond_wait(&cv, &mu);
    uint32_t v = 0xBEEF0000u + (uint32_t)i;
    eventData(0, "ping", &v, sizeof v);
    ++turn;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
  }
  pthread_join(t, NULL);
  frame(0);
  heapman_event("end");

  for (size_t i = 0; i < nops; ++i) {
    const struct Op* o = &ops[i];
    if (o->kind == 'e') {
      printf("event %d %s\n", o->thread, o->name);
    } else if (o->kind == 'f') {
      printf("frame %d %u\n", o->thread, o->frame);
    } else {
      printf("data %d %s ", o->thread, o->name);
      if (!o->length) fputs("-", stdout);
      for (size_t j = 0; j < o->length; ++j) printf("%02x", arena[o->offset + j]);
      putchar('\n');
    }
  }
  return 0;
}

static double nowSeconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Without the recorder every heapman.h call must do nothing: no heap use, no measurable cost. */
static int noopCheck(void) {
  static const char data[4] = {1, 2, 3, 4};
  heapman_event("warm"); /* nothing to warm, but be fair to a lazy implementation */
  struct mallinfo2 before = mallinfo2();
  double t0 = nowSeconds();
  enum { kCalls = 1000000 };
  for (int i = 0; i < kCalls; ++i) {
    heapman_event("noop");
    heapman_event_data("noop", data, sizeof data);
    heapman_frame();
  }
  double elapsed = nowSeconds() - t0;
  struct mallinfo2 after = mallinfo2();
  if (after.uordblks != before.uordblks || after.arena != before.arena ||
      after.hblkhd != before.hblkhd) {
    printf("noop: heap changed (in use %zu -> %zu bytes)\n", before.uordblks, after.uordblks);
    return 1;
  }
  /* 3M calls; even 100 ns each would be 0.3 s. A no-op costs ~1 ns. */
  if (elapsed > 0.3) {
    printf("noop: %d calls took %.3f s\n", 3 * kCalls, elapsed);
    return 1;
  }
  printf("noop ok\n");
  return 0;
}

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "noop") == 0) return noopCheck();
  if (argc > 1) {
    fprintf(stderr, "usage: rec_events [noop]\n");
    return 2;
  }
  return workload();
}
