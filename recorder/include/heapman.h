/* heapman.h — mark game events for the HeapMan recorder, from C or C++.
 *
 *   heapman_event("level_start");          a named event; replay can seek to "level_start#2"
 *   heapman_event_data("spawn", &id, 4);   a named event with a payload (at most 16 KiB kept)
 *   heapman_frame();                       a frame mark (frames are numbered 1, 2, 3, ...)
 *
 * A program that includes this header works unchanged without the recorder: the recorder's
 * entry points are weak references that stay null unless `heaprec run` preloaded it, and the
 * inline functions below then do nothing. Safe from any thread, and from signal handlers never.
 */
#ifndef HEAPMAN_H
#define HEAPMAN_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Exported by the recorder module (libheapman_preload.so). Call the inline functions instead. */
void heapman_record_event(const char* name, const void* data, size_t len) __attribute__((weak));
void heapman_record_frame(void) __attribute__((weak));

static inline void heapman_event(const char* name) {
  if (heapman_record_event) heapman_record_event(name, 0, 0);
}
static inline void heapman_event_data(const char* name, const void* data, size_t len) {
  if (heapman_record_event) heapman_record_event(name, data, len);
}
static inline void heapman_frame(void) {
  if (heapman_record_frame) heapman_record_frame();
}

#ifdef __cplusplus
}
#endif

#endif /* HEAPMAN_H */
