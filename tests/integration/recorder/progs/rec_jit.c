/* Allocations called from code outside every module, as a JIT's (guile's, Mono's): a trampoline
 * written into an anonymous executable page sets the frame-pointer register to 8 (pointing
 * nowhere, as JIT'ed code that uses rbp as a general register leaves it) and calls
 * alloc_from_jit, which calls malloc(24680). After "end" it prints:
 *
 *   jit ADDR              the trampoline's start (its code is 16 bytes long)
 *   fn alloc_from_jit ADDR
 *   block ADDR            each block allocated (N of them)
 *
 * usage: rec_jit N */
#include <heapman.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "prog_util.h"

enum { kBlockSize = 24680, kMaxBlocks = 64 };

static void* blocks[kMaxBlocks];

__attribute__((noinline, aligned(256))) void* alloc_from_jit(void) {
  void* p = malloc(kBlockSize);
  hmt_escape(p); /* work after the call: no tail call */
  return p;
}

int main(int argc, char** argv) {
  int n = argc > 1 ? atoi(argv[1]) : 4;
  if (n < 1 || n > kMaxBlocks) return 2;
  /* push %rbp; mov $8,%rbp; call *%rdi; pop %rbp; ret (the stack stays 16-byte aligned). */
  static const unsigned char code[] = {0x55, 0x48, 0xc7, 0xc5, 0x08, 0x00, 0x00, 0x00,
                                       0xff, 0xd7, 0x5d, 0xc3, 0x90, 0x90, 0x90, 0x90};
  unsigned char* page =
      mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (page == MAP_FAILED) return 3;
  memcpy(page, code, sizeof code);
  if (mprotect(page, 4096, PROT_READ | PROT_EXEC) != 0) return 4;
  void* (*trampoline)(void* (*)(void)) = (void* (*)(void* (*)(void)))(uintptr_t)page;
  heapman_event("begin");
  for (int i = 0; i < n; ++i) blocks[i] = trampoline(alloc_from_jit);
  heapman_event("end");
  printf("jit %" PRIuPTR "\n", (uintptr_t)page);
  printf("fn alloc_from_jit %" PRIuPTR "\n", (uintptr_t)alloc_from_jit);
  for (int i = 0; i < n; ++i) printf("block %" PRIuPTR "\n", (uintptr_t)blocks[i]);
  for (int i = 0; i < n; ++i) free(blocks[i]);
  return 0;
}
