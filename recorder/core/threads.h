// A recording thread's registration (threads.cpp), as the rest of core sees it.
#pragma once

#include <cstdint>

#include "recorder.h"

namespace heapman::rec {

// The top of the calling thread's stack as it registered (0: unknown): a stack walk's memo is
// replayed only from below it (stacks.cpp).
extern __thread uintptr_t t_stackHigh HEAPMAN_TLS;

// pthread key destructor (State::threadKey): the thread is exiting; `ring` is its ring.
void threadExit(void* ring);

// In a fork child (its only thread): the parent's registration of this thread is forgotten, so
// that its next record registers it again, with a ring of the child's own.
void forgetThreadRing();

}  // namespace heapman::rec
