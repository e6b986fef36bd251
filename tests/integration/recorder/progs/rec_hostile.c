/* A program that does to its file descriptors, signals and threads what real programs do, for
 * the recorder's "never change the program" tests. Each mode allocates COUNT 64-byte blocks
 * between heapman_event("begin") and heapman_event("end") (kept, never freed) around what it
 * tests, then prints its manifest.
 *
 * Usage: rec_hostile MODE COUNT [ARG]
 *   dup2 FILE        opens FILE (append), dup2s it onto 3..7 and writes "fdN\n" through each,
 *                    closes them, then allocates; prints "ok"
 *   closerange       close_range(3, ~0U, 0) first, then allocates; prints "ok"
 *   closefrom        closefrom(3) first, then allocates; prints "ok"
 *   closeloop        close(fd) for fd 3..65535 first (a daemon's loop), then allocates; "ok"
 *   rawcloseloop     the same through the close system call itself (no libc, no hook)
 *   rawclose FILE    the close_range system call over 3..~0U (no hook), then opens FILE and puts
 *                    it on every number 3..1023 with the dup3 system call, so that the log's old
 *                    number names FILE; allocates, writes "mine\n" to FILE; prints "ok"
 *   raise SIG        allocates, then kill(getpid(), SIG) (the default action ends it)
 *   threads-now      allocates, then prints "threads N", its thread count (/proc/self/status)
 *   unshare MS       allocates, churns 32-byte blocks for MS ms, prints "threads N", calls
 *                    unshare(CLONE_NEWUSER) and prints "unshare 0" (or the errno), then
 *                    "threads N" again, and allocates COUNT blocks more
 *   wait FILE        allocates, creates FILE, then waits to be killed (at most 60 s)
 *   overflow         allocates, then recurses until the stack overflows (SIGSEGV)
 *   handler          installs its own SIGTERM handler (SA_SIGINFO, SIGUSR1 in its mask),
 *                    allocates, raises SIGTERM, then checks what sigaction reports; prints
 *                    "handled SIG MASKED" and the two sigaction views, exits 0
 *   threads N        starts N threads that never allocate, joins them, then allocates; prints
 *                    "tid T" per thread
 *   forkstorm N      4 threads each fork N children at once, each child allocates COUNT blocks
 *                    between its own begin and end and exits; prints "child PID" per child
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <heapman.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "prog_util.h"

static void allocate(long count) {
  heapman_event("begin");
  for (long i = 0; i < count; ++i) hmt_escape(malloc(64));
}

static void say(const char* text) { (void)!write(1, text, strlen(text)); }

/* The "Threads:" line of /proc/self/status, read without the heap. */
static long threadCount(void) {
  char buf[4096];
  int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return -1;
  buf[n] = 0;
  const char* at = strstr(buf, "\nThreads:");
  return at ? strtol(at + 9, NULL, 10) : -1;
}

static void sayNumber(const char* what, long value) {
  char line[64];
  snprintf(line, sizeof line, "%s %ld\n", what, value);
  say(line);
}

static volatile sig_atomic_t g_handled, g_masked;
static void onTerm(int sig, siginfo_t* info, void* ctx) {
  (void)info;
  (void)ctx;
  sigset_t now;
  sigprocmask(SIG_BLOCK, NULL, &now);
  g_handled = sig;
  g_masked = sigismember(&now, SIGUSR1);
}

/* Deeper until the stack runs out (the bound is never reached: it only tells the compiler the
 * recursion ends). */
static volatile long g_limit = 1L << 40;
static int recurse(long depth) {
  volatile char pad[512];
  pad[0] = (char)depth;
  if (depth >= g_limit) return pad[0];
  return recurse(depth + 1) + pad[0];
}

#define MAX_THREADS 16
static pid_t g_tids[MAX_THREADS];
static void* idle(void* arg) {
  long k = (long)(intptr_t)arg;
  g_tids[k] = (pid_t)syscall(SYS_gettid);
  volatile unsigned spin = 0;
  for (unsigned i = 0; i < 1000000; ++i) spin += i;
  return NULL;
}

