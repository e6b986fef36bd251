// The largest single operator-new request between allocTrackStart() and allocTrackStop(): what
// a hostile log makes the reader (and Cap'n Proto's kj, which allocates through operator new)
// ask for.
#pragma once

#include <cstddef>

namespace hmtest {
void allocTrackStart();
void allocTrackStop();
size_t allocTrackLargest();

struct AllocTrack {
  AllocTrack() { allocTrackStart(); }
  ~AllocTrack() { allocTrackStop(); }
  size_t largest() const { return allocTrackLargest(); }
};
}  // namespace hmtest
