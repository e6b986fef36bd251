#!/usr/bin/env bash
# Heap-map benchmark: pictures per second at 1024x1024 over 1 M live objects (drawing alone, and
# with the replay between pictures), one picture from the live set, and ffmpeg's encoding apart
# (its own CPU time, from wait4). The drawing and the replay run on one core (taskset, one replay
# thread); ffmpeg, a child process, may use the other. Prints the machine's load first: on a
# shared machine, wall times include what other processes take; the CPU figures do not.
#
#   bench/run_map_bench.sh BUILD_DIR [OBJECTS] [PICTURES]
set -euo pipefail
build=${1:?usage: run_map_bench.sh BUILD_DIR [OBJECTS] [PICTURES]}
objects=${2:-1000000}
pictures=${3:-150}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
pin=()
if command -v taskset >/dev/null; then pin=(taskset -c 0); fi
for round in 1 2 3; do
  echo "round $round"
  HEAPMAN_REPLAY_THREADS=1 "${pin[@]}" "$build/bench/map_bench" "$tmp" "$objects" "$pictures"
done
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