#define STORM_THREADS 4
#define MAX_STORM 64
static long g_stormChildren, g_stormCount;
static pid_t g_children[STORM_THREADS][MAX_STORM];
static void* storm(void* arg) {
  long k = (long)(intptr_t)arg;
  for (long i = 0; i < g_stormChildren; ++i) {
    pid_t pid = fork();
    if (pid == 0) {
      allocate(g_stormCount);
      heapman_event("end");
      exit(0);
    }
    g_children[k][i] = pid;
  }
  return NULL;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: rec_hostile MODE COUNT [ARG]\n");
    return 2;
  }
  const char* mode = argv[1];
  long count = strtol(argv[2], NULL, 10);
  const char* arg = argc > 3 ? argv[3] : "";
  if (strcmp(mode, "dup2") == 0) {
    int fd = open(arg, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd < 0) return 1;
    for (int k = 3; k <= 7; ++k) {
      if (k != fd && dup2(fd, k) != k) return 1;
      char line[8];
      snprintf(line, sizeof line, "fd%d\n", k);
      if (write(k, line, strlen(line)) != (ssize_t)strlen(line)) return 1;
    }
    for (int k = 3; k <= 7; ++k) close(k);
    if (fd > 7) close(fd);
  } else if (strcmp(mode, "closerange") == 0) {
    if (close_range(3, ~0U, 0) != 0) return 1;
  } else if (strcmp(mode, "closefrom") == 0) {
    closefrom(3);
  } else if (strcmp(mode, "closeloop") == 0) {
    for (int fd = 3; fd < 65536; ++fd) close(fd);
  } else if (strcmp(mode, "threads-now") == 0) {
    allocate(count);
    heapman_event("end");
    sayNumber("threads", threadCount());
    return 0;
  } else if (strcmp(mode, "unshare") == 0) {
    allocate(count);
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    long ms = strtol(arg, NULL, 10);
    do {
      void* p = malloc(32);
      hmt_escape(p);
      free(p);
      clock_gettime(CLOCK_MONOTONIC, &t);
    } while ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 < ms);
    long before = threadCount();
    int rc = unshare(CLONE_NEWUSER);
    int err = errno;
    long after = threadCount();
    for (long i = 0; i < count; ++i) hmt_escape(malloc(64));
    heapman_event("end");
    sayNumber("threads", before);
    sayNumber("unshare", rc == 0 ? 0 : err);
    sayNumber("threads", after);
    return 0;
  } else if (strcmp(mode, "rawcloseloop") == 0) {
    for (int fd = 3; fd < 65536; ++fd) syscall(SYS_close, fd);
  } else if (strcmp(mode, "rawclose") == 0) {
    if (syscall(SYS_close_range, 3U, ~0U, 0) != 0) return 1;
    int fd = open(arg, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return 1;
    for (int k = 3; k < 1024; ++k)
      if (k != fd && syscall(SYS_dup3, fd, k, 0) != k) return 1;
    allocate(count);
    if (write(fd, "mine\n", 5) != 5) return 1;
    heapman_event("end");
    printf("ok\n");
    return 0;
  } else if (strcmp(mode, "raise") == 0) {
    int sig = atoi(arg);
    allocate(count);
    kill(getpid(), sig);
    for (;;) pause();
  } else if (strcmp(mode, "wait") == 0) {
    allocate(count);
    int fd = open(arg, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return 1;
    close(fd);
    sleep(60);
    return 3;
  } else if (strcmp(mode, "overflow") == 0) {
    allocate(count);
    return recurse(0);
  } else if (strcmp(mode, "handler") == 0) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = onTerm;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, SIGUSR1);
    if (sigaction(SIGTERM, &sa, NULL) != 0) return 1;
    allocate(count);
    raise(SIGTERM);
    heapman_event("end");
    struct sigaction now;
    sigaction(SIGTERM, NULL, &now);
    int ours = (now.sa_flags & SA_SIGINFO) && now.sa_sigaction == onTerm;
    struct sigaction dfl, back;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigaction(SIGTERM, &dfl, NULL);
    sigaction(SIGTERM, NULL, &back);
    printf("handled %d %d\nview %s %s\n", (int)g_handled, (int)g_masked, ours ? "handler" : "other",
           back.sa_handler == SIG_DFL ? "default" : "other");
    return 0;
  } else if (strcmp(mode, "threads") == 0) {
    long n = strtol(arg, NULL, 10);
    if (n < 1 || n > MAX_THREADS) return 2;
    pthread_t t[MAX_THREADS];
    for (long k = 0; k < n; ++k)
      if (pthread_create(&t[k], NULL, idle, (void*)(intptr_t)k) != 0) return 1;
    for (long k = 0; k < n; ++k) pthread_join(t[k], NULL);
    allocate(count);
    heapman_event("end");
    for (long k = 0; k < n; ++k) printf("tid %d\n", (int)g_tids[k]);
    return 0;
  } else if (strcmp(mode, "forkstorm") == 0) {
    g_stormChildren = strtol(arg, NULL, 10);
    g_stormCount = count;
    if (g_stormChildren < 1 || g_stormChildren > MAX_STORM) return 2;
    pthread_t t[STORM_THREADS];
    for (long k = 0; k < STORM_THREADS; ++k)
      if (pthread_create(&t[k], NULL, storm, (void*)(intptr_t)k) != 0) return 1;
    for (long k = 0; k < STORM_THREADS; ++k) pthread_join(t[k], NULL);
    int failed = 0;
    for (long k = 0; k < STORM_THREADS; ++k)
      for (long i = 0; i < g_stormChildren; ++i) {
        int status = 0;
        if (waitpid(g_children[k][i], &status, 0) != g_children[k][i] || !WIFEXITED(status) ||
            WEXITSTATUS(status) != 0)
          failed = 1;
      }
    for (long k = 0; k < STORM_THREADS; ++k)
      for (long i = 0; i < g_stormChildren; ++i) printf("child %d\n", (int)g_children[k][i]);
    return failed;
  } else {
    fprintf(stderr, "rec_hostile: unknown mode %s\n", mode);
    return 2;
  }
  allocate(count);
  heapman_event("end");
  say("ok\n");
  return 0;
}
