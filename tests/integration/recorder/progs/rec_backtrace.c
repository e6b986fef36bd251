/* Known call chains for the backtrace test: run() -> chain_a() -> chain_b() -> chain_c() ->
 * malloc(12345), three times from the same call site, and run() -> chain_c() -> malloc(54321)
 * once. Each function is aligned to 256 bytes and much shorter than that, so a return address
 * inside function F lies in [F, F + 256) and in no other function's range. After "end" it prints
 * the runtime addresses (load bias included):
 *
 *   fn NAME ADDR          for chain_a, chain_b, chain_c, run
 *   chain ADDR            each block allocated through run -> a -> b -> c
 *   direct ADDR           the block allocated through run -> c
 */
#include <heapman.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "prog_util.h"

enum { kChainSize = 12345, kDirectSize = 54321, kChainCalls = 3 };

static void* chainBlocks[kChainCalls];
/* volatile: GCC unrolls a 3-iteration loop even at -O1, which would give each call its own
 * return address; the test wants one call site. */
static volatile int chainCalls = kChainCalls;
static void* directBlock;

HMT_FN void* chain_c(size_t n) {
  void* p = malloc(n);
  hmt_escape(p); /* work after the call: no tail call */
  return p;
}

HMT_FN void* chain_b(size_t n) {
  void* p = chain_c(n);
  hmt_escape(p);
  return p;
}

HMT_FN void* chain_a(size_t n) {
  void* p = chain_b(n);
  hmt_escape(p);
  return p;
}

HMT_FN void run(void) {
  heapman_event("begin");
  for (int i = 0; i < chainCalls; ++i) chainBlocks[i] = chain_a(kChainSize);
  directBlock = chain_c(kDirectSize);
  hmt_escape(directBlock);
  heapman_event("end");
}

int main(void) {
  run();
  printf("fn chain_a 0x%" PRIxPTR "\n", (uintptr_t)&chain_a);
  printf("fn chain_b 0x%" PRIxPTR "\n", (uintptr_t)&chain_b);
  printf("fn chain_c 0x%" PRIxPTR "\n", (uintptr_t)&chain_c);
  printf("fn run 0x%" PRIxPTR "\n", (uintptr_t)&run);
  for (int i = 0; i < kChainCalls; ++i) printf("chain 0x%" PRIxPTR "\n", (uintptr_t)chainBlocks[i]);
  printf("direct 0x%" PRIxPTR "\n", (uintptr_t)directBlock);
  for (int i = 0; i < kChainCalls; ++i) free(chainBlocks[i]);
  free(directBlock);
  return 0;
}
