/* Starts programs every way a C program can, for the --follow-exec tests: posix_spawn, vfork +
 * execv, fork + execv, system() and popen(), each running ECHO with one word. Between
 * heapman_event("begin") and ("end") it allocates COUNT 64-byte blocks (kept). After "end" it
 * prints "spawn PID", "vfork PID", "fork PID" for the children whose pids it knows, and the
 * children's output comes before.
 *
 * Usage: rec_spawn ECHO COUNT
 */
#define _GNU_SOURCE
#include <heapman.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "prog_util.h"

extern char** environ;

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: rec_spawn ECHO COUNT\n");
    return 2;
  }
  const char* echo = argv[1];
  long count = strtol(argv[2], NULL, 10);
  heapman_event("begin");
  for (long i = 0; i < count / 2; ++i) hmt_escape(malloc(64));
  int status;
  pid_t spawned;
  char* spawnArgs[] = {(char*)echo, (char*)"spawned", NULL};
  if (posix_spawn(&spawned, echo, NULL, NULL, spawnArgs, environ) != 0) return 1;
  waitpid(spawned, &status, 0);
  pid_t vforked = vfork();
  if (vforked == 0) {
    char* a[] = {(char*)echo, (char*)"vforked", NULL};
    execv(echo, a);
    _exit(127);
  }
  waitpid(vforked, &status, 0);
  fflush(stdout);
  pid_t forked = fork();
  if (forked == 0) {
    char* a[] = {(char*)echo, (char*)"forked", NULL};
    execv(echo, a);
    _exit(127);
  }
  waitpid(forked, &status, 0);
  char command[4096];
  snprintf(command, sizeof command, "%s system", echo);
  if (system(command) != 0) return 1;
  snprintf(command, sizeof command, "%s popen", echo);
  FILE* p = popen(command, "r");
  if (!p) return 1;
  char line[64];
  while (fgets(line, sizeof line, p)) fputs(line, stdout);
  pclose(p);
  for (long i = count / 2; i < count; ++i) hmt_escape(malloc(64));
  heapman_event("end");
  printf("spawn %d\nvfork %d\nfork %d\n", (int)spawned, (int)vforked, (int)forked);
  return 0;
}
