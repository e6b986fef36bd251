/* Modules loaded one after another while recording: between "begin" and "end" on the main thread
 * it dlopens FP_MODULE (built with frame pointers) and allocates through it, then dlopens
 * NOFP_MODULE (the same source built without them) and allocates through it, dlcloses that and
 * dlopens it again, and allocates through it once more. Each allocation is run() -> the module's
 * dlalloc_make(SIZE) -> malloc, of sizes 101, 202 and 303 in that order. After "end" it prints
 *
 *   fn run ADDR            run's address (aligned to 256 bytes, shorter than that)
 *   make SIZE ADDR         dlalloc_make's address in the module that made the block of SIZE
 *
 * Usage: rec_dlreload FP_MODULE NOFP_MODULE
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <heapman.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "prog_util.h"

typedef void* (*MakeFn)(size_t);

HMT_FN void* run(MakeFn make, size_t n) {
  void* p = make(n);
  hmt_escape(p); /* work after the call: no tail call */
  return p;
}

static uintptr_t makers[3];

/* dlopens `path`, allocates `size` through it and frees it; keeps the module open if `keep`. */
static int allocateThrough(const char* path, size_t size, int slot, void** keep) {
  void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "rec_dlreload: %s\n", dlerror());
    return 1;
  }
  MakeFn make;
  *(void**)&make = dlsym(h, "dlalloc_make");
  if (!make) return 1;
  makers[slot] = (uintptr_t)make;
  free(run(make, size));
  if (keep)
    *keep = h;
  else if (dlclose(h) != 0)
    return 1;
  return 0;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: rec_dlreload FP_MODULE NOFP_MODULE\n");
    return 2;
  }
  void* fp = NULL;
  heapman_event("begin");
  if (allocateThrough(argv[1], 101, 0, &fp) || allocateThrough(argv[2], 202, 1, NULL) ||
      allocateThrough(argv[2], 303, 2, NULL))
    return 1;
  heapman_event("end");
  dlclose(fp);
  printf("fn run 0x%" PRIxPTR "\n", (uintptr_t)&run);
  for (int i = 0; i < 3; ++i) printf("make %d 0x%" PRIxPTR "\n", 101 * (i + 1), makers[i]);
  return 0;
}
