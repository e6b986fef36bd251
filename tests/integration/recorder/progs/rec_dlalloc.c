/* A module that rec_dlopen loads with dlopen: it allocates on the caller's behalf. */
#include <stdlib.h>

#include "prog_util.h"

__attribute__((noinline)) void* dlalloc_make(size_t n) {
  void* p = malloc(n);
  hmt_escape(p);
  return p;
}
