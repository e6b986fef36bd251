/* Ground truth for the heap graph: known structures on the Boehm collector, one collection, then
 * "NAME ADDRESS" per object (printed after the collection, so that no copy of an address is
 * left where the collector scans because of the printing).
 *   list0..list4   a linked list (next, value), held by the static g_list
 *   tree0..tree6   a binary tree (left, right, value), tree0 held by the static g_tree
 *   cycle0..2      cycle0 -> cycle1 -> cycle2 -> cycle0, held by the static g_cycle
 *   static_only    held by the static g_static_only only
 *   stack_only     held by a local of a second thread only (the thread waits during the GC)
 *   added_root     held by word 1 of a malloc'd range registered with GC_add_roots only
 *   interior       held by the static g_interior, which points 24 bytes into it
 *   blob           atomic, held by g_blob, full of the addresses above: must make no edge
 * and "gc N": the collection's number. */
#define GC_THREADS
#include <gc/gc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct node {
  struct node* next;
  long value;
};
struct tree {
  struct tree* left;
  struct tree* right;
  long value;
};

static struct node* g_list;
static struct tree* g_tree;
static void** g_cycle;
static void* g_static_only;
static char* g_interior;
static void** g_blob;
static void** g_added;  /* malloc'd, registered with GC_add_roots */

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cond = PTHREAD_COND_INITIALIZER;
static int g_state;  /* 1: the thread holds its object; 2: main has collected */

static void wait_for(int state) {
  pthread_mutex_lock(&g_lock);
  while (g_state < state) pthread_cond_wait(&g_cond, &g_lock);
  pthread_mutex_unlock(&g_lock);
}
static void set_state(int state) {
  pthread_mutex_lock(&g_lock);
  g_state = state;
  pthread_cond_broadcast(&g_cond);
  pthread_mutex_unlock(&g_lock);
}

static void* holder(void* arg) {
  (void)arg;
  void* volatile mine = GC_malloc(48);
  memset(mine, 0, 48);
  set_state(1);
  wait_for(2);
  printf("stack_only 0x%lx\n", (unsigned long)mine);
  return NULL;
}

static struct tree* make_tree(int depth, long* counter) {
  struct tree* t = GC_malloc(sizeof *t);
  t->value = (*counter)++;
  if (depth > 1) {
    t->left = make_tree(depth - 1, counter);
    t->right = make_tree(depth - 1, counter);
  }
  return t;
}

/* The objects are made here, so that no copy of their addresses stays in main's frame. */
static __attribute__((noinline)) void build(void) {
  for (int i = 4; i >= 0; --i) {
    struct node* n = GC_malloc(sizeof *n);
    n->next = g_list;
    n->value = i;
    g_list = n;
  }
  long counter = 0;
  g_tree = make_tree(3, &counter);
  void** c0 = GC_malloc(2 * sizeof(void*));
  void** c1 = GC_malloc(2 * sizeof(void*));
  void** c2 = GC_malloc(2 * sizeof(void*));
  c0[0] = c1, c1[0] = c2, c2[0] = c0;
  g_cycle = c0;
  g_static_only = GC_malloc(32);
  g_added = malloc(4 * sizeof(void*));
  memset(g_added, 0, 4 * sizeof(void*));
  GC_add_roots(g_added, g_added + 4);
  g_added[1] = GC_malloc(40);
  g_interior = (char*)GC_malloc(64) + 24;
  g_blob = GC_malloc_atomic(32 * sizeof(void*));
  void* addresses[] = {g_list, g_list->next, g_tree, g_tree->left, c0, c1, c2, g_static_only,
                       g_added[1], g_interior - 24, g_interior};
  for (int i = 0; i < 32; ++i) g_blob[i] = addresses[i % (sizeof addresses / sizeof *addresses)];
}

/* Overwrites the stack below main's frame: stale copies of the addresses build() handled. */
static __attribute__((noinline)) void scrub(void) {
  volatile char junk[16384];
  memset((char*)junk, 0, sizeof junk);
}

static void print_tree(struct tree* t, int* i) {
  printf("tree%d 0x%lx\n", (*i)++, (unsigned long)t);
  if (t->left) print_tree(t->left, i);
  if (t->right) print_tree(t->right, i);
}

int main(void) {
  GC_INIT();
  pthread_t th;
  pthread_create(&th, NULL, holder, NULL);
  wait_for(1);
  build();
  scrub();
  GC_gcollect();
  printf("gc %lu\n", (unsigned long)GC_get_gc_no());
  int i = 0;
  for (struct node* n = g_list; n; n = n->next) printf("list%d 0x%lx\n", i++, (unsigned long)n);
  i = 0;
  print_tree(g_tree, &i);
  printf("cycle0 0x%lx\ncycle1 0x%lx\ncycle2 0x%lx\n", (unsigned long)g_cycle,
         (unsigned long)g_cycle[0], (unsigned long)((void**)g_cycle[0])[0]);
  printf("static_only 0x%lx\n", (unsigned long)g_static_only);
  printf("added_root 0x%lx\n", (unsigned long)g_added[1]);
  printf("interior 0x%lx\n", (unsigned long)(g_interior - 24));
  printf("blob 0x%lx\n", (unsigned long)g_blob);
  fflush(stdout);
  set_state(2);
  pthread_join(th, NULL);
  return 0;
}
