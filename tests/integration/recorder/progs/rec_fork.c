/* fork: the parent allocates before and after a fork, the child allocates and exits. Windows:
 * the parent's "begin".."end" (main thread) holds PARENT_BEFORE + PARENT_AFTER malloc/free pairs
 * of 100 + i bytes; the child's "child_begin".."child_end" holds CHILD pairs of 1000 + i bytes.
 * The child exits with exit(0) (atexit handlers run). The parent prints, after "end":
 *
 *   parent PID
 *   child PID
 *   pairs PARENT_PAIRS CHILD_PAIRS
 */
#define _GNU_SOURCE
#include <heapman.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "prog_util.h"

enum { kParentBefore = 10, kParentAfter = 30, kChild = 20 };

static void pairs(int n, size_t base) {
  for (int i = 0; i < n; ++i) {
    void* p = malloc(base + (size_t)i);
    if (!p) abort();
    hmt_escape(p);
    free(p);
  }
}

int main(void) {
  heapman_event("begin");
  pairs(kParentBefore, 100);
  pid_t child = fork();
  if (child < 0) {
    perror("fork");
    return 1;
  }
  if (child == 0) {
    heapman_event("child_begin");
    pairs(kChild, 1000);
    heapman_event("child_end");
    exit(0);
  }
  int status = 0;
  if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fprintf(stderr, "rec_fork: child failed (status %d)\n", status);
    return 1;
  }
  pairs(kParentAfter, 100);
  heapman_event("end");
  printf("parent %d\nchild %d\npairs %d %d\n", (int)getpid(), (int)child,
         kParentBefore + kParentAfter, kChild);
  return 0;
}
