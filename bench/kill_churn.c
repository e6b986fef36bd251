/* The SIGKILL benchmark's program: N threads allocate and free 16 blocks at a time until killed.
 * Usage: kill_churn N */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

static void* work(void* arg) {
  (void)arg;
  for (;;) {
    void* p[16];
    for (int i = 0; i < 16; i++) p[i] = malloc(32 + i * 8);
    for (int i = 0; i < 16; i++) free(p[i]);
  }
  return NULL;
}

int main(int argc, char** argv) {
  int n = argc > 1 ? atoi(argv[1]) : 4;
  for (int i = 0; i < n; i++) {
    pthread_t t;
    if (pthread_create(&t, NULL, work, NULL) != 0) return 1;
  }
  for (;;) pause();
}
