#!/usr/bin/env bash
# Resident memory of recording by thread count: bench/thread_memory's threads (1, 8, 40) each
# make PAIRS malloc/free pairs with LIVE blocks alive among them, then wait while the program
# reads its own VmRSS; run plain and under heaprec (stacks of depth 32), medians of RUNS. The
# rings, the recorder's per-thread memory, stay while their threads live (recorder/core/ring.h).
# PAIRS is a list: the default's first figure has every thread record ~40 MB flat out (the
# writer falls behind 40 threads on 2 cores), the second ~2.6 MB (a game's worker threads).
# HEAPMAN_STATS' ring line (doublings) from the last recorded run of each row. HEAPREC=path runs
# another build's launcher (an older recorder) on this build's program.
#
#   bench/run_thread_memory.sh BUILD_DIR ["PAIRS ..."] [LIVE] [RUNS]
set -euo pipefail
build=${1:?usage: run_thread_memory.sh BUILD_DIR [\"PAIRS ...\"] [LIVE] [RUNS]}
pairs_list=${2:-300000 20000}
live=${3:-100000}
runs=${4:-3}
prog="$build/bench/thread_memory"
heaprec=${HEAPREC:-$build/recorder/heaprec}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

echo "LIVE=$live blocks in all, medians of $runs; $heaprec; $(nproc) cores," \
  "load $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| pairs per thread | threads | plain RSS MiB | recorded RSS MiB | added MiB | added per thread MiB | ring doublings |"
echo "|---|---|---|---|---|---|---|"
for pairs in $pairs_list; do
for threads in 1 8 40; do
  : >"$tmp/plain"
  : >"$tmp/rec"
  for run in $(seq "$runs"); do
    "$prog" "$threads" "$pairs" "$live" | awk '{ print $2 }' >>"$tmp/plain"
    HEAPMAN_STATS=1 "$heaprec" run -o "$tmp/rec.hml" -- "$prog" "$threads" "$pairs" "$live" \
      2>"$tmp/err" | awk '{ print $2 }' >>"$tmp/rec"
  done
  doublings=$(grep -o '[0-9]* doublings' "$tmp/err" | cut -d' ' -f1 || true)
  p=$(median <"$tmp/plain")
  r=$(median <"$tmp/rec")
  awk -v n="$pairs" -v t="$threads" -v p="$p" -v r="$r" -v d="${doublings:--}" 'BEGIN {
    printf "| %d | %d | %.1f | %.1f | %.1f | %.2f | %s |\n", n, t, p / 1024, r / 1024,
      (r - p) / 1024, (r - p) / 1024 / t, d }'
done
done
