#!/usr/bin/env bash
# Recorder overhead: the churn workload with real call depth 3-15 (churn_program), run
# plain, under heaprec (full stacks, depth 32) and under heaptrack, in one run. Wall time and peak
# RSS from /usr/bin/time; bytes per event from each tool's output file.
#
#   bench/run_recorder_bench.sh BUILD_DIR [EVENTS] [RUNS]
set -euo pipefail
build=${1:?usage: run_recorder_bench.sh BUILD_DIR [EVENTS] [RUNS]}
events=${2:-10000000}
runs=${3:-3}
bench="$build/bench/churn_program"
heaprec="$build/recorder/heaprec"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

measure() {  # label command...: prints "label seconds maxrss_kb"
  local label=$1
  shift
  /usr/bin/time -f "%e %M" -o "$tmp/time" "$@" >/dev/null 2>"$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
  echo "$label $(cat "$tmp/time")"
}

for run in $(seq "$runs"); do
  measure plain "$bench" "$events"
  measure heaprec "$heaprec" run -o "$tmp/rec.hml" -- "$bench" "$events"
  if command -v heaptrack >/dev/null; then
    rm -f "$tmp"/ht.*
    measure heaptrack heaptrack -o "$tmp/ht" "$bench" "$events"
  fi
done | tee "$tmp/results"

n=$(grep -o 'wrote .* (\([0-9]*\) events' "$tmp/err" 2>/dev/null | grep -o '[0-9]* events' | cut -d' ' -f1 || true)
rec_bytes=$(stat -c %s "$tmp/rec.hml")
ht_bytes=$(stat -c %s "$tmp"/ht.* 2>/dev/null || echo 0)
echo
awk -v rb="$rec_bytes" -v hb="$ht_bytes" -v ev="$events" '
  { t[$1] += $2; m[$1] = ($3 > m[$1] ? $3 : m[$1]); c[$1]++ }
  END {
    p = t["plain"] / c["plain"]
    printf "| tool | wall s (mean of %d) | slowdown | peak RSS MiB | bytes/event |\n", c["plain"]
    printf "| --- | --- | --- | --- | --- |\n"
    printf "| plain | %.2f | 1.0x | %.1f | — |\n", p, m["plain"] / 1024
    printf "| heaprec (depth 32) | %.2f | %.1fx | %.1f | %.2f |\n", t["heaprec"] / c["heaprec"], t["heaprec"] / c["heaprec"] / p, m["heaprec"] / 1024, rb / ev
    if (c["heaptrack"])
      printf "| heaptrack 1.4 | %.2f | %.1fx | %.1f | %.2f |\n", t["heaptrack"] / c["heaptrack"], t["heaptrack"] / c["heaptrack"] / p, m["heaptrack"] / 1024, hb / ev
  }' "$tmp/results"
