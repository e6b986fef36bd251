// The steps of growingContainers (suspects.cpp) that have files of their own: the holders'
// series over the dumped points (holders.cpp), a suspect's root path (root_path.cpp) and its
// sentence (sentence.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "heapman/graph/dominators.h"
#include "heapman/graph/heap_graph.h"
#include "heapman/leaks/leaks.h"

namespace heapman::leaks {

// Objects present at the first dumped point, kept while they are present (same address, same
// birth) at every later one: columns, in address order.
struct Persistent {
  std::vector<uint64_t> address, birth;
  std::vector<uint32_t> node;  // at the current point; graph::kNoNode once gone
  std::vector<uint64_t> retained;  // [i * k + j]
  std::vector<uint64_t> degree;
};

// A pointer-holding word of a static root range, keyed by its address.
struct Slot {
  std::string label;  // "static data of prog", "Mono statics"
  std::string symbol;  // the static variable ("g_history", "g_registry+0x8"), or ""
  std::string module;  // the root's label ("prog data")
  uint64_t rootAddress = 0, offset = 0;
  std::vector<uint64_t> retained;  // of the object it points to, at each point (0: none)
  uint32_t node = graph::kNoNode;  // its target at the last point
  bool stack = false;              // a thread's stack as a whole (label "thread 2 (ai) stack")
  bool range = false;              // a root range (its group of one label) as a whole
  log::RootSource source = log::RootSource::kStaticData;  // a range's
  size_t seen = 0;                 // a stack: the points it was found at, in a row
};

// The holders over the dumped points, and the last point's graph as the search below them
// sees it.
struct HolderSeries {
  Persistent per;           // persistent objects, with their retained sizes and degrees
  std::vector<Slot> slots;  // static words, root ranges as a whole, the thread stacks
  graph::DominatorTree dom;        // the last point's, without transient references
  std::vector<uint32_t> leader;    // the last point's root groups (steadyDominators)
  std::vector<uint8_t> strong;     // its strong roots (the root paths start there first)
  uint32_t stacks = graph::kNoNode;  // the leader of its thread stacks
  std::vector<uint64_t> birth;     // per node at the last point (0: untracked)
};

inline bool stackRoot(log::RootSource s) {
  return s == log::RootSource::kThreadStack || s == log::RootSource::kMonoStack;
}

// Walks the graphs of the dumped points (at least 2) in order; leaves the session at the last.
HolderSeries holderSeries(graph::GraphSession& s, replay::Attribution& a,
                          const std::vector<const LeakPoint*>& dumped);

// The suspect's root path (sp.path, sp.stacksToo, sp.picture) at `limit`, the last dumped
// point, whose graph the session holds; the stacks' holder named by thread and frame.
void chooseRootPath(Suspect& sp, graph::GraphSession& s, replay::Attribution& a, uint64_t limit,
                    const HolderSeries& hs, size_t pathNodes);

// "static Game.Program.ScoreChanged holds ... which gains 1 entry per level_end (53 KiB); ...":
// `per` names a repetition (the event, or "collection").
std::string suspectSentence(const Suspect& sp, const std::string& per);

}  // namespace heapman::leaks
