/* exec: "rec_exec parent" makes 5 malloc/free pairs of 777 bytes between "begin" and "end" on
 * the main thread, then execs itself as "rec_exec child". The child allocates, calls heapman.h
 * (which must be a no-op when the recorder is not loaded), and reports whether the recorder
 * came along:
 *
 *   preload-mapped yes|no      whether a libheapman_preload module is in /proc/self/maps
 *   ld-preload [VALUE]         LD_PRELOAD as the exec'd program sees it ("(unset)" if unset)
 */
#define _GNU_SOURCE
#include <heapman.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "prog_util.h"

static int child(void) {
  int mapped = 0;
  FILE* maps = fopen("/proc/self/maps", "r");
  if (!maps) return 1;
  char line[4096];
  while (fgets(line, sizeof line, maps))
    if (strstr(line, "libheapman_preload")) mapped = 1;
  fclose(maps);
  heapman_event("child");
  void* p = malloc(4242);
  hmt_escape(p);
  free(p);
  const char* pre = getenv("LD_PRELOAD");
  printf("preload-mapped %s\nld-preload [%s]\n", mapped ? "yes" : "no", pre ? pre : "(unset)");
  return 0;
}

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "child") == 0) return child();
  if (argc < 2 || strcmp(argv[1], "parent") != 0) {
    fprintf(stderr, "usage: rec_exec parent\n");
    return 2;
  }
  heapman_event("begin");
  for (int i = 0; i < 5; ++i) {
    void* p = malloc(777);
    hmt_escape(p);
    free(p);
  }
  heapman_event("end");
  fflush(stdout);
  char* args[] = {argv[0], "child", NULL};
  execv("/proc/self/exe", args);
  perror("execv");
  return 1;
}
