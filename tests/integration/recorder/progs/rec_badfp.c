/* Calls malloc with a frame-pointer register that points nowhere (0xfff...f8, the value a
 * frameless function in libdw left there when it crashed the recorder's frame walk), and with
 * one that points just below the top of the address space. The recorder must record the
 * allocations and leave the program running.
 * usage: rec_badfp N   (prints "allocs N" and exits 0) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) static void* mallocWithFp(size_t n, uintptr_t fp) {
  void* r;
  /* rbp is saved in r12 and rsp in rbx (both callee-saved, so malloc keeps them); the stack is
   * aligned for the call. Built with -mno-red-zone: the call below rsp must not clobber locals.
   * The operands sit in fixed registers, so none of them can be rbp. */
  __asm__ volatile(
      "mov %%rbp, %%r12\n\t"
      "mov %%rsp, %%rbx\n\t"
      "and $-16, %%rsp\n\t"
      "mov %%rcx, %%rbp\n\t"
      "call malloc@PLT\n\t"
      "mov %%rbx, %%rsp\n\t"
      "mov %%r12, %%rbp"
      : "=a"(r), "+D"(n), "+c"(fp)
      :
      : "rbx", "rdx", "rsi", "r8", "r9", "r10", "r11", "r12", "memory", "cc");
  return r;
}

int main(int argc, char** argv) {
  long n = argc > 1 ? atol(argv[1]) : 1000;
  const uintptr_t bad[] = {(uintptr_t)-8, (uintptr_t)-16, (uintptr_t)-4096, 8, 0};
  long count = 0;
  for (long i = 0; i < n; ++i) {
    void* p = mallocWithFp(16 + (size_t)(i % 64), bad[i % 5]);
    if (!p) return 1;
    ++count;
    free(p);
  }
  printf("allocs %ld\n", count);
  return 0;
}
