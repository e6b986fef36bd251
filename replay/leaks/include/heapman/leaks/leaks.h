// Leak suspects: what grows every time a program comes back to the same state, for `heapman leaks`.
//
// Points: each occurrence of a custom event (each `level_end`), or listed GCs. At an event the
// heap is taken after the first collection that ends after it and before the event's next
// occurrence (garbage of the level is gone then; a RAM dump recorded with `--ram-dumps
// event:NAME` is that collection's), else at the event itself.
//
//   1. Growth by site and by type (any log): live objects and bytes at each point from the
//      replay's live sets; a row grows (classify) when it ends above where it started, never
//      loses more in one step than it gains in an average one, did not stop for good (a last
//      third, at least 2 steps, that gains nothing) and rises: at every step with 2 steps, all
//      but one with 3, and from 4 on as a trend over the whole series (Mann-Kendall, Theil-Sen
//      slope), so that growth by uneven steps with flat ones between counts. Ranked by bytes
//      gained per repetition.
//   2. Growing containers (points with RAM dumps): the holders that exist at every dumped
//      point — objects with the same address and birth (Boehm never moves objects), and the
//      words of static roots, and the thread stacks as one holder (judged on the bytes they
//      keep that lived through a repetition) — whose retained size or out-degree grows by the
//      same rule. The
//      retained sizes come from a dominator tree without transient references (thread stacks,
//      the runtime's own static data), which would otherwise share a static's list at some
//      points and make its size dip. A holder whose growth is mostly (80%) that of a growing holder it dominates is
//      dropped in favour of that one.
//   3. Accumulation point: from the holder, down the dominator tree of the last point, to the
//      child that holds at least 80% of the bytes born since the first point, while there is
//      one; a chain of links of one type and site stops at its first link (a node with a
//      child of its own kind that holds new bytes). Its children born
//      since the first point are the entries (for a chain: the links). Where no child holds
//      80%, each child that is a container of its own (gains at half the steps or more, of a
//      kind no other such child is) is a suspect of its own: several lists under one World.
//   4. A sentence per suspect naming the holder, the container, the entries gained per
//      repetition, what an entry keeps alive and the site that allocates entries; the root path
//      to the container as a picture (export.h).
//
// Not suspects (reported as near misses with why): a holder that grows then stays flat for the
// last third of the points (a cache that plateaus), does not grow (a reused pool, a ring
// buffer), loses in one step more than an average step gains (a list grown then cleared), or
// whose entries are mostly freed before the log ends (growth freed at the end).
//
// Costs: per point a seek and one pass over the live set (step 1); per dumped point the graph
// and its dominator tree (graph_queries.h), one merge of its objects with the holders kept so
// far (address order), and a scan of the static roots' words; at the last point one pass over
// the dominator tree (children lists, preorder, bytes born since the first point) and one
// root-path search per suspect reported. Memory: per holder 16 bytes + 12 per point.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "heapman/graph/export.h"
#include "heapman/graph/graph_queries.h"
#include "heapman/graph/paths.h"
#include "heapman/replay/frames.h"
#include "heapman/replay/replay.h"

