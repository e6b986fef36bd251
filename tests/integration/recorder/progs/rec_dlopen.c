/* dlopen/dlclose of a module that allocates: between "begin" and "end" on the main thread it
 * dlopens MODULE, calls its dlalloc_make(777) (a malloc inside the module), frees the block and
 * dlcloses the module. After "end" it prints
 *
 *   module BASE PATH       the module's load base (dladdr's dli_fbase) and path
 *   alloc ADDR             the block dlalloc_make returned
 *
 * Usage: rec_dlopen MODULE
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

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: rec_dlopen MODULE\n");
    return 2;
  }
  heapman_event("begin");
  void* h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "rec_dlopen: %s\n", dlerror());
    return 1;
  }
  MakeFn make;
  *(void**)&make = dlsym(h, "dlalloc_make");
  if (!make) return 1;
  Dl_info info;
  if (!dladdr(*(void**)&make, &info)) return 1;
  uintptr_t base = (uintptr_t)info.dli_fbase;
  void* p = make(777);
  volatile uintptr_t addr = (uintptr_t)p; /* volatile: GCC's -Wuse-after-free sees no use */
  free(p);
  if (dlclose(h) != 0) return 1;
  heapman_event("end");
  printf("module 0x%" PRIxPTR " %s\nalloc 0x%" PRIxPTR "\n", base, argv[1], addr);
  return 0;
}
