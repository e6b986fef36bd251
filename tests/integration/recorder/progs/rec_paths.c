/* Many call paths to the same two call sites, all at the same depth, for the stack-walk replay
 * (ring.h, StackMemo): run() -> step_0 -> ... -> step_11 -> leaf -> malloc(24), and leaf ->
 * leaf2 -> malloc(40), where step_d is step_a or step_b as bit d of the path says. Every walk
 * therefore starts at the same frame address, and paths that differ in one bit differ in one
 * frame only (bit 0: the outermost step frame, the last one a replay checks). kCalls paths are
 * drawn from kPaths (more than the recorder keeps stacks for), so stacks come back after others.
 * Each function is aligned to 256 bytes and shorter than that, so a return address inside F lies
 * in [F, F + 256). After "end" it prints:
 *
 *   fn NAME ADDR          for step_a, step_b, leaf, leaf2, run
 *   alloc ADDR SITE PATH  each allocation, in order: SITE 1 (leaf) or 2 (leaf2), PATH in hex
 */
#include <heapman.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "prog_util.h"

enum { kDepth = 12, kCalls = 400, kPaths = 9 };

static const unsigned kPathSet[kPaths] = {
    0x000, 0x001, 0x800, 0x801, 0x555, 0x554, 0xAAA, 0xFFF, 0xFFE,
};

static void* blocks[kCalls * 2];
static int sites[kCalls * 2];
static unsigned paths[kCalls * 2];
static int nblocks;
static unsigned current;

HMT_FN void leaf2(void) {
  void* p = malloc(40);
  hmt_escape(p);
  blocks[nblocks] = p;
  sites[nblocks] = 2;
  paths[nblocks++] = current;
}

HMT_FN void leaf(void) {
  void* p = malloc(24);
  hmt_escape(p);
  blocks[nblocks] = p;
  sites[nblocks] = 1;
  paths[nblocks++] = current;
  leaf2();
  hmt_escape(p);
}

HMT_FN void step_a(int depth);
HMT_FN void step_b(int depth);

static inline void descend(int depth) {
  if (depth == kDepth) {
    leaf();
    return;
  }
  if ((current >> depth) & 1)
    step_b(depth + 1);
  else
    step_a(depth + 1);
}

/* Each step's frame holds the call into the next, at depth - 1 (step_0 is called by run). */
HMT_FN void step_a(int depth) {
  descend(depth);
  hmt_escape(&depth);
}

HMT_FN void step_b(int depth) {
  descend(depth);
  hmt_escape(&depth);
}

HMT_FN void run(void) {
  uint32_t rng = 0x9E3779B9u;
  heapman_event("begin");
  for (int i = 0; i < kCalls; ++i) {
    current = kPathSet[hmt_next(&rng) % kPaths];
    descend(0);
  }
  heapman_event("end");
}

int main(void) {
  run();
  printf("fn step_a 0x%" PRIxPTR "\n", (uintptr_t)&step_a);
  printf("fn step_b 0x%" PRIxPTR "\n", (uintptr_t)&step_b);
  printf("fn leaf 0x%" PRIxPTR "\n", (uintptr_t)&leaf);
  printf("fn leaf2 0x%" PRIxPTR "\n", (uintptr_t)&leaf2);
  printf("fn run 0x%" PRIxPTR "\n", (uintptr_t)&run);
  for (int i = 0; i < nblocks; ++i)
    printf("alloc 0x%" PRIxPTR " %d %x\n", (uintptr_t)blocks[i], sites[i], paths[i]);
  for (int i = 0; i < nblocks; ++i) free(blocks[i]);
  return 0;
}