namespace heapman::leaks {

struct LeaksRequest {
  std::string atEach;          // event name; empty: see `gcs`, else the most repeated event
  std::vector<uint32_t> gcs;   // explicit GC numbers (with atEach empty)
  size_t minPoints = 3;
  size_t top = 10;             // rows and suspects kept (0: all)
  size_t pathNodes = 200;      // nodes in each suspect's picture
};

struct LeakPoint {
  std::string name;       // "level_end#2", "gc:14"
  uint64_t limit = 0;     // where the heap is taken
  uint64_t eventLimit = 0;  // just after the event itself (== limit for GC points): objects
                            // born from here on are new since this repetition
  uint32_t gc = 0;        // the collection it is taken after (0: none)
  bool dumped = false;    // that collection has a RAM dump
  uint64_t liveObjects = 0, liveBytes = 0;
};

// Whether a series grows at the points (step 1's and step 2's rule), and if not, why.
struct Trend {
  bool grows = false;
  size_t rises = 0, steps = 0;
  int64_t perStep = 0;   // (last - first) / steps
  double slope = 0;      // Theil-Sen: the median of the slopes between any two points
  std::string why;       // for a near miss: "flat", "grew 2 of 4 steps, then flat", ...
};
Trend classify(const std::vector<uint64_t>& series);

struct GrowthRow {
  std::string name, module, location;  // type rows: name only
  std::vector<uint64_t> objects, bytes;  // at each point
  Trend trend;  // of bytes
};

struct Suspect {
  // Who holds it: "static data of gc_leaks (+0x40)" / "Game.Corpus (object 0x...)".
  std::string holder;
  std::string holderKind;   // "static", "object", "stack" (the thread stacks), "root" (a root
                            // range as a whole: the GC handles, an intern table, the
                            // finalization queue)
  log::RootSource holderSource = log::RootSource::kStaticData;  // "root": the range's
  std::string holderType, holderSite;
  std::string holderFrame;  // "stack": the function whose frame holds the path's first word
  uint64_t holderAddress = 0;
  // The accumulation point: the object where the growth collects.
  std::string containerType, containerSite;
  uint64_t containerAddress = 0;
  bool chain = false;              // the container is the first link of a linked list
  std::vector<uint64_t> retained;  // the holder's retained bytes at each dumped point
  std::vector<uint64_t> degree;    // the container's out-degree at each dumped point (0: absent)
  uint64_t gainedBytes = 0;        // bytes born since the first point under the holder
  double bytesPerStep = 0, entriesPerStep = 0;
  uint64_t entries = 0;            // entries born since the first point
  std::string entryType, entrySite, entryLocation;
  // Per step between dumped points: the functions that allocated the entries born in it, with
  // counts ("Game.Level:.ctor x1"; "-" for none).
  std::vector<std::string> stepSites;
  uint64_t entryKeeps = 0;         // average bytes an entry keeps alive (itself included)
  std::string keptMain;            // the object an entry mostly keeps (its biggest dominated
                                   // child; through compiler-made closure classes), or "";
                                   // untyped: "(gc) from make_level"
  std::string keptType;            // the type an entry keeps most objects of, besides itself
  uint64_t keptCount = 0;          // objects of it per entry (rounded)
  uint64_t pathAddress = 0;        // where the path leads: the container, or when that is a
                                   // root range (or the stacks) its first entry
  std::vector<graph::PathStep> path;  // root first, container (or that entry) last: from the
                                      // root that will hold it longest (a static, a GC handle,
                                      // the finalization queue before a thread's stack)
  std::vector<std::string> stacksToo;  // other thread stacks with a path to it ("thread 0 (main)
                                       // stack"): they hold it too, for now
  graph::ExportGraph picture;
  std::string sentence;
};

struct NearMiss {
  std::string what;  // "site f (m)", "type T", "holder ..."
  std::string why;
};

struct LeaksResult {
  std::string event;               // the repeated event, or "" for GCs
  std::string chosenBecause;       // "--at-each", "the event that repeats most", ...
  std::vector<LeakPoint> points;
  std::vector<GrowthRow> sites, types;  // growing, by bytes per step, cut to top
  size_t dumpedPoints = 0;
  std::string graphNote;           // why steps 2-4 did not run, when they did not
  std::vector<Suspect> suspects;   // by bytes per step, cut to top
  std::vector<NearMiss> nearMisses;
  std::vector<std::string> warnings;
};

// Throws replay::ReplayError (exit 2) when the points cannot be chosen: an unknown event,
// fewer than minPoints of them, a GC the log does not have.
LeaksResult findLeaks(replay::Replay& r, replay::Attribution& a, const LeaksRequest& request);

// ---- parts, for tests and the bench ----------------------------------------------------------
std::vector<LeakPoint> leakPoints(const replay::Replay& r, graph::DumpStore& store,
                                  const LeaksRequest& request, std::string* event,
                                  std::string* because);
void growthBySite(replay::Replay& r, replay::Attribution& a, std::vector<LeakPoint>& points,
                  LeaksResult& out, size_t top);
void growingContainers(graph::GraphSession& s, replay::Attribution& a,
                       const std::vector<LeakPoint>& points, const LeaksRequest& request,
                       LeaksResult& out);

}  // namespace heapman::leaks
