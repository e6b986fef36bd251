/* A program with its own SIGSEGV handler: it touches a PROT_NONE page three times, and its
 * handler (SA_SIGINFO) checks the fault address and siglongjmps back. Between "begin" and "end"
 * on the main thread it makes 3 malloc/free pairs of 300 bytes, one before each fault. Prints
 * "handled 3" and exits 0 when every fault reached its handler with the right address.
 */
#define _GNU_SOURCE
#include <heapman.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "prog_util.h"

static sigjmp_buf back;
static void* volatile guard;
static volatile sig_atomic_t handled, wrongAddress;

static void onSegv(int sig, siginfo_t* si, void* ctx) {
  (void)sig;
  (void)ctx;
  if (si->si_addr != guard) wrongAddress = 1;
  ++handled;
  siglongjmp(back, 1);
}

int main(void) {
  guard = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (guard == MAP_FAILED) return 1;
  struct sigaction sa = {0};
  sa.sa_sigaction = onSegv;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGSEGV, &sa, NULL) != 0) return 1;

  heapman_event("begin");
  for (int i = 0; i < 3; ++i) {
    void* p = malloc(300);
    hmt_escape(p);
    free(p);
    if (sigsetjmp(back, 1) == 0) *(volatile int*)guard = 1;
  }
  heapman_event("end");
  printf("handled %d\n", (int)handled);
  return handled == 3 && !wrongAddress ? 0 : 1;
}
