#!/usr/bin/env bash
# Leak search benchmark: records bench/leaks_bench_heap (1 M live objects at the last of LEVELS
# level_end points, each followed by a dumped collection; the issue's bar: 8 points, 1 M objects,
# under 10 s CPU) and times `heapman leaks`'s steps on one core (taskset -c 0, one replay
# thread), best of ROUNDS by CPU time; then the whole verb.
#
#   bench/run_leaks_bench.sh BUILD_DIR [WORLD_OBJECTS] [ROUNDS] [LEVELS]
set -euo pipefail
build=${1:?usage: run_leaks_bench.sh BUILD_DIR [WORLD_OBJECTS] [ROUNDS] [LEVELS]}
world=${2:-920000}
rounds=${3:-3}
levels=${4:-8}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$build/recorder/heaprec" run --ram-dumps event:level_end -o "$tmp/heap.hml" -- \
  "$build/bench/leaks_bench_heap" "$world" "$levels" >/dev/null
ls -l "$tmp/heap.hml" | awk '{print "log bytes " $5}'
"$build/heapman/heapman" info "$tmp/heap.hml" >/dev/null 2>&1 || true  # builds the index
for i in $(seq "$rounds"); do
  HEAPMAN_REPLAY_THREADS=1 taskset -c 0 "$build/bench/leaks_bench" "$tmp/heap.hml" \
    "$(dirname "$0")/../replay/data/default_exclusions.txt"
done
echo "whole verb (one core):"
/usr/bin/time -f "%e s wall, %U s user, %S s sys, %M KiB peak" \
  env HEAPMAN_REPLAY_THREADS=1 taskset -c 0 "$build/heapman/heapman" leaks "$tmp/heap.hml" \
  --no-symbols --top 3 | grep '^suspect'
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
