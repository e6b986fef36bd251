/* Known output on stdout and stderr, then a chosen exit: the output test runs it with and
 * without heaprec and compares the bytes and the exit status.
 *
 * Usage: rec_output exit N ARGS...     prints, then exits with status N
 *        rec_output signal S ARGS...   prints, flushes, then raises signal S (default action)
 *
 * It prints its arguments (to see that they pass through unchanged), the environment variable
 * HEAPMAN_TEST_ECHO, 64 KiB of text, binary bytes (NUL, 0xff) on stdout, lines on stderr
 * through stdio and write(2), and allocates on the way so the recorder has work.
 */
#define _GNU_SOURCE
#include <heapman.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "prog_util.h"

int main(int argc, char** argv) {
  if (argc < 3 || (strcmp(argv[1], "exit") != 0 && strcmp(argv[1], "signal") != 0)) {
    fprintf(stderr, "usage: rec_output exit|signal N ARGS...\n");
    return 2;
  }
  int code = atoi(argv[2]);

  printf("out: hello\n");
  fprintf(stderr, "err: one\n");
  printf("argc %d\n", argc);
  for (int i = 0; i < argc; ++i) printf("arg %d [%s]\n", i, i == 0 ? "(program)" : argv[i]);
  const char* echo = getenv("HEAPMAN_TEST_ECHO");
  printf("echo [%s]\n", echo ? echo : "(unset)");

  heapman_event("output");
  char* text = malloc(65536 + 1);
  if (!text) return 1;
  for (int i = 0; i < 65536; ++i) text[i] = (char)(i % 64 == 63 ? '\n' : 'A' + i % 26);
  text[65536] = 0;
  fputs(text, stdout);
  free(text);
  heapman_frame();

  static const unsigned char binary[] = {0, 1, 2, 0xff, 0xfe, 0, '\n', 0x7f, 0x80};
  fwrite(binary, 1, sizeof binary, stdout);

  static const char direct[] = "err: two (write)\n";
  if (write(STDERR_FILENO, direct, sizeof direct - 1) < 0) return 1;
  fprintf(stderr, "err: three, with no program name in it\n");
  printf("out: bye\n");
  fflush(stdout);

  if (strcmp(argv[1], "signal") == 0) {
    signal(code, SIG_DFL);
    raise(code);
    return 99; /* not reached for a terminating signal */
  }
  return code;
}
