/* A program whose first heap call is dlopen (no stdio or malloc before it): the recorder's
 * first look-ups happen inside it. Prints "ok" and the address of cos from the module.
 *
 * Usage: rec_dlopen_first
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>

int main(void) {
  void* h = dlopen("libm.so.6", RTLD_NOW);
  if (!h) return 1;
  void* cosine = dlsym(h, "cos");
  if (!cosine) return 1;
  printf("ok\n");
  return dlclose(h) == 0 ? 0 : 1;
}
