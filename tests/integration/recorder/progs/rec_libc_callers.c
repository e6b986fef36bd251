/* Allocations made inside libc on behalf of known functions: libc (Debian's is built without
 * frame pointers) calls malloc from strdup, from fopen and the first read of a stdio stream, from
 * getpwuid, and qsort calls back into code that allocates. Each phase NAME is bracketed with
 * heapman_event("NAME_begin") / heapman_event("NAME_end"); the functions are aligned to 256 bytes
 * and much shorter, so a return address inside function F lies in [F, F + 256). After the last
 * phase it prints the functions' runtime addresses:
 *
 *   fn NAME ADDR          for dup_name, open_file, read_file, get_user, compare_alloc,
 *                         sort_items, run
 *   sorted N              the comparisons qsort made (each allocated 24 bytes)
 */
#include <heapman.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "prog_util.h"

enum { kItems = 16, kMaxCompares = 256 };

static const char* path;
static char* name;
static FILE* file;
static int items[kItems];
static void* compareBlocks[kMaxCompares];
static volatile int compares;

HMT_FN void dup_name(void) {
  name = strdup("a name strdup copies");
  hmt_escape(name);
}

HMT_FN void open_file(void) {
  file = fopen(path, "r");
  hmt_escape(file);
}

HMT_FN void read_file(void) {
  if (file) fgetc(file); /* the first read allocates the stream's buffer */
  hmt_escape(file);
}

HMT_FN void get_user(void) {
  struct passwd* pw = getpwuid(getuid());
  hmt_escape(pw);
}

HMT_FN int compare_alloc(const void* a, const void* b) {
  int n = compares;
  if (n < kMaxCompares) {
    compareBlocks[n] = malloc(24);
    hmt_escape(compareBlocks[n]);
    compares = n + 1;
  }
  int x = *(const int*)a, y = *(const int*)b;
  return (x > y) - (x < y);
}

HMT_FN void sort_items(void) {
  qsort(items, kItems, sizeof items[0], compare_alloc);
  hmt_escape(items);
}

/* Phase i runs between events begins[i] and ends[i]; a loop keeps run() short. */
static const char* const begins[] = {"strdup_begin", "fopen_begin", "fread_begin",
                                     "getpwuid_begin", "qsort_begin"};
static const char* const ends[] = {"strdup_end", "fopen_end", "fread_end", "getpwuid_end",
                                   "qsort_end"};
static void (*const phases[])(void) = {dup_name, open_file, read_file, get_user, sort_items};

HMT_FN void run(void) {
  for (unsigned i = 0; i < sizeof phases / sizeof phases[0]; ++i) {
    heapman_event(begins[i]);
    phases[i]();
    heapman_event(ends[i]);
  }
}

int main(int argc, char** argv) {
  uint32_t state = 12345;
  for (int i = 0; i < kItems; ++i) items[i] = (int)(hmt_next(&state) % 1000);
  path = argc > 1 ? argv[1] : argv[0];
  run();
  if (!file) {
    perror("fopen");
    return 1;
  }
  printf("fn dup_name 0x%" PRIxPTR "\n", (uintptr_t)&dup_name);
  printf("fn open_file 0x%" PRIxPTR "\n", (uintptr_t)&open_file);
  printf("fn read_file 0x%" PRIxPTR "\n", (uintptr_t)&read_file);
  printf("fn get_user 0x%" PRIxPTR "\n", (uintptr_t)&get_user);
  printf("fn compare_alloc 0x%" PRIxPTR "\n", (uintptr_t)&compare_alloc);
  printf("fn sort_items 0x%" PRIxPTR "\n", (uintptr_t)&sort_items);
  printf("fn run 0x%" PRIxPTR "\n", (uintptr_t)&run);
  printf("sorted %d\n", compares);
  for (int i = 0; i < compares; ++i) free(compareBlocks[i]);
  fclose(file);
  free(name);
  return 0;
}
