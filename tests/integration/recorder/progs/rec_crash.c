/* A program that crashes: between "begin" and the crash it makes N allocations of 64 bytes on
 * the main thread (never freed), writes "allocs N" to stdout with write(2), then dies of
 * SIGSEGV (default action) or abort().
 *
 * Usage: rec_crash segv|abort [N]    (default N 200000)
 */
#define _GNU_SOURCE
#include <heapman.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "prog_util.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: rec_crash segv|abort [N]\n");
    return 2;
  }
  long n = argc > 2 ? atol(argv[2]) : 200000;
  heapman_event("begin");
  for (long i = 0; i < n; ++i) {
    void* p = malloc(64);
    hmt_escape(p);
  }
  char line[64];
  int len = snprintf(line, sizeof line, "allocs %ld\n", n);
  if (write(STDOUT_FILENO, line, (size_t)len) < 0) return 1;
  if (strcmp(argv[1], "abort") == 0) abort();
  volatile int* volatile bad = NULL; /* opaque to the compiler: a real fault, not a trap */
  *bad = 1;
  return 0;
}
